"""One module per dialog: settings, import, context breakdown, merge."""
