"""Presets: File → New chat from preset (a chat that starts with a preset's model and
instructions), and presets written to and read from a file to carry them elsewhere."""

from __future__ import annotations

import asyncio
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QMenu, QWidget

from ...core.chat_settings import SettingsError
from ...services.transfer.export_jobs import ChatExports
from ...services.turns.chat_service import ChatService
from ..composer.composer import Composer
from ..sessions.list import SessionList
from .chat_export import file_dialog
from .ports import ChatOpener, SessionRows, Spawner, StatusLine

PRESET_FILTER = "Treechat presets (*.json)"


class ChatPresets(QObject):
    exported = Signal(str)  # the file written
    presetsImported = Signal(int)

    def __init__(
        self,
        parent: QObject,
        *,
        chat_service: ChatService,
        exports: ChatExports,
        chat: ChatOpener,
        rows: SessionRows,
        tasks: Spawner,
        status: StatusLine,
        composer: Composer,
        session_list: SessionList,
        window: QWidget,
    ) -> None:
        super().__init__(parent)
        self._settings = chat_service.settings
        self._sessions = chat_service.sessions
        self._exports = exports
        self._open = chat
        self._rows = rows
        self._tasks = tasks
        self._status = status
        self._composer = composer
        self._list = session_list
        self._window = window
        self.file_dialog: QFileDialog | None = None  # the last one opened
        self.preset_menu = QMenu("New chat from preset", window)
        self.preset_menu.setObjectName("PresetMenu")
        self.preset_menu.aboutToShow.connect(
            lambda: self._tasks.spawn(self.fill_presets(), name="presets"))

    async def fill_presets(self) -> None:
        presets = await self._settings.presets()
        self.preset_menu.clear()
        for preset in presets:
            action = self.preset_menu.addAction(preset.name)
            action.setToolTip(f"{preset.model or 'default model'}: "
                              f"{preset.system_prompt[:120]}")
            action.triggered.connect(
                lambda *_, name=preset.name: self._tasks.spawn(self.new_chat_from(name),
                                                               name="new-from-preset"))
        if not presets:
            self.preset_menu.addAction("No presets").setEnabled(False)

    async def new_chat_from(self, name: str) -> str:
        session, _settings = await self._settings.new_chat_from_preset(
            name, self._sessions, title=name)
        await self._rows.reload()
        self._list.select(session.id)
        await self._open.load_session(session.id)
        self._composer.focus_input()
        return session.id

    def _file_dialog(self, title: str, name: str, *, save: bool) -> QFileDialog:
        self.file_dialog = file_dialog(self._window, title, name, [PRESET_FILTER], save=save)
        return self.file_dialog

    def export_presets(self) -> QFileDialog:
        dialog = self._file_dialog("Export presets", "treechat-presets.json", save=True)
        dialog.fileSelected.connect(lambda path: self._tasks.spawn(
            self._write_presets(path), name="export-presets"))
        dialog.open()
        return dialog

    async def _write_presets(self, path: str) -> None:
        text = await self._settings.export_presets()
        written = await self._exports.write(path, text)
        self._status(f"Presets exported to {written}")
        self.exported.emit(str(written))

    def import_presets(self) -> QFileDialog:
        dialog = self._file_dialog("Import presets", "", save=False)
        dialog.fileSelected.connect(lambda path: self._tasks.spawn(
            self._read_presets(path), name="import-presets"))
        dialog.open()
        return dialog

    async def _read_presets(self, path: str) -> None:
        try:
            data = await asyncio.to_thread(Path(path).read_bytes)
            presets = await self._settings.import_presets(data)
        except (OSError, SettingsError) as exc:
            self._status(f"No presets imported: {exc}")
            return
        self._status(f"Imported {len(presets)} preset{'s' if len(presets) != 1 else ''}"
                     ": see File → New chat from preset")
        self.presetsImported.emit(len(presets))
