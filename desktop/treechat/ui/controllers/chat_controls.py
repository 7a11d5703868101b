"""The chat's controls beyond sending: its instructions and parameters (header buttons, the
chat list's menu, the Chat menu), the global instructions, presets (New chat from preset,
export and import), cost (each reply's on hover, the chat's total in the header, the next
request's estimate beside the composer, the Usage view), export (File → Export chat…,
Export all chats), Continue on a reply that was cut short, a reply's Thinking, and pinned
and favourite chats in the list. Every service call runs on the qasync loop; file dialogs
are opened with `open()` and answer through their signal."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, QTimer, Signal
from PySide6.QtGui import QAction, QHelpEvent
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QToolTip,
    QVBoxLayout,
)

from ...core.budget import output_reserve
from ...core.chat_settings import SettingsError
from ...core.reply import can_continue, reasoning_of
from ...services.export_jobs import ChatExports
from ...services.turns.sessions import SessionView
from ...services.turns.spending import ReplyCost
from ..common.folders import export_folder
from ..dialogs.chat_controls import (
    InstructionsDialog,
    ParametersDialog,
    Shown,
    UsageDialog,
    money,
    spend_text,
)

if TYPE_CHECKING:
    from ..shell.main_window import MainWindow
    from .conversation import ConversationController

log = logging.getLogger(__name__)

ESTIMATE_DELAY_MS = 700
EXPORT_FILTERS = {
    "Markdown, this branch (*.md)": ("md", "branch"),
    "Markdown, every branch (*.md)": ("md", "all"),
    "JSON, every branch (*.json)": ("json", "all"),
    "JSON, this branch (*.json)": ("json", "branch"),
}
PRESET_FILTER = "Treechat presets (*.json)"


def reply_cost_text(cost: ReplyCost, name: str = "", local: bool = False) -> str:
    """A reply's tokens and cost as its tooltip says them; `name` is the model's display
    name (its address when not given), `local` True for a model on this machine (free)."""
    cached = f", {cost.cache_read:,} of them cached" if cost.cache_read else ""
    price = money(cost.cost_usd, cost.priced)
    if local:  # whatever litellm thinks of the name, a model on this computer is free
        price = "free (runs on this computer)"
    elif not cost.priced:
        price = "unpriced (no known price for this model)"
    return (f"{cost.input_tokens:,} tokens in{cached} · {cost.output_tokens:,} out · {price}"
            f"\n{name or cost.model}")


def find_menu(window: MainWindow, title: str) -> QMenu:
    for action in window.menuBar().actions():
        menu = action.menu()
        if isinstance(menu, QMenu) and action.text().replace("&", "") == title:
            return menu
    return window.menuBar().addMenu(title)


class ChatControls(QObject):
    settingsSaved = Signal(str)  # session id whose instructions or parameters were saved
    globalSaved = Signal()
    costsShown = Signal(str)  # session id whose costs the header and tooltips now show
    estimateShown = Signal(str)  # the composer's estimate text
    exported = Signal(str)  # the file written
    presetsImported = Signal(int)
    marksChanged = Signal()

    def __init__(self, window: MainWindow, conversation: ConversationController) -> None:
        super().__init__(window)
        self.setObjectName("ChatControls")
        self._w = window
        self._c = conversation
        self._chat = conversation.chat_service
        self._exports = ChatExports.of(conversation.services)
        self.costs: dict[str, ReplyCost] = {}
        self.favourites_only = False
        self.dialog: QDialog | None = None  # the last dialog opened (tests read it)
        self.file_dialog: QFileDialog | None = None
        self.usage: UsageDialog | None = None

        self._header_widgets()
        self._estimate_widgets()
        self._menus()
        self._favourites_button()
        conversation.sessionOpened.connect(self._view_changed)
        conversation.viewChanged.connect(self._view_changed)
        conversation.turnFinished.connect(lambda _sid: self._refresh_soon())
        conversation.parts.sessions.menuRequested.connect(self._session_menu)
        conversation.parts.chat.menuRequested.connect(self._reply_menu)
        conversation.parts.chat.list.viewport().installEventFilter(self)
        self._view_changed(conversation.current_view)

    # --- building --------------------------------------------------------------------

    def _header_widgets(self) -> None:
        header = self._w.header.layout()
        assert isinstance(header, QHBoxLayout)
        self.cost_label = QLabel("")
        self.cost_label.setObjectName("ChatCost")
        self.cost_label.setAccessibleName("What this chat has cost")
        self.instructions_button = QToolButton()
        self.instructions_button.setText("Instructions")
        self.instructions_button.setObjectName("InstructionsButton")
        self.instructions_button.setToolTip("This chat's own instructions (system prompt)")
        self.instructions_button.clicked.connect(lambda _checked=False: self.edit_instructions())
        self.parameters_button = QToolButton()
        self.parameters_button.setText("Parameters")
        self.parameters_button.setObjectName("ParametersButton")
        self.parameters_button.setToolTip("Temperature, reply length, reasoning")
        self.parameters_button.clicked.connect(lambda _checked=False: self.edit_parameters())
        header.addWidget(self.cost_label)
        header.addWidget(self.instructions_button)
        header.addWidget(self.parameters_button)

    def _estimate_widgets(self) -> None:
        composer = self._c.parts.composer
        self.estimate_label = QLabel("")
        self.estimate_label.setObjectName("ComposerEstimate")
        self.estimate_label.setToolTip(
            "What the next request would cost if sent now, at the uncached price: a "
            "cache hit is never assumed.")
        footer = composer.hint.parentWidget()
        layout = footer.layout() if footer is not None else None
        row = None
        if layout is not None:
            for i in range(layout.count()):
                item = layout.itemAt(i)
                inner = item.layout() if item is not None else None
                if isinstance(inner, QHBoxLayout) and inner.indexOf(composer.hint) >= 0:
                    row = inner
        if row is not None:
            row.insertWidget(row.indexOf(composer.hint) + 1, self.estimate_label)
        self._estimate_timer = QTimer(self)
        self._estimate_timer.setSingleShot(True)
        self._estimate_timer.setInterval(ESTIMATE_DELAY_MS)
        self._estimate_timer.timeout.connect(self._estimate)
        composer.input.textChanged.connect(self._estimate_timer.start)

    def _action(self, menu: QMenu, text: str, slot: Any, before: QAction | None = None
                ) -> QAction:
        action = QAction(text, self._w)
        action.triggered.connect(lambda *_: slot())
        if before is not None:
            menu.insertAction(before, action)
        else:
            menu.addAction(action)
        return action

    def _menus(self) -> None:
        w = self._w
        file_menu = find_menu(w, "File")
        before = w.import_action
        self.preset_menu = QMenu("New chat from preset", w)
        self.preset_menu.setObjectName("PresetMenu")
        self.preset_menu.aboutToShow.connect(self._fill_presets)
        file_menu.insertMenu(before, self.preset_menu)
        self.export_action = self._action(file_menu, "Export chat…", self.export_chat, before)
        self.export_all_action = self._action(file_menu, "Export all chats…",
                                              self.export_all, before)
        self.export_presets_action = self._action(file_menu, "Export presets…",
                                                  self.export_presets, before)
        self.import_presets_action = self._action(file_menu, "Import presets…",
                                                  self.import_presets, before)
        file_menu.insertSeparator(before)
        self.global_action = self._action(file_menu, "Global instructions…",
                                          self.edit_global, w.settings_action)
        self.usage_action = self._action(find_menu(w, "View"), "Usage…", self.open_usage)
        # after the Settings dialog is made (connected earlier): the global instructions there
        w.settings_action.triggered.connect(lambda *_: self.extend_settings())
        chat_menu = find_menu(w, "Chat")
        chat_menu.addSeparator()
        self.instructions_action = self._action(chat_menu, "Instructions…",
                                                self.edit_instructions)
        self.parameters_action = self._action(chat_menu, "Parameters…", self.edit_parameters)
        self.continue_action = self._action(chat_menu, "Continue reply",
                                            self.continue_last)

    def _favourites_button(self) -> None:
        sessions = self._c.parts.sessions
        self.favourites_button = QPushButton("★")
        self.favourites_button.setObjectName("FavouritesFilter")
        self.favourites_button.setCheckable(True)
        self.favourites_button.setFlat(True)
        self.favourites_button.setAccessibleName("Only favourites")
        self.favourites_button.setToolTip("Show only favourite chats")
        self.favourites_button.toggled.connect(self.set_favourites_only)
        layout = sessions.layout()
        first = layout.itemAt(0) if layout is not None else None
        top = first.layout() if first is not None else None
        if isinstance(top, QHBoxLayout):
            top.insertWidget(top.indexOf(sessions.new_button), self.favourites_button)

    def extend_settings(self) -> QPushButton | None:
        """The Settings dialog's General page gets a row for the global instructions."""
        dialog = self._c.dialogs.settings_dialog
        if dialog is None:
            return None
        found = dialog.findChild(QPushButton, "GlobalInstructionsButton")
        if isinstance(found, QPushButton):
            return found
        page = dialog.default_model.parentWidget()
        form = page.layout() if page is not None else None
        if not isinstance(form, QFormLayout):
            return None
        button = QPushButton("Global instructions…")
        button.setObjectName("GlobalInstructionsButton")
        button.setToolTip("The instructions every chat runs under, before its own")
        button.clicked.connect(lambda _checked=False: self.edit_global())
        form.addRow("Instructions", button)
        return button

    # --- following the open chat ----------------------------------------------------

    def _view_changed(self, view: SessionView | None) -> None:
        has = view is not None
        for widget in (self.instructions_button, self.parameters_button):
            widget.setEnabled(has)
        for action in (self.instructions_action, self.parameters_action, self.export_action):
            action.setEnabled(has)
        self.continue_action.setEnabled(has and self._continuable(view) is not None)
        if view is None:
            self.costs = {}
            self.cost_label.setText("")
            self.estimate_label.setText("")
            return
        self._c.spawn(self.refresh_costs(view.session.id), name="chat-costs")
        self._estimate_timer.start()

    def _refresh_soon(self) -> None:
        sid = self._c.current_session_id
        if sid is not None:
            self._c.spawn(self.refresh_costs(sid), name="chat-costs")

    @staticmethod
    def _continuable(view: SessionView | None) -> str | None:
        if view is None:
            return None
        for node in reversed(view.path):
            if node.role == "assistant":
                return node.id if can_continue(node) else None
        return None

    async def refresh_costs(self, session_id: str) -> None:
        view = self._c.current_view
        if view is None or view.session.id != session_id:
            return
        ids = [n.id for n in view.path if n.role == "assistant"]
        costs = await self._chat.spending.reply_costs(ids)
        total = await self._chat.spending.chat_total(session_id, local=self._c.models.is_local)
        if self._c.current_session_id != session_id:
            return
        self.costs = dict(costs)
        if total.requests == 0:
            self.cost_label.setText("")
        else:
            self.cost_label.setText(spend_text(total.cost_usd, total.requests,
                                               total.unpriced_requests, total.free_requests))
            notes = []
            if total.free_requests:
                notes.append(f"{total.free_requests} to a model on this computer (free)")
            if total.unpriced_requests:
                notes.append(f"{total.unpriced_requests} to a model with no known price")
            self.cost_label.setToolTip(
                f"This chat, every branch: {total.requests} request"
                f"{'s' if total.requests != 1 else ''}, {total.input_tokens:,} tokens in "
                f"({total.cache_read:,} cached), {total.output_tokens:,} out"
                + "".join(f"; {n}" for n in notes))
        self.costsShown.emit(session_id)

    def _estimate(self) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # the debounce fired after the window's loop stopped
            return
        sid = self._c.current_session_id
        if sid is not None and not self._chat.is_running(sid):
            self._c.spawn(self.estimate(sid), name="estimate")

    async def estimate(self, session_id: str) -> str:
        draft = self._c.parts.composer.text()
        est = await self._chat.estimate_next_cost(session_id, draft,
                                                  model=self._c.models.selected())
        local = self._c.models.is_local(self._c.models.selected())
        if est.priced and not local:
            text = f"next ≈ {money(est.prompt_usd)}"
            tip = (f"The next request: {est.prompt_tokens:,} tokens at the uncached price "
                   f"{money(est.prompt_usd)}; up to {money(est.ceiling_usd)} with a reply of "
                   f"{est.max_reply_tokens:,} tokens. A cache hit is never assumed.")
        elif local:
            text = "next: free"
            tip = (f"The next request carries about {est.prompt_tokens:,} tokens; "
                   f"{self._c.models.selected_label()} runs on this computer and costs "
                   "nothing.")
        else:
            text = "next: unpriced"
            tip = (f"The next request carries about {est.prompt_tokens:,} tokens; "
                   f"{self._c.models.selected_label()} has no known price.")
        if self._c.current_session_id == session_id:
            self.estimate_label.setText(text)
            self.estimate_label.setToolTip(tip)
            self.estimateShown.emit(text)
        return text

    # --- a reply's cost on hover, its Thinking and Continue --------------------------

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            text = self.tooltip_at(event.pos())
            if text:
                QToolTip.showText(event.globalPos(), text, self._c.parts.chat.list)
                return True
        return False

    def tooltip_at(self, pos: Any) -> str:
        chat = self._c.parts.chat
        index = chat.list.indexAt(pos)
        if not index.isValid():
            return ""
        node = chat.model.row_at(index.row()).node
        if node is None or node.role != "assistant":
            return ""
        return self.reply_text(node.id)

    def _cost_text(self, cost: ReplyCost) -> str:
        models = self._c.models
        return reply_cost_text(cost, models.label_for(cost.model), models.is_local(cost.model))

    def reply_text(self, node_id: str) -> str:
        cost = self.costs.get(node_id)
        view = self._c.current_view
        node = view.graph.get(node_id) if view is not None and node_id in view.graph else None
        lines = [self._cost_text(cost)] if cost is not None else []
        if node is not None and reasoning_of(node):
            lines.append("Thinking kept apart from the answer: right-click → Show thinking")
        if node is not None and can_continue(node):
            lines.append("Cut short: right-click → Continue this reply")
        return "\n".join(lines)

    def _reply_menu(self, key: str, menu: QMenu) -> None:
        view = self._c.current_view
        if view is None or key not in view.graph:
            return
        node = view.graph.get(key)
        if node.role != "assistant":
            return
        extra: list[QAction] = []
        if reasoning_of(node):
            show = QAction("Show thinking…", menu)
            show.triggered.connect(lambda *_: self.show_thinking(key))
            extra.append(show)
        if can_continue(node):
            go = QAction("Continue this reply", menu)
            go.setEnabled(not self._chat.is_running(view.session.id))
            go.triggered.connect(lambda *_: self.continue_reply(key))
            extra.append(go)
        cost = self.costs.get(key)
        if cost is not None:
            info = QAction(self._cost_text(cost).split("\n")[0], menu)
            info.setEnabled(False)
            extra.append(info)
        if extra:
            menu.addSeparator()
            for action in extra:
                menu.addAction(action)

    def show_thinking(self, node_id: str) -> QDialog | None:
        view = self._c.current_view
        if view is None or node_id not in view.graph:
            return None
        text = reasoning_of(view.graph.get(node_id))
        dialog = QDialog(self._w)
        dialog.setObjectName("ThinkingDialog")
        dialog.setWindowTitle("Thinking")
        dialog.resize(560, 420)
        body = QPlainTextEdit(text)
        body.setReadOnly(True)
        note = QLabel("What the model reasoned before answering; it is kept apart from the "
                      "answer and never sent back to it.")
        note.setWordWrap(True)
        layout = QVBoxLayout(dialog)
        layout.addWidget(note)
        layout.addWidget(body, 1)
        self.dialog = dialog
        dialog.open()
        return dialog

    def continue_last(self) -> None:
        target = self._continuable(self._c.current_view)
        if target is not None:
            self.continue_reply(target)

    def continue_reply(self, node_id: str) -> bool:
        c = self._c
        view = c.current_view
        if view is None:
            return False
        sid = view.session.id
        return c.turns.run_external(
            lambda sink: self._chat.continue_reply(sid, node_id, model=c.models.selected(),
                                                   on_event=sink))

    # --- instructions and parameters -------------------------------------------------

    def edit_instructions(self, session_id: str | None = None) -> None:
        sid = session_id or self._c.current_session_id
        if sid is not None:
            self._c.spawn(self._open_instructions(sid), name="instructions")

    async def _open_instructions(self, session_id: str) -> InstructionsDialog:
        current = await self._chat.settings.current(session_id)
        session = await self._c.sessions.get(session_id)
        title = session.title if session is not None else "chat"
        dialog = InstructionsDialog(f"Instructions for “{title}”", current.instructions,
                                    parent=self._w)
        dialog.saved.connect(lambda text: self._c.spawn(
            self._save_instructions(session_id, text), name="save-instructions"))
        self.dialog = dialog
        dialog.open()
        return dialog

    async def _save_instructions(self, session_id: str, text: str) -> None:
        try:
            saved = await self._chat.settings.update(session_id, instructions=text)
        except SettingsError as exc:
            self._c.parts.status(f"Instructions not saved: {exc}")
            return
        self._c.parts.status(
            f"Instructions saved (revision {saved.revision}); they apply from the next request")
        self.settingsSaved.emit(session_id)

    def edit_global(self) -> None:
        self._c.spawn(self._open_global(), name="global-instructions")

    async def _open_global(self) -> InstructionsDialog:
        text = await self._chat.settings.global_instructions()
        dialog = InstructionsDialog("Global instructions", text, global_scope=True,
                                    parent=self._w)
        dialog.saved.connect(lambda t: self._c.spawn(self._save_global(t), name="save-global"))
        self.dialog = dialog
        dialog.open()
        return dialog

    async def _save_global(self, text: str) -> None:
        try:
            await self._chat.settings.set_global_instructions(text)
        except SettingsError as exc:
            self._c.parts.status(f"Global instructions not saved: {exc}")
            return
        self._c.parts.status("Global instructions saved; every chat uses them from its next "
                             "request")
        self.globalSaved.emit()

    def edit_parameters(self, session_id: str | None = None) -> None:
        sid = session_id or self._c.current_session_id
        if sid is not None:
            self._c.spawn(self._open_parameters(sid), name="parameters")

    async def _reply_cap(self, model: str | None) -> int:
        """The reply cap a request on `model` is sent with when the chat sets none: the
        model's own cap, else the share of its window kept for the reply."""
        cap = self._chat.models.default_reply_cap(model)
        if cap is not None:
            return cap
        endpoint = await self._chat.model_endpoint(model)
        return endpoint.reply_cap or output_reserve(endpoint.window,
                                                    self._c.services.engine.config.budget)

    async def _open_parameters(self, session_id: str) -> ParametersDialog:
        model = self._c.models.selected()
        caps = await self._chat.capabilities(model, session_id=session_id)
        current = await self._chat.settings.current(session_id)
        dialog = ParametersDialog(self._c.models.label_for(model) if model else "",
                                  current.parameters, Shown.of(caps), parent=self._w,
                                  default_max_tokens=await self._reply_cap(model))
        dialog.saved.connect(lambda values: self._c.spawn(
            self._save_parameters(session_id, dialog, values), name="save-parameters"))
        self.dialog = dialog
        dialog.open()
        return dialog

    async def _save_parameters(self, session_id: str, dialog: ParametersDialog,
                               values: dict[str, Any]) -> None:
        try:
            await self._chat.settings.update(session_id, **values)
        except SettingsError as exc:
            dialog.show_error(str(exc))
            return
        dialog.accept()
        self._c.parts.status("Parameters saved; they apply from the next request")
        self.settingsSaved.emit(session_id)

    # --- presets ---------------------------------------------------------------------

    def _fill_presets(self) -> None:
        self._c.spawn(self.fill_presets(), name="presets")

    async def fill_presets(self) -> None:
        presets = await self._chat.settings.presets()
        self.preset_menu.clear()
        for preset in presets:
            action = self.preset_menu.addAction(preset.name)
            action.setToolTip(f"{preset.model or 'default model'}: "
                              f"{preset.system_prompt[:120]}")
            action.triggered.connect(
                lambda *_, name=preset.name: self._c.spawn(self.new_chat_from(name),
                                                           name="new-from-preset"))
        if not presets:
            self.preset_menu.addAction("No presets").setEnabled(False)

    async def new_chat_from(self, name: str) -> str:
        c = self._c
        session, _settings = await self._chat.settings.new_chat_from_preset(
            name, c.sessions, title=name)
        await c.session_list.reload()
        c.parts.sessions.select(session.id)
        await c.load_session(session.id)
        c.parts.composer.focus_input()
        return session.id

    def export_presets(self) -> QFileDialog:
        dialog = self._file_dialog("Export presets", "treechat-presets.json", [PRESET_FILTER],
                                   save=True)
        dialog.fileSelected.connect(lambda path: self._c.spawn(
            self._write_presets(path), name="export-presets"))
        dialog.open()
        return dialog

    async def _write_presets(self, path: str) -> None:
        text = await self._chat.settings.export_presets()
        written = await self._exports.write(path, text)
        self._c.parts.status(f"Presets exported to {written}")
        self.exported.emit(str(written))

    def import_presets(self) -> QFileDialog:
        dialog = self._file_dialog("Import presets", "", [PRESET_FILTER], save=False)
        dialog.fileSelected.connect(lambda path: self._c.spawn(
            self._read_presets(path), name="import-presets"))
        dialog.open()
        return dialog

    async def _read_presets(self, path: str) -> None:
        import asyncio

        try:
            data = await asyncio.to_thread(Path(path).read_bytes)
            presets = await self._chat.settings.import_presets(data)
        except (OSError, SettingsError) as exc:
            self._c.parts.status(f"No presets imported: {exc}")
            return
        self._c.parts.status(f"Imported {len(presets)} preset{'s' if len(presets) != 1 else ''}"
                             ": see File → New chat from preset")
        self.presetsImported.emit(len(presets))

    # --- export ----------------------------------------------------------------------

    def _file_dialog(self, title: str, name: str, filters: list[str], *, save: bool
                     ) -> QFileDialog:
        dialog = QFileDialog(self._w, title)
        dialog.setObjectName("ExportFileDialog")
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave if save
                             else QFileDialog.AcceptMode.AcceptOpen)
        dialog.setFileMode(QFileDialog.FileMode.AnyFile if save
                           else QFileDialog.FileMode.ExistingFile)
        dialog.setNameFilters(filters)
        dialog.setDirectory(str(export_folder()))
        if name:
            dialog.selectFile(name)
        self.file_dialog = dialog
        return dialog

    def export_chat(self) -> QFileDialog | None:
        view = self._c.current_view
        if view is None:
            return None
        sid, title = view.session.id, view.session.title
        dialog = self._file_dialog("Export chat", self._exports.filename(title, "md"),
                                   list(EXPORT_FILTERS), save=True)
        dialog.filterSelected.connect(lambda f: dialog.selectFile(
            self._exports.filename(title, EXPORT_FILTERS[f][0])))

        def chosen(path: str) -> None:
            fmt, scope = EXPORT_FILTERS.get(dialog.selectedNameFilter(), ("md", "branch"))
            self._c.spawn(self.write_chat(sid, path, fmt, scope), name="export-chat")

        dialog.fileSelected.connect(chosen)
        dialog.open()
        return dialog

    async def write_chat(self, session_id: str, path: str, fmt: str, scope: str) -> str:
        text = await self._exports.chat(session_id, fmt, "all" if scope == "all" else "branch")
        written = await self._exports.write(path, text)
        files = await self._exports.files_beside(written, [session_id],
                                                 all_branches=scope == "all") \
            if fmt == "md" else ()
        self._c.parts.status(f"Exported to {written}" + (
            f", with {len(files)} attached file{'s' if len(files) != 1 else ''} in "
            f"“{files[0].parent.name}” beside it" if files else ""))
        self.exported.emit(str(written))
        return str(written)

    def export_all(self) -> QFileDialog:
        dialog = self._file_dialog("Export all chats", "treechat-chats.json",
                                   ["JSON (*.json)", "Markdown (*.md)"], save=True)

        def chosen(path: str) -> None:
            fmt = "md" if dialog.selectedNameFilter().startswith("Markdown") else "json"
            self._c.spawn(self.write_all(path, fmt), name="export-all")

        dialog.fileSelected.connect(chosen)
        dialog.open()
        return dialog

    async def write_all(self, path: str, fmt: str) -> str:
        text = await self._exports.all_chats(fmt)
        written = await self._exports.write(path, text)
        if fmt == "md":
            await self._exports.files_beside(written)
        self._c.parts.status(f"Every chat exported to {written}")
        self.exported.emit(str(written))
        return str(written)

    # --- usage -----------------------------------------------------------------------

    def open_usage(self) -> UsageDialog:
        if self.usage is None:
            self.usage = UsageDialog(self._w)
        self.usage.show()
        self.usage.raise_()
        self._c.spawn(self.fill_usage(), name="usage")
        return self.usage

    async def fill_usage(self) -> None:
        assert self.usage is not None
        sessions = await self._c.sessions.list()
        titles = {s.id: s.title for s in sessions}
        for by in ("model", "day", "session"):
            rows = await self._chat.spending.spend(by, local=self._c.models.is_local)
            self.usage.show_rows(by, rows, titles, names=self._c.models.label_for)

    # --- pinned and favourite chats --------------------------------------------------

    def _session_menu(self, session_id: str, menu: QMenu) -> None:
        model = self._c.parts.sessions.model
        pinned = model.is_pinned(session_id)
        menu.addSeparator()
        menu.addAction("Instructions…", lambda: self.edit_instructions(session_id))
        menu.addAction("Unpin" if pinned else "Pin to top",
                       lambda: self._c.spawn(self.set_pinned(session_id, not pinned),
                                             name="pin"))
        fav = session_id in self._favourites
        menu.addAction("Remove from favourites" if fav else "Add to favourites",
                       lambda: self._c.spawn(self.set_favourite(session_id, not fav),
                                             name="favourite"))

    _favourites: frozenset[str] = frozenset()

    async def set_pinned(self, session_id: str, pinned: bool) -> None:
        await self._chat.settings.set_pinned(session_id, pinned)
        await self.reload_marks()

    async def set_favourite(self, session_id: str, favourite: bool) -> None:
        await self._chat.settings.set_favourite(session_id, favourite)
        await self.reload_marks()

    def set_favourites_only(self, on: bool) -> None:
        self.favourites_only = on
        self._c.spawn(self.reload_marks(), name="favourites")

    async def reload_marks(self) -> None:
        marks = await self._chat.settings.marks()
        pinned = frozenset(k for k, m in marks.items() if m.pinned)
        self._favourites = frozenset(k for k, m in marks.items() if m.favourite)
        self._c.parts.sessions.model.set_marks(
            pinned, self._favourites if self.favourites_only else None, self._favourites)
        current = self._c.current_session_id
        if current:
            self._c.parts.sessions.select(current)
        self.marksChanged.emit()


def add_chat_controls(window: MainWindow, conversation: ConversationController) -> ChatControls:
    """Wire the chat controls into the window and read the list's marks once."""
    controls = ChatControls(window, conversation)
    conversation.spawn(controls.reload_marks(), name="marks")
    # filled now too: a submenu with nothing in it yet would not open
    conversation.spawn(controls.fill_presets(), name="presets")
    return controls


__all__ = ["ChatControls", "add_chat_controls", "reply_cost_text"]
