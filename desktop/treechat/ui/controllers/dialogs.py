"""The dialogs the window opens from its menus and banners: Settings (keys, default model,
workspace, compaction, theme) and Import (a file chosen, or an export dropped on the chat
list)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from ...services.models.catalog import BUNDLED_WINDOW_HINT, CLOUD_PROVIDERS
from ...services.preferences import ChatPreferences
from ...services.problem_report import (
    AppInfo,
    problem_report,
    report_place,
    save_report,
)
from ...services.retrieval.search_model import (
    EmbedderUnavailable,
    embedding_models_of,
    label_of,
    offered,
)
from ..dialogs.help import AboutDialog, ReportDialog, ShortcutsDialog
from ..dialogs.settings import SettingsDialog, SettingsValues
from ..sessions.export_drop import ExportDropFilter

if TYPE_CHECKING:
    from ...services.models.model_library import BundledModel
    from ...services.retrieval.search_model import SearchModel
    from ...services.search import SearchService
    from ..dialogs.import_chats import ImportDialog
    from ..dialogs.model_library import ModelLibraryDialog
    from .collaborators import ModelPicker, Refreshes, ShownChats
    from .conversation import ConversationController


class DialogsController:
    """Takes from the conversation only what its dialogs use: the services, the window (their
    parent) and its chat list, the status line, the task spawner and tasks, the model picker,
    the context meter, the theme and the chats on show."""

    def __init__(self, conversation: ConversationController) -> None:
        c = conversation
        self._services = c.services
        self._window = c.parts.window
        self._sessions_list = c.parts.sessions
        self._status = c.parts.status
        self._spawn = c.spawn
        self._tasks = c.tasks
        self._models: ModelPicker = c.models
        self._occupancy: Refreshes = c.occupancy
        self._chats: ShownChats = c
        self._theme = c.theme
        self._prefs = c.prefs
        self._theme_chosen = c.themeChosen
        self._settings: SettingsDialog | None = None
        # What other controllers add to the Settings dialog each time one is made, whatever
        # opened it (the menu, a banner's button, the chat's settings link).
        self.settings_extras: list[Callable[[SettingsDialog], object]] = []
        self._import: ImportDialog | None = None
        self._library: ModelLibraryDialog | None = None
        self._report: ReportDialog | None = None
        self._imports = c.services.imports
        self._export_drop = ExportDropFilter(c)
        self._export_drop.fileDropped.connect(self.open_import_dialog)
        self._export_drop.install(c.parts.sessions)
        c.parts.chat.settingsRequested.connect(self.open_settings)

    # --- settings ------------------------------------------------------------------

    def current_settings(self) -> SettingsValues:
        prefs = self._services.preferences.current()
        return SettingsValues(
            default_model=prefs.default_model or self._models.default_model(),
            workspace=prefs.workspace,
            summarize_trigger=prefs.summarize_trigger,
            emergency_trigger=prefs.emergency_trigger,
            theme=self._theme.mode if self._theme is not None else "system",
            summarizer=self._services.chat.config.summarizer,
            search_model=(self._services.search.search_model()
                          if self._services.search is not None else None),
        )

    def open_settings(self) -> None:
        services = self._services
        if self._settings is not None and self._settings.isVisible():
            self._settings.raise_()
            self._settings.activateWindow()
            return
        dialog = SettingsDialog(
            services.keys, CLOUD_PROVIDERS, self._models.choices, self.current_settings(),
            tasks=self._tasks, parent=self._window, connections=services.connections,
            mcp=services.mcp, sync=services.sync,
            search_models=self._search_models if services.search is not None else None,
        )
        dialog.saved.connect(self.apply_settings)
        dialog.keysChanged.connect(lambda: self._spawn(self._models.refresh(), name="models"))
        self._settings = dialog
        for extend in self.settings_extras:
            extend(dialog)
        dialog.open()

    @property
    def settings_dialog(self) -> SettingsDialog | None:
        return self._settings

    def apply_settings(self, values: SettingsValues) -> None:
        services = self._services
        preferences = services.preferences
        chat_config = services.chat.config
        if self._theme is not None and values.theme != self._theme.mode:
            self._theme.set_mode(values.theme)
        if self._prefs is not None:
            self._prefs.setValue("theme", values.theme)
        prefs = ChatPreferences(
            default_model=values.default_model,
            workspace=values.workspace,
            summarize_trigger=values.summarize_trigger,
            emergency_trigger=values.emergency_trigger,
        )
        if values.default_model != services.models.default_model:
            self._models.next_model = None  # the new default is what a new chat starts on
        preferences.apply(prefs)
        self._theme_chosen.emit(values.theme)
        summarizer = values.summarizer
        summarizer_changed = summarizer != chat_config.summarizer
        chat_config.summarizer = summarizer  # the next fold uses it

        async def work() -> None:
            await preferences.persist(prefs)
            if summarizer_changed:
                await preferences.save_summarizer(summarizer)
            await self._models.refresh()
            await self._occupancy.refresh()

        self._spawn(work(), name="save-settings")
        search = services.search
        if search is not None and values.search_model != search.search_model():
            self._spawn(self._change_search_model(search, values.search_model),
                        name="search-model")

    async def _search_models(self) -> list[SearchModel]:
        """The embedding models the connections and the model library offer."""
        services = self._services
        found = (await embedding_models_of(services.connections)
                 if services.connections is not None else [])
        library = services.models.library
        installed = (await asyncio.to_thread(library.library.installed)
                     if library is not None else [])
        return await asyncio.to_thread(offered, found, [Path(m.path) for m in installed])

    async def _change_search_model(self, search: SearchService,
                                   model: SearchModel | None) -> None:
        """Use another model for search and embed chats and knowledge again with it, off the
        GUI thread, the status line saying how far it has come."""
        label = label_of(model)
        self._status(f"Search model: asking {label}…")
        try:
            await search.use_search_model(model)
        except EmbedderUnavailable as exc:
            self._status(f"Search model not changed: {exc}")
            return
        knowledge = await asyncio.to_thread(self._services.chat.knowledge)
        try:
            done = await search.embed_again(
                service=knowledge,
                chats=lambda n, _last: self._status(
                    f"Search model {label}: {n:,} chat passages embedded"),
                knowledge=lambda name, p: self._status(
                    f"Search model {label}: knowledge “{name}” {p.done:,}/{p.total:,} files"))
        except EmbedderUnavailable as exc:
            self._status(f"Search model {label}: embedding stopped: {exc}")
            return
        passages = f"{done:,} chat passage{'s' if done != 1 else ''}"
        self._status(f"Search model {label}: {passages} and knowledge embedded")

    # --- import --------------------------------------------------------------------

    def open_import_dialog(self, path: str | None = None) -> None:
        """File → Import…, or a dropped export file (`path`: start importing it at once)."""
        dialog = self._import
        if dialog is None:
            # made on first use: the import code need not load with the window
            from ..dialogs.import_chats import ImportDialog

            dialog = ImportDialog(self._imports, self._tasks, parent=self._window)
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
        dialog = ShortcutsDialog(shortcuts, self._window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        dialog.search.setFocus()
        return dialog

    def app_info(self) -> AppInfo:
        return AppInfo.of(self._services.data_folder)

    def open_about(self) -> AboutDialog:
        dialog = AboutDialog(self.app_info(), self._window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog

    def copy_problem_report(self) -> None:
        """Help → Report a problem: the report goes to the clipboard and beside the log, and
        a dialog shows it whole with where to send it; nothing is sent."""

        async def work() -> None:
            info = self.app_info()
            text = await asyncio.to_thread(problem_report, info)
            QGuiApplication.clipboard().setText(text)
            saved = await asyncio.to_thread(save_report, info, text)
            place = await asyncio.to_thread(report_place)
            if self._report is not None:
                self._report.close()
            dialog = ReportDialog(text, saved, place, self._window)
            dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            dialog.destroyed.connect(lambda: self._forget_report(dialog))
            self._report = dialog
            dialog.show()

        self._spawn(work(), name="problem-report")

    def _forget_report(self, dialog: ReportDialog) -> None:
        if self._report is dialog:
            self._report = None

    @property
    def report_dialog(self) -> ReportDialog | None:
        return self._report

    # --- local models --------------------------------------------------------------

    def open_model_library(self) -> None:
        """File → Local models…: download, run and remove models that run on this machine."""
        library = self._services.models.library
        if library is None:
            self._status("Local models are not available in this build")
            return
        dialog = self._library
        if dialog is None:
            from ..dialogs.model_library import ModelLibraryDialog

            catalog = self._services.models

            def bundled() -> Awaitable[BundledModel | None]:
                return library.bundled(catalog.bundled, BUNDLED_WINDOW_HINT)

            dialog = ModelLibraryDialog(library, self._tasks, ollama_url=self._ollama_url(),
                                        bundled=bundled, parent=self._window)
            dialog.modelsChanged.connect(
                lambda: self._spawn(self._models.refresh(), name="models"))
            dialog.useRequested.connect(self._use_model)
            self._library = dialog
        dialog.refresh()
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()

    def _use_model(self, address: str) -> None:
        """The library's Use in this chat: the picker shows it, the chat takes it."""
        self._models.set_model(address)
        self._spawn(self._models.refresh(), name="models")

    def _ollama_url(self) -> str | None:
        connections = self._services.connections
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
        self._sessions_list.search.clear()
        self._spawn(self._chats.session_list.reload(), name="sessions")

    def _open_imported(self, session_id: str) -> None:
        self._sessions_list.select(session_id)
        self._spawn(self._chats.load_session(session_id), name="open-session")
