"""The chat list on the left: search, day groups, rename/delete, drop an export to import."""
