"""The only package that imports PySide6/qasync: windows, views, dialogs, graph."""
