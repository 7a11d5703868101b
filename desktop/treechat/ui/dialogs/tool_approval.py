"""The prompt a tool call from an MCP server waits on: which chat, which server, which tool,
with which arguments, and three answers. It is non-modal and answers through `decided`;
closing it any other way (Esc, the title bar) is a Deny."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ...services.mcp import ApprovalRequest, Decision


class ToolApprovalDialog(QDialog):
    decided = Signal(object)  # Decision

    def __init__(
        self, request: ApprovalRequest, chat_title: str = "", parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.request = request
        self._answered = False
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
        self.note = QLabel("Nothing runs until you answer. Stopping the reply denies it.")
        self.note.setObjectName("DialogMuted")
        self.note.setWordWrap(True)

        self.allow_once_button = QPushButton("Allow once")
        self.always_button = QPushButton("Always for this tool in this chat")
        self.deny_button = QPushButton("Deny")
        self.allow_once_button.setDefault(True)
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
