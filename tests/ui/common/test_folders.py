"""Where the window offers to save: the person's documents, or their home when there is no
such folder, never the folder the process started in."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QStandardPaths

from treechat.ui.common.folders import export_folder


def test_saving_is_offered_in_documents_or_home(qapp: object) -> None:
    folder = export_folder()
    documents = QStandardPaths.writableLocation(
        QStandardPaths.StandardLocation.DocumentsLocation)
    assert folder.is_dir()
    assert folder in {Path(documents), Path.home()}
    assert folder != Path.cwd() or Path.cwd() in {Path(documents), Path.home()}
