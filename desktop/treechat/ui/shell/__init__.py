"""The window around the features: main window, first-frame outline, event loop, single
instance, error banner."""
