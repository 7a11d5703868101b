"""A chat written to a file (File → Export chat…: Markdown or JSON, this branch or every
branch, the attached files beside it) and every chat at once (Export all chats…). The
file dialogs open with `open()` and answer through their signal."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QWidget

from ...services.transfer.export_jobs import ChatExports
from ..common.folders import export_folder
from .ports import OpenChat, Spawner, StatusLine

EXPORT_FILTERS = {
    "Markdown, this branch (*.md)": ("md", "branch"),
    "Markdown, every branch (*.md)": ("md", "all"),
    "JSON, every branch (*.json)": ("json", "all"),
    "JSON, this branch (*.json)": ("json", "branch"),
}


def file_dialog(parent: QWidget, title: str, name: str, filters: list[str], *, save: bool
                ) -> QFileDialog:
    """A file dialog in the export folder: saving (a name offered) or opening one file."""
    dialog = QFileDialog(parent, title)
    dialog.setObjectName("ExportFileDialog")
    dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave if save
                         else QFileDialog.AcceptMode.AcceptOpen)
    dialog.setFileMode(QFileDialog.FileMode.AnyFile if save
                       else QFileDialog.FileMode.ExistingFile)
    dialog.setNameFilters(filters)
    dialog.setDirectory(str(export_folder()))
    if name:
        dialog.selectFile(name)
    return dialog


class ChatExport(QObject):
    exported = Signal(str)  # the file written

    def __init__(self, parent: QObject, exports: ChatExports, *, chat: OpenChat,
                 tasks: Spawner, status: StatusLine, window: QWidget) -> None:
        super().__init__(parent)
        self._exports = exports
        self._open = chat
        self._tasks = tasks
        self._status = status
        self._window = window
        self.file_dialog: QFileDialog | None = None  # the last one opened

    def _file_dialog(self, title: str, name: str, filters: list[str]) -> QFileDialog:
        self.file_dialog = file_dialog(self._window, title, name, filters, save=True)
        return self.file_dialog

    def export_chat(self) -> QFileDialog | None:
        view = self._open.current_view
        if view is None:
            return None
        sid, title = view.session.id, view.session.title
        dialog = self._file_dialog("Export chat", self._exports.filename(title, "md"),
                                   list(EXPORT_FILTERS))
        dialog.filterSelected.connect(lambda f: dialog.selectFile(
            self._exports.filename(title, EXPORT_FILTERS[f][0])))

        def chosen(path: str) -> None:
            fmt, scope = EXPORT_FILTERS.get(dialog.selectedNameFilter(), ("md", "branch"))
            self._tasks.spawn(self.write_chat(sid, path, fmt, scope), name="export-chat")

        dialog.fileSelected.connect(chosen)
        dialog.open()
        return dialog

    async def write_chat(self, session_id: str, path: str, fmt: str, scope: str) -> str:
        text = await self._exports.chat(session_id, fmt, "all" if scope == "all" else "branch")
        written = await self._exports.write(path, text)
        files = await self._exports.files_beside(written, [session_id],
                                                 all_branches=scope == "all") \
            if fmt == "md" else ()
        self._status(f"Exported to {written}" + (
            f", with {len(files)} attached file{'s' if len(files) != 1 else ''} in "
            f"“{files[0].parent.name}” beside it" if files else ""))
        self.exported.emit(str(written))
        return str(written)

    def export_all(self) -> QFileDialog:
        dialog = self._file_dialog("Export all chats", "treechat-chats.json",
                                   ["JSON (*.json)", "Markdown (*.md)"])

        def chosen(path: str) -> None:
            fmt = "md" if dialog.selectedNameFilter().startswith("Markdown") else "json"
            self._tasks.spawn(self.write_all(path, fmt), name="export-all")

        dialog.fileSelected.connect(chosen)
        dialog.open()
        return dialog

    async def write_all(self, path: str, fmt: str) -> str:
        text = await self._exports.all_chats(fmt)
        written = await self._exports.write(path, text)
        if fmt == "md":
            await self._exports.files_beside(written)
        self._status(f"Every chat exported to {written}")
        self.exported.emit(str(written))
        return str(written)
