"""A non-modal message above the composer for a failed turn (or a notice such as an undoable
delete), with the action that fixes it: retry, open settings, wait N seconds, compact."""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from ...services.turns.events import TurnError

TITLES = {
    "overflow": "Too long for this model",
    "auth": "The API key was not accepted",
    "rate_limit": "The provider is rate limiting",
    "offline": "The provider could not be reached",
    "server": "The provider had a problem",
    "bad_request": "The provider refused the request",
    "busy": "Still writing a reply",
    "unavailable": "This model is not available",
    "internal": "The reply could not be finished",
    "cancelled": "Reply stopped",
}

ACTION_LABELS = {
    "retry": "Retry",
    "settings": "Open settings",
    "compact": "Compact now",
    "undo": "Undo",
    "undo_move": "Undo",
    "new_chat": "New chat",
    "cut_to_fit": "Cut to fit and send",
    "send_as_file": "Send as a file",
    "switch_to_vision": "Switch model and send",
    "send_without_images": "Send without the images",
    "cancel": "Cancel",
}


class ErrorBanner(QFrame):
    """Emits `actionTriggered(key)` with "retry", "settings", "compact", "undo", ..."""

    actionTriggered = Signal(str)
    dismissed = Signal()

    def __init__(self, parent: QWidget | None = None, *,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        super().__init__(parent)
        self._monotonic = monotonic  # the clock a rate limit's countdown runs on
        self.setObjectName("ErrorBanner")
        self.setProperty("level", "error")
        self.setAccessibleName("Message")
        self.error: TurnError | None = None
        self._wait_until = 0.0
        self._wait_key = ""

        self.title = QLabel("")
        self.title.setObjectName("ErrorTitle")
        self.title.setWordWrap(True)  # a long title wraps: the banner never widens the window
        self.message = QLabel("")
        self.message.setObjectName("ErrorMessage")
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        text = QVBoxLayout()
        text.setSpacing(2)
        text.addWidget(self.title)
        text.addWidget(self.message)

        self._buttons: dict[str, QPushButton] = {}
        self._actions = QHBoxLayout()
        self._actions.setSpacing(6)
        self._actions.addStretch(1)  # the buttons sit right, under the words
        text.addLayout(self._actions)  # not beside them: the banner never widens the column
        self.close_button = QPushButton("✕")
        self.close_button.setObjectName("BannerClose")
        self.close_button.setAccessibleName("Dismiss message")
        self.close_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.close_button.clicked.connect(self.dismiss)

        row = QHBoxLayout(self)
        row.setContentsMargins(14, 10, 8, 10)
        row.setSpacing(10)
        row.addLayout(text, 1)
        row.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)

        self._timer = QTimer(self)
        self._timer.setInterval(250)
        self._timer.timeout.connect(self._tick)
        self._auto_hide = QTimer(self)
        self._auto_hide.setSingleShot(True)
        self._auto_hide.timeout.connect(self.dismiss)
        self.hide()

    # --- showing -------------------------------------------------------------------

    def show_error(self, error: TurnError) -> None:
        """A failed turn: its words, and the buttons its kind calls for."""
        actions: list[str] = []
        if error.kind == "overflow":
            actions = ["compact", "retry"]
        elif error.action in ("retry", "settings"):
            actions = [error.action]
        elif error.action == "wait" or error.kind == "rate_limit":
            actions = ["retry"]
        level = "warning" if error.kind in ("rate_limit", "busy", "cancelled") else "error"
        message = error.message
        if error.kind == "overflow":
            message += " Compact the conversation, shorten the message, or pick a model "
            message += "with a larger window. Your text is still in the box below."
        self._show(level, TITLES.get(error.kind, "Something went wrong"), message, actions)
        self.error = error
        if error.retry_after and error.retry_after > 0:
            self._start_wait("retry", error.retry_after)

    def show_notice(
        self, title: str, message: str = "", actions: tuple[str, ...] = (),
        hide_after_ms: int = 0,
    ) -> None:
        self._show("info", title, message, list(actions))
        if hide_after_ms > 0:
            self._auto_hide.start(hide_after_ms)

    def _show(self, level: str, title: str, message: str, actions: list[str]) -> None:
        self._timer.stop()
        self._auto_hide.stop()
        self.error = None
        self._wait_until = 0.0
        self.setProperty("level", level)
        self.style().unpolish(self)
        self.style().polish(self)
        self.title.setText(title)
        self.message.setText(message)
        self.message.setVisible(bool(message))
        for button in self._buttons.values():
            self._actions.removeWidget(button)
            button.deleteLater()
        self._buttons = {}
        for key in actions:
            button = QPushButton(ACTION_LABELS.get(key, key.title()))
            button.setObjectName("BannerAction")
            button.setAccessibleName(ACTION_LABELS.get(key, key))
            button.setCursor(Qt.CursorShape.PointingHandCursor)
            button.clicked.connect(lambda _=False, k=key: self._trigger(k))
            self._actions.addWidget(button, 0, Qt.AlignmentFlag.AlignVCenter)
            self._buttons[key] = button
        self.setAccessibleDescription(f"{title}. {message}")
        self.show()

    def _start_wait(self, key: str, seconds: float) -> None:
        self._wait_key = key
        self._wait_until = self._monotonic() + seconds
        self._tick()
        self._timer.start()

    def _tick(self) -> None:
        button = self._buttons.get(self._wait_key)
        left = self._wait_until - self._monotonic()
        if button is None:
            self._timer.stop()
            return
        if left > 0:
            button.setEnabled(False)
            button.setText(f"Retry in {int(left + 0.999)} s")
        else:
            self._timer.stop()
            button.setEnabled(True)
            button.setText(ACTION_LABELS.get(self._wait_key, "Retry"))

    # --- reading (what a person sees) ------------------------------------------------

    def action_keys(self) -> list[str]:
        """The actions offered now, left to right (QWidget.actions() is Qt's own)."""
        return list(self._buttons)

    def button(self, key: str) -> QPushButton | None:
        return self._buttons.get(key)

    def kind(self) -> str:
        return self.error.kind if self.error is not None else ""

    # --- acting --------------------------------------------------------------------

    def _trigger(self, key: str) -> None:
        self.dismiss()
        self.actionTriggered.emit(key)

    def dismiss(self) -> None:
        if self.isHidden():
            return
        self._timer.stop()
        self._auto_hide.stop()
        self.hide()
        self.error = None
        self.dismissed.emit()
