"""Accepts an export file (.json or .zip) dropped onto a widget and reports its path, so a
file dragged from the file manager onto the chat list starts an import."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Signal
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import QWidget

EXPORT_SUFFIXES = (".json", ".zip")


def export_path(event: QDropEvent) -> str | None:
    """The one local .json/.zip file the drag carries, if that is what it carries."""
    mime = event.mimeData()
    if mime is None or not mime.hasUrls():
        return None
    urls = mime.urls()
    if len(urls) != 1 or not urls[0].isLocalFile():
        return None
    path = urls[0].toLocalFile()
    return path if path.lower().endswith(EXPORT_SUFFIXES) else None


class ExportDropFilter(QObject):
    fileDropped = Signal(str)

    def install(self, widget: QWidget) -> None:
        widget.setAcceptDrops(True)
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind in (QEvent.Type.DragEnter, QEvent.Type.DragMove):
            assert isinstance(event, QDragEnterEvent | QDragMoveEvent)
            if export_path(event) is not None:
                event.acceptProposedAction()
                return True
        elif kind == QEvent.Type.Drop:
            assert isinstance(event, QDropEvent)
            path = export_path(event)
            if path is not None:
                event.acceptProposedAction()
                self.fileDropped.emit(path)
                return True
        return super().eventFilter(watched, event)
