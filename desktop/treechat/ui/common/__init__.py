"""The shared ground of every view: theme colours and background tasks."""
