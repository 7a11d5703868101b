"""Edits a sent message in place, over its row in the chat list; sending forks a new version
and the original stays."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QColor, QKeyEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ..common.elided_label import ElidedLabel
from ..richtext.theme import mix
from .style import ChatColors


class MessageEditor(QFrame):
    """Edits a sent message in place; sending forks a new version, the original stays."""

    submitted = Signal(str)
    cancelled = Signal()
    heightChanged = Signal()

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("messageEditor")
        self.setAutoFillBackground(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.text_edit = QPlainTextEdit(self)
        self.text_edit.setPlainText(text)
        self.text_edit.setFrameShape(QFrame.Shape.NoFrame)
        self.text_edit.setAccessibleName("Edit message")
        self.text_edit.setTabChangesFocus(True)
        self.text_edit.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.hint: QLabel = ElidedLabel("Enter sends a new version (the original is kept) · "
                                        "Shift+Enter: new line · Esc: cancel", self)
        self.hint.setEnabled(False)
        self.cancel_button = QPushButton("Cancel", self)
        self.send_button = QPushButton("Send", self)
        self.send_button.setObjectName("sendEdit")
        self.cancel_button.setObjectName("cancelEdit")
        self.send_button.setDefault(True)
        self.send_button.setAccessibleName("Send edited message")
        self.cancel_button.clicked.connect(self.cancelled.emit)
        self.send_button.clicked.connect(self._submit)
        buttons = QHBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.addWidget(self.hint, 1)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.send_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 8, 10, 8)
        layout.setSpacing(6)
        layout.addWidget(self.text_edit, 1)
        layout.addLayout(buttons)
        self.text_edit.document().contentsChanged.connect(self.heightChanged.emit)
        self.text_edit.textChanged.connect(self._update_send)
        self.setFocusProxy(self.text_edit)
        self.text_edit.installEventFilter(self)
        self._busy = False
        cursor = self.text_edit.textCursor()
        cursor.movePosition(cursor.MoveOperation.End)
        self.text_edit.setTextCursor(cursor)

    def text(self) -> str:
        return self.text_edit.toPlainText()

    def apply_colors(self, c: ChatColors) -> None:
        """Look like the bubble being edited, with the send button as the one accent."""
        def rgb(color: QColor) -> str:
            return color.name(QColor.NameFormat.HexArgb)

        hover = mix(c.accent, c.text, 0.15)
        self.setStyleSheet(
            f"QFrame#messageEditor {{ background: {rgb(c.user_bubble)};"
            f" border: 1px solid {rgb(mix(c.user_bubble, c.accent, 0.6))}; border-radius: 14px; }}"
            f" QPlainTextEdit {{ background: transparent; border: none; color: {rgb(c.text)};"
            f" selection-background-color: {rgb(c.accent)}; }}"
            f" QLabel {{ color: {rgb(c.muted)}; background: transparent; border: none; }}"
            f" QPushButton {{ border-radius: 8px; padding: 5px 14px; border: 1px solid"
            f" {rgb(c.card_border)}; background: {rgb(c.base)}; color: {rgb(c.text)}; }}"
            f" QPushButton:hover {{ background: {rgb(c.hover)}; }}"
            f" QPushButton#sendEdit {{ background: {rgb(c.accent)}; color: {rgb(c.accent_text)};"
            f" border: none; font-weight: 600; }}"
            f" QPushButton#sendEdit:hover {{ background: {rgb(hover)}; }}"
            f" QPushButton#sendEdit:disabled {{ background: {rgb(c.hover)};"
            f" color: {rgb(c.muted)}; }}"
        )

    def set_text(self, text: str) -> None:
        self.text_edit.setPlainText(text)
        cursor = self.text_edit.textCursor()
        cursor.movePosition(cursor.MoveOperation.End)  # typing goes on where the text ends
        self.text_edit.setTextCursor(cursor)

    def set_busy(self, busy: bool) -> None:
        self._busy = busy
        self._update_send()
        self.send_button.setToolTip("Unavailable while a reply is running" if busy else
                                    "Send the edited message (Enter)")

    def _update_send(self) -> None:
        self.send_button.setEnabled(not self._busy and bool(self.text().strip()))

    def wanted_height(self) -> int:
        fm = self.text_edit.fontMetrics()
        lines = max(2, min(12, self.text_edit.document().lineCount() + 1))
        return int(lines * fm.lineSpacing() + 16 + 8 + 8 + self.send_button.sizeHint().height()
                   + 6)

    def _submit(self) -> None:
        if self.send_button.isEnabled():
            self.submitted.emit(self.text())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.text_edit and event.type() == QEvent.Type.KeyPress:
            assert isinstance(event, QKeyEvent)
            if event.key() == Qt.Key.Key_Escape:
                self.cancelled.emit()
                return True
            # Like the composer: Enter sends, Shift+Enter is a new line (Ctrl+Enter sends too).
            if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not (
                event.modifiers() & Qt.KeyboardModifier.ShiftModifier
            ):
                self._submit()
                return True
        return super().eventFilter(watched, event)
