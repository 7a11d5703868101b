"""Where the window offers to put what a person saves (an export, an artifact)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QStandardPaths


def export_folder() -> Path:
    """The person's documents (their home when there is no such folder), never the folder
    the process happened to start in."""
    documents = QStandardPaths.writableLocation(
        QStandardPaths.StandardLocation.DocumentsLocation)
    return Path(documents) if documents and Path(documents).is_dir() else Path.home()
