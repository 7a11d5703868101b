"""The composer's text field: Enter sends, Shift+Enter starts a new line, and the field grows
with its text up to a limit before it scrolls. Where the window is short it gives up height
first (down to a few lines, scrolling inside its own box) rather than push on the footer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QFrame, QPlainTextEdit, QSizePolicy, QWidget

if TYPE_CHECKING:
    from PySide6.QtGui import QFocusEvent, QKeyEvent, QResizeEvent

MIN_LINES = 1
MAX_LINES = 10
SQUEEZED_LINES = 3  # the least a long message keeps on screen when the window is short


class ComposerInput(QPlainTextEdit):
    submitted = Signal()
    escapePressed = Signal()
    focusChanged = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ComposerInput")
        self.setAccessibleName("Message")
        self.setAccessibleDescription("Enter sends, Shift+Enter adds a new line")
        self.setPlaceholderText("Message Treechat…")
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setTabChangesFocus(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        # Maximum: never taller than its text asks, shorter when the layout is short of room
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Maximum)
        self._fitted = 0
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.document().setDocumentMargin(4)
        self.document().documentLayout().documentSizeChanged.connect(self._fit_height)
        self._fit_height()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        mods = event.modifiers()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if mods & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")
                return
            if not (mods & Qt.KeyboardModifier.AltModifier):
                event.accept()
                self.submitted.emit()
                return
        if key == Qt.Key.Key_Escape:
            self.escapePressed.emit()
            event.accept()
            return
        super().keyPressEvent(event)

    def focusInEvent(self, event: QFocusEvent) -> None:
        super().focusInEvent(event)
        self.focusChanged.emit(True)

    def focusOutEvent(self, event: QFocusEvent) -> None:
        super().focusOutEvent(event)
        self.focusChanged.emit(False)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_height()

    def _line_height(self) -> int:
        return QFontMetrics(self.font()).lineSpacing()

    def _fit_height(self, *_: object) -> None:
        doc = self.document()
        margins = self.contentsMargins()
        frame = int(doc.documentMargin() * 2) + margins.top() + margins.bottom()
        lines = 0
        block = doc.begin()
        while block.isValid():
            layout = block.layout()
            lines += max(1, layout.lineCount() if layout is not None else 1)
            block = block.next()
        lines = min(MAX_LINES, max(MIN_LINES, lines))
        height = lines * self._line_height() + frame + 2
        if height != self._fitted:
            self._fitted = height
            squeezed = min(lines, SQUEEZED_LINES) * self._line_height() + frame + 2
            self.setMinimumHeight(squeezed)
            self.setMaximumHeight(height)
            self.updateGeometry()

    def fitted_height(self) -> int:
        """The height its text asks for (up to the limit); it may be given less."""
        return self._fitted

    def sizeHint(self) -> QSize:
        return QSize(400, self._fitted)

    def minimumSizeHint(self) -> QSize:
        return QSize(100, self.minimumHeight())
