"""A chat's instructions (system prompt) and parameters, from the header's buttons, the
chat list's menu or the Chat menu, and the global instructions every chat runs under
(File menu and a row on Settings' General page). Each dialog is opened with `open()` and
saves through its signal; a change applies from the next request."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFormLayout, QPushButton, QToolButton, QWidget

from ...core.budget import BudgetConfig, output_reserve
from ...core.chat_settings import SettingsError
from ...services.turns.chat_service import ChatService
from ..dialogs.chat_controls import InstructionsDialog, ParametersDialog, Shown
from .ports import ModelPicker, OpenChat, Spawner, StatusLine

if TYPE_CHECKING:  # the dialog is built when Settings first opens, not at start-up
    from ..dialogs.settings import SettingsDialog


class ChatInstructions(QObject):
    settingsSaved = Signal(str)  # session id whose instructions or parameters were saved
    globalSaved = Signal()

    def __init__(
        self,
        parent: QObject,
        *,
        chat_service: ChatService,
        chat: OpenChat,
        models: ModelPicker,
        tasks: Spawner,
        status: StatusLine,
        window: QWidget,
        settings_dialog: Callable[[], SettingsDialog | None],
        budget: Callable[[], BudgetConfig],
    ) -> None:
        super().__init__(parent)
        self._chat = chat_service
        self._settings = chat_service.settings
        self._sessions = chat_service.sessions
        self._open = chat
        self._models = models
        self._tasks = tasks
        self._status = status
        self._window = window
        self._settings_dialog = settings_dialog
        self._budget = budget
        self.dialog: InstructionsDialog | ParametersDialog | None = None  # the last opened
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

    def extend_settings(self) -> QPushButton | None:
        """The Settings dialog's General page gets a row for the global instructions."""
        dialog = self._settings_dialog()
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

    # --- instructions ----------------------------------------------------------------

    def edit_instructions(self, session_id: str | None = None) -> None:
        sid = session_id or self._open.current_session_id
        if sid is not None:
            self._tasks.spawn(self._open_instructions(sid), name="instructions")

    async def _open_instructions(self, session_id: str) -> InstructionsDialog:
        current = await self._settings.current(session_id)
        session = await self._sessions.get(session_id)
        title = session.title if session is not None else "chat"
        dialog = InstructionsDialog(f"Instructions for “{title}”", current.instructions,
                                    parent=self._window)
        dialog.saved.connect(lambda text: self._tasks.spawn(
            self._save_instructions(session_id, text), name="save-instructions"))
        self.dialog = dialog
        dialog.open()
        return dialog

    async def _save_instructions(self, session_id: str, text: str) -> None:
        try:
            saved = await self._settings.update(session_id, instructions=text)
        except SettingsError as exc:
            self._status(f"Instructions not saved: {exc}")
            return
        self._status(
            f"Instructions saved (revision {saved.revision}); they apply from the next request")
        self.settingsSaved.emit(session_id)

    def edit_global(self) -> None:
        self._tasks.spawn(self._open_global(), name="global-instructions")

    async def _open_global(self) -> InstructionsDialog:
        text = await self._settings.global_instructions()
        dialog = InstructionsDialog("Global instructions", text, global_scope=True,
                                    parent=self._window)
        dialog.saved.connect(lambda t: self._tasks.spawn(self._save_global(t),
                                                         name="save-global"))
        self.dialog = dialog
        dialog.open()
        return dialog

    async def _save_global(self, text: str) -> None:
        try:
            await self._settings.set_global_instructions(text)
        except SettingsError as exc:
            self._status(f"Global instructions not saved: {exc}")
            return
        self._status("Global instructions saved; every chat uses them from its next request")
        self.globalSaved.emit()

    # --- parameters ------------------------------------------------------------------

    def edit_parameters(self, session_id: str | None = None) -> None:
        sid = session_id or self._open.current_session_id
        if sid is not None:
            self._tasks.spawn(self._open_parameters(sid), name="parameters")

    async def _reply_cap(self, model: str | None) -> int:
        """The reply cap a request on `model` is sent with when the chat sets none: the
        model's own cap, else the share of its window kept for the reply."""
        cap = self._chat.models.default_reply_cap(model)
        if cap is not None:
            return cap
        endpoint = await self._chat.model_endpoint(model)
        return endpoint.reply_cap or output_reserve(endpoint.window, self._budget())

    async def _open_parameters(self, session_id: str) -> ParametersDialog:
        model = self._models.selected()
        caps = await self._chat.capabilities(model, session_id=session_id)
        current = await self._settings.current(session_id)
        dialog = ParametersDialog(self._models.label_for(model) if model else "",
                                  current.parameters, Shown.of(caps), parent=self._window,
                                  default_max_tokens=await self._reply_cap(model))
        dialog.saved.connect(lambda values: self._tasks.spawn(
            self._save_parameters(session_id, dialog, values), name="save-parameters"))
        self.dialog = dialog
        dialog.open()
        return dialog

    async def _save_parameters(self, session_id: str, dialog: ParametersDialog,
                               values: dict[str, Any]) -> None:
        try:
            await self._settings.update(session_id, **values)
        except SettingsError as exc:
            dialog.show_error(str(exc))
            return
        dialog.accept()
        self._status("Parameters saved; they apply from the next request")
        self.settingsSaved.emit(session_id)
