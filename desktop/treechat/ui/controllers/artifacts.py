"""A reply's artifacts (the pages and programs Claude wrote, imported as titled cards): its
menu offers to save each one to a file, or to open it with the application the system uses
for its kind (a browser for a page)."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

from PySide6.QtCore import QUrl
from PySide6.QtGui import QAction, QDesktopServices
from PySide6.QtWidgets import QFileDialog, QMenu, QWidget

from ...core.artifacts import Artifact, artifacts_of
from ..common.folders import export_folder
from .wiring import ShownChat, StatusLine

log = logging.getLogger(__name__)


class ArtifactsController:
    """`reply_menu` is to be called with each reply's context menu as it opens."""

    def __init__(self, chat: ShownChat, *, window: QWidget, status: StatusLine) -> None:
        self._chat = chat
        self._window = window
        self._status = status
        self.save_dialog: QFileDialog | None = None
        self.opened: list[Path] = []  # files written to open an artifact, newest last

    def artifacts(self, key: str) -> tuple[Artifact, ...]:
        view = self._chat.current_view
        if view is None or key not in view.graph:
            return ()
        return artifacts_of(view.graph.get(key).metadata)

    def reply_menu(self, key: str, menu: object) -> None:
        found = self.artifacts(key)
        if not found or not isinstance(menu, QMenu):
            return
        menu.addSeparator()
        for artifact in found:
            title = artifact.title or artifact.file_name
            save = QAction(f"Save “{title}”…", menu)
            save.triggered.connect(lambda *_, a=artifact: self.save(a))
            show = QAction(f"Open “{title}”", menu)
            show.triggered.connect(lambda *_, a=artifact: self.open(a))
            menu.addAction(save)
            menu.addAction(show)

    def save(self, artifact: Artifact) -> QFileDialog:
        dialog = QFileDialog(self._window, "Save artifact",
                             str(export_folder() / artifact.file_name))
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dialog.fileSelected.connect(lambda path: self.write(artifact, Path(path)))
        self.save_dialog = dialog
        dialog.open()  # not exec(): no nested event loop under qasync
        return dialog

    def write(self, artifact: Artifact, path: Path) -> Path | None:
        try:
            path.write_text(artifact.content, encoding="utf-8")
        except OSError as exc:
            self._status(f"“{artifact.title}” was not saved: {exc}")
            return None
        self._status(f"Saved “{artifact.title or artifact.file_name}” to {path}")
        return path

    def open(self, artifact: Artifact) -> Path | None:
        """Written to a private temporary folder, then opened by the system."""
        folder = Path(tempfile.mkdtemp(prefix="treechat-artifact-"))
        path = self.write(artifact, folder / artifact.file_name)
        if path is None:
            return None
        self.opened.append(path)
        if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
            self._status(f"No application opens {path.suffix} files; it is in {path}")
        return path
