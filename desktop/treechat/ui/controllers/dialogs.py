"""The dialogs the window opens from its menus and banners: Settings (keys, default model,
workspace, compaction, theme) and Import (a file chosen, or an export dropped on the chat
list)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from ...services.bootstrap import SETTINGS_SUMMARIZER
from ...services.models.catalog import CLOUD_PROVIDERS
from ...services.preferences import ChatPreferences
from ...services.problem_report import (
    AppInfo,
    problem_report,
    report_place,
    save_report,
    where_to_report,
)
from ...services.transfer.import_jobs import ImportJobs
from ..dialogs.help import AboutDialog, ShortcutsDialog
from ..dialogs.settings import SettingsDialog, SettingsValues
from ..sessions.export_drop import ExportDropFilter

if TYPE_CHECKING:
    from ..dialogs.import_chats import ImportDialog
    from ..dialogs.model_library import ModelLibraryDialog
    from .conversation import ConversationController


class DialogsController:
    def __init__(self, conversation: ConversationController) -> None:
        self._c = conversation
        self._settings: SettingsDialog | None = None
        self._import: ImportDialog | None = None
        self._library: ModelLibraryDialog | None = None
        self._imports = ImportJobs.of(conversation.services)
        self._export_drop = ExportDropFilter(conversation)
        self._export_drop.fileDropped.connect(self.open_import_dialog)
        self._export_drop.install(conversation.parts.sessions)
        conversation.parts.chat.settingsRequested.connect(self.open_settings)

    # --- settings ------------------------------------------------------------------

    def current_settings(self) -> SettingsValues:
        c = self._c
        prefs = c.preferences.current()
        return SettingsValues(
            default_model=prefs.default_model or c.models.default_model(),
            workspace=prefs.workspace,
            summarize_trigger=prefs.summarize_trigger,
            emergency_trigger=prefs.emergency_trigger,
            theme=c.theme.mode if c.theme is not None else "system",
            summarizer=c.chat_service.config.summarizer,
        )

    def open_settings(self) -> None:
        c = self._c
        if self._settings is not None and self._settings.isVisible():
            self._settings.raise_()
            self._settings.activateWindow()
            return
        dialog = SettingsDialog(
            c.services.keys, CLOUD_PROVIDERS, c.models.choices, self.current_settings(),
            tasks=c.tasks, parent=c.parts.window, connections=c.services.connections,
            mcp=c.services.mcp, sync=c.services.sync,
        )
        dialog.saved.connect(self.apply_settings)
        dialog.keysChanged.connect(lambda: c.spawn(c.models.refresh(), name="models"))
        self._settings = dialog
        dialog.open()

    @property
    def settings_dialog(self) -> SettingsDialog | None:
        return self._settings

    def apply_settings(self, values: SettingsValues) -> None:
        c = self._c
        if c.theme is not None and values.theme != c.theme.mode:
            c.theme.set_mode(values.theme)
        if c.prefs is not None:
            c.prefs.setValue("theme", values.theme)
        prefs = ChatPreferences(
            default_model=values.default_model,
            workspace=values.workspace,
            summarize_trigger=values.summarize_trigger,
            emergency_trigger=values.emergency_trigger,
        )
        if values.default_model != c.services.models.default_model:
            c.models.next_model = None  # the new default is what a new chat starts on
        c.preferences.apply(prefs)
        c.themeChosen.emit(values.theme)
        summarizer = values.summarizer
        summarizer_changed = summarizer != c.chat_service.config.summarizer
        c.chat_service.config.summarizer = summarizer  # the next fold uses it

        async def work() -> None:
            await c.preferences.persist(prefs)
            if summarizer_changed:
                await c.services.store.run(
                    lambda repo: repo.set_setting(SETTINGS_SUMMARIZER, summarizer))
            await c.models.refresh()
            await c.occupancy.refresh()

        c.spawn(work(), name="save-settings")

    # --- import --------------------------------------------------------------------

    def open_import_dialog(self, path: str | None = None) -> None:
        """File → Import…, or a dropped export file (`path`: start importing it at once)."""
        c = self._c
        dialog = self._import
        if dialog is None:
            # made on first use: the import code need not load with the window
            from ..dialogs.import_chats import ImportDialog

            dialog = ImportDialog(self._imports, c.tasks, parent=c.parts.window)
            dialog.imported.connect(lambda _summary: self._after_import())
            dialog.openRequested.connect(self._open_imported)
            self._import = dialog
        if not dialog.running:
            dialog.reset()
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()
        if path:
            dialog.start_import(path)

    @property
    def import_dialog(self) -> ImportDialog | None:
        return self._import

    # --- help ----------------------------------------------------------------------

    def open_shortcuts(self, shortcuts: Sequence[tuple[str, str]]) -> ShortcutsDialog:
        dialog = ShortcutsDialog(shortcuts, self._c.parts.window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        dialog.search.setFocus()
        return dialog

    def app_info(self) -> AppInfo:
        return AppInfo.of(self._c.services.store.path.parent)

    def open_about(self) -> AboutDialog:
        dialog = AboutDialog(self.app_info(), self._c.parts.window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog

    def copy_problem_report(self) -> None:
        """Help → Report a problem: the report goes to the clipboard, nothing is sent."""
        c = self._c

        async def work() -> None:
            info = self.app_info()
            text = await asyncio.to_thread(problem_report, info)
            QGuiApplication.clipboard().setText(text)
            saved = await asyncio.to_thread(save_report, info, text)
            place = await asyncio.to_thread(report_place)
            c.parts.status(where_to_report(saved, place))

        c.spawn(work(), name="problem-report")

    # --- local models --------------------------------------------------------------

    def open_model_library(self) -> None:
        """File → Local models…: download, run and remove models that run on this machine."""
        c = self._c
        library = c.services.models.library
        if library is None:
            c.parts.status("Local models are not available in this build")
            return
        dialog = self._library
        if dialog is None:
            from ..dialogs.model_library import ModelLibraryDialog

            dialog = ModelLibraryDialog(library, c.tasks, ollama_url=self._ollama_url(),
                                        parent=c.parts.window)
            dialog.modelsChanged.connect(
                lambda: c.spawn(c.models.refresh(), name="models"))
            dialog.useRequested.connect(lambda name: c.models.set_model(f"library/{name}"))
            self._library = dialog
        dialog.refresh()
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()

    def _ollama_url(self) -> str | None:
        connections = self._c.services.connections
        if connections is None:
            return None
        for status in connections.statuses():
            conn = status.connection
            if conn.kind == "ollama" and status.state in ("ready", "detected") and conn.base_url:
                return conn.base_url
        return None

    @property
    def model_library_dialog(self) -> ModelLibraryDialog | None:
        return self._library

    def _after_import(self) -> None:
        """The imported chats are shown: an old query in the search box would hide them."""
        c = self._c
        c.parts.sessions.search.clear()
        c.spawn(c.session_list.reload(), name="sessions")

    def _open_imported(self, session_id: str) -> None:
        c = self._c
        c.parts.sessions.select(session_id)
        c.spawn(c.load_session(session_id), name="open-session")
