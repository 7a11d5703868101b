"""The prompt a tool call from an MCP server waits on: which chat, which server, which tool,
with which arguments, and three answers. It is non-modal and answers through `decided`;
closing it any other way (Esc, the title bar) is a Deny.

It never takes the keyboard from the person typing: it appears without being activated, has
no default button, and until the person turns to it (a click in it, or Tab to walk its
buttons) whatever they type there is handed back to where they were typing (`typing_target`),
so an Enter or a Space meant for a message never answers it."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QKeyEvent
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ...services.mcp.approval import ApprovalRequest, Decision


class ToolApprovalDialog(QDialog):
    decided = Signal(object)  # Decision

    def __init__(
        self, request: ApprovalRequest, chat_title: str = "", parent: QWidget | None = None,
        typing_target: Callable[[], QWidget | None] | None = None,
    ) -> None:
        super().__init__(parent)
        self.request = request
        self._answered = False
        self._typing_target = typing_target
        self._engaged = False  # the person turned to the prompt (a click, or Tab)
        self._given_back = False
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
        self.setWindowTitle("Allow this tool to run?")
        self.setAccessibleName("Tool approval")
        self.setObjectName("ToolApproval")
        self.resize(520, 380)

        where = f" in “{chat_title}”" if chat_title else ""
        self.heading = QLabel(
            f"The model wants to run <b>{_escape(request.tool)}</b> from the "
            f"<b>{_escape(request.server)}</b> MCP server{where}."
        )
        self.heading.setWordWrap(True)
        self.heading.setTextFormat(Qt.TextFormat.RichText)
        self.description = QLabel(request.description or "The server gives no description.")
        self.description.setObjectName("DialogMuted")
        self.description.setWordWrap(True)
        self.description.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.arguments = QPlainTextEdit(request.arguments_text())
        self.arguments.setReadOnly(True)
        self.arguments.setAccessibleName("Arguments")
        self.note = QLabel("Nothing runs until you answer: click an answer, or press Tab to "
                           "reach them. Stopping the reply denies it.")
        self.note.setObjectName("DialogMuted")
        self.note.setWordWrap(True)

        self.allow_once_button = QPushButton("Allow once")
        self.always_button = QPushButton("Always for this tool in this chat")
        self.deny_button = QPushButton("Deny")
        for button in (self.allow_once_button, self.always_button, self.deny_button):
            button.setAutoDefault(False)  # Enter answers nothing; a focused button takes Space
        self.allow_once_button.clicked.connect(lambda: self.answer(Decision.ALLOW_ONCE))
        self.always_button.clicked.connect(lambda: self.answer(Decision.ALLOW_ALWAYS))
        self.deny_button.clicked.connect(lambda: self.answer(Decision.DENY))

        buttons = QHBoxLayout()
        buttons.addWidget(self.deny_button)
        buttons.addStretch(1)
        buttons.addWidget(self.always_button)
        buttons.addWidget(self.allow_once_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 14, 16, 14)
        layout.addWidget(self.heading)
        layout.addWidget(self.description)
        layout.addWidget(QLabel("Arguments:"))
        layout.addWidget(self.arguments, 1)
        layout.addWidget(self.note)
        layout.addLayout(buttons)
        self.arguments.setFocus()  # if it is activated after all, no button has the focus
        for widget in (self, *self.findChildren(QWidget)):
            widget.installEventFilter(self)

    @property
    def engaged(self) -> bool:
        return self._engaged

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind == QEvent.Type.MouseButtonPress:
            self._engaged = True
        elif kind == QEvent.Type.WindowActivate and watched is self and not self._engaged \
                and not self._given_back:
            # A window manager that activates every new window: the keyboard goes back to
            # where the person was typing (once; turning to the prompt later is theirs).
            self._given_back = True
            QTimer.singleShot(0, self._give_back)
        elif kind in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease) and not self._engaged \
                and isinstance(event, QKeyEvent):
            if event.key() in (Qt.Key.Key_Tab, Qt.Key.Key_Backtab):
                if kind == QEvent.Type.KeyPress:
                    self._engaged = True
                return False
            if event.key() == Qt.Key.Key_Escape:
                return False  # Esc denies, as everywhere
            return self._hand_back(event)
        return False

    def _give_back(self) -> None:
        target = self._typing_target() if self._typing_target is not None else None
        if self._engaged or target is None or not target.isVisible():
            return
        target.window().activateWindow()
        target.setFocus(Qt.FocusReason.OtherFocusReason)

    def _hand_back(self, event: QKeyEvent) -> bool:
        """A key the person meant for where they were typing goes there, and so do the
        keys after it."""
        target = self._typing_target() if self._typing_target is not None else None
        if target is None or not target.isVisible() or not target.isEnabled():
            return True  # swallowed: it answers nothing either way
        window = target.window()
        window.activateWindow()
        target.setFocus(Qt.FocusReason.OtherFocusReason)
        copy = QKeyEvent(event.type(), event.key(), event.modifiers(), event.text(),
                         event.isAutoRepeat(), event.count())
        QApplication.sendEvent(target, copy)
        return True

    @property
    def answered(self) -> bool:
        return self._answered

    def answer(self, decision: Decision) -> None:
        if self._answered:
            return
        self._answered = True
        self.decided.emit(decision)
        self.done(QDialog.DialogCode.Accepted if decision is not Decision.DENY
                  else QDialog.DialogCode.Rejected)

    def dismiss(self) -> None:
        """The turn was stopped: close without answering."""
        self._answered = True
        self.done(QDialog.DialogCode.Rejected)

    def reject(self) -> None:  # Esc
        if not self._answered:
            self.answer(Decision.DENY)
            return
        super().reject()

    def closeEvent(self, event: QCloseEvent) -> None:
        if not self._answered:
            self._answered = True
            self.decided.emit(Decision.DENY)
        super().closeEvent(event)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
