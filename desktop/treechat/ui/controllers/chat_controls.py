"""The chat's controls beyond sending, put into the window: the header's cost and its
Instructions and Parameters buttons, the File menu's presets, export and global
instructions, View → Usage, the Chat menu's instructions, parameters and Continue, and the
chat list's marks. Each control is its own controller (`chat_costs`, `chat_instructions`,
`presets`, `chat_export`, `reply_actions`, `chat_marks`); this module builds them with
what each needs and keeps the menu items in step with the open chat."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QHBoxLayout, QMenu

from ...services.turns.sessions import SessionView
from .chat_costs import ChatCosts, reply_cost_text
from .chat_export import ChatExport
from .chat_instructions import ChatInstructions
from .chat_marks import ChatMarks
from .presets import ChatPresets
from .reply_actions import ReplyActions, continuable

if TYPE_CHECKING:
    from ..shell.main_window import MainWindow
    from .conversation import ConversationController


def find_menu(window: MainWindow, title: str) -> QMenu:
    for action in window.menuBar().actions():
        menu = action.menu()
        if isinstance(menu, QMenu) and action.text().replace("&", "") == title:
            return menu
    return window.menuBar().addMenu(title)


class ChatControls(QObject):
    """The chat controls of one window, and the menu items that reach them."""

    settingsSaved = Signal(str)  # session id whose instructions or parameters were saved
    globalSaved = Signal()
    costsShown = Signal(str)  # session id whose costs the header and tooltips now show
    estimateShown = Signal(str)  # the composer's estimate text
    exported = Signal(str)  # the file written
    presetsImported = Signal(int)
    marksChanged = Signal()

    def __init__(self, window: MainWindow, *, costs: ChatCosts,
                 instructions: ChatInstructions, presets: ChatPresets, export: ChatExport,
                 replies: ReplyActions, marks: ChatMarks) -> None:
        super().__init__(window)
        self.setObjectName("ChatControls")
        self._w = window
        self.costs = costs
        self.instructions = instructions
        self.presets = presets
        self.export = export
        self.replies = replies
        self.marks = marks
        instructions.settingsSaved.connect(self.settingsSaved)
        instructions.globalSaved.connect(self.globalSaved)
        costs.costsShown.connect(self.costsShown)
        costs.estimateShown.connect(self.estimateShown)
        presets.exported.connect(self.exported)
        export.exported.connect(self.exported)
        presets.presetsImported.connect(self.presetsImported)
        marks.marksChanged.connect(self.marksChanged)
        marks.instructionsRequested.connect(instructions.edit_instructions)
        header = window.header.layout()
        assert isinstance(header, QHBoxLayout)
        header.addWidget(costs.cost_label)
        header.addWidget(instructions.instructions_button)
        header.addWidget(instructions.parameters_button)
        self._menus()

    def _action(self, menu: QMenu, text: str, slot: Callable[[], object],
                before: QAction | None = None) -> QAction:
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
        self.preset_menu = self.presets.preset_menu
        file_menu.insertMenu(before, self.preset_menu)
        self.export_action = self._action(file_menu, "Export chat…", self.export.export_chat,
                                          before)
        self.export_all_action = self._action(file_menu, "Export all chats…",
                                              self.export.export_all, before)
        self.export_presets_action = self._action(file_menu, "Export presets…",
                                                  self.presets.export_presets, before)
        self.import_presets_action = self._action(file_menu, "Import presets…",
                                                  self.presets.import_presets, before)
        file_menu.insertSeparator(before)
        self.global_action = self._action(file_menu, "Global instructions…",
                                          self.instructions.edit_global, w.settings_action)
        self.usage_action = self._action(find_menu(w, "View"), "Usage…",
                                         self.costs.open_usage)
        chat_menu = find_menu(w, "Chat")
        chat_menu.addSeparator()
        self.instructions_action = self._action(chat_menu, "Instructions…",
                                                self.instructions.edit_instructions)
        self.parameters_action = self._action(chat_menu, "Parameters…",
                                              self.instructions.edit_parameters)
        self.continue_action = self._action(chat_menu, "Continue reply",
                                            self.replies.continue_last)

    def view_changed(self, view: SessionView | None) -> None:
        """The open chat changed (or was redrawn): what its controls can do now."""
        has = view is not None
        for widget in (self.instructions.instructions_button,
                       self.instructions.parameters_button):
            widget.setEnabled(has)
        for action in (self.instructions_action, self.parameters_action, self.export_action):
            action.setEnabled(has)
        self.continue_action.setEnabled(has and continuable(view) is not None)
        self.costs.view_changed(view)


def add_chat_controls(window: MainWindow, conversation: ConversationController) -> ChatControls:
    """Build the chat controls with what each needs, wire them into the window and read the
    list's marks once."""
    parts, chat, models = conversation.parts, conversation.chat_service, conversation.models
    status, services = parts.status, conversation.services
    exports = services.exports
    costs = ChatCosts(window, chat_service=chat, chat=conversation, models=models,
                      tasks=conversation, composer=parts.composer, chat_view=parts.chat,
                      window=window)
    dialogs = conversation.dialogs
    instructions = ChatInstructions(
        window, chat_service=chat, chat=conversation, models=models, tasks=conversation,
        status=status, window=window, settings_dialog=lambda: dialogs.settings_dialog,
        budget=lambda: services.engine.config.budget)
    # the global instructions' row, in every Settings dialog however it was opened
    dialogs.settings_extras.append(lambda _dialog: instructions.extend_settings())
    presets = ChatPresets(window, chat_service=chat, exports=exports, chat=conversation,
                          rows=conversation.session_list, tasks=conversation, status=status,
                          composer=parts.composer, session_list=parts.sessions,
                          window=window)
    export = ChatExport(window, exports, chat=conversation, tasks=conversation, status=status,
                        window=window)
    replies = ReplyActions(window, chat_service=chat, chat=conversation, models=models,
                           turns=conversation.turns, cost_line=costs.cost_line, window=window)
    marks = ChatMarks(window, chat.settings, chat=conversation, tasks=conversation,
                      session_list=parts.sessions)
    controls = ChatControls(window, costs=costs, instructions=instructions, presets=presets,
                            export=export, replies=replies, marks=marks)
    conversation.sessionOpened.connect(controls.view_changed)
    conversation.viewChanged.connect(controls.view_changed)
    # a turn's usage rows are counted in before its redraw; a turn that brought none is read
    conversation.turnApplied.connect(costs.apply_turn)
    conversation.turnFinished.connect(lambda _sid: costs.refresh_soon())
    parts.chat.menuRequested.connect(replies.reply_menu)

    def instructions_saved(session_id: str | None = None) -> None:
        # the ring, the Context tab and /context describe the next request, which carries them
        if session_id is None or session_id == conversation.current_session_id:
            conversation.spawn(conversation.occupancy.refresh(), name="occupancy")
            costs.view_changed(conversation.current_view)  # and so does its estimate

    controls.settingsSaved.connect(instructions_saved)
    controls.globalSaved.connect(instructions_saved)
    controls.view_changed(conversation.current_view)
    conversation.spawn(marks.reload_marks(), name="marks")
    # filled now too: a submenu with nothing in it yet would not open
    conversation.spawn(presets.fill_presets(), name="presets")
    return controls


__all__ = ["ChatControls", "add_chat_controls", "reply_cost_text"]
