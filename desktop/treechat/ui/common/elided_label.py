"""A one-line label that elides its text to the room it is given instead of asking for room
for all of it: a long chat title or attach chip never widens the window."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QWidget

MIN_CHARS = 8  # how little of the text it may shrink to, in average characters


class ElidedLabel(QLabel):
    """`text()` is the whole text; the label shows as much as fits, the rest in a tooltip.
    With shorter ways of saying the same (`set_texts`), the longest that fits is shown whole
    before the shortest is cut."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self._shorter: tuple[str, ...] = ()
        self.setText(text)

    def text(self) -> str:  # the whole text, not what is shown
        return self._full

    def shown_text(self) -> str:
        return super().text()

    def setText(self, text: str) -> None:
        self.set_texts(text)

    def set_texts(self, text: str, *shorter: str) -> None:
        """Show `text`, or where it does not fit the first of `shorter` that does."""
        self._full = text
        self._shorter = shorter
        self._elide()

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        return QSize(min(hint.width(), self.fontMetrics().averageCharWidth() * MIN_CHARS),
                     hint.height())

    def sizeHint(self) -> QSize:
        metrics = self.fontMetrics()
        return QSize(metrics.horizontalAdvance(self._full) + 2, super().sizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        metrics = self.fontMetrics()
        room = max(0, self.width())
        candidates = (self._full, *self._shorter)
        fitting = next((c for c in candidates if metrics.horizontalAdvance(c) <= room), None)
        shown = fitting if fitting is not None else metrics.elidedText(
            candidates[-1], Qt.TextElideMode.ElideRight, room)
        super().setText(shown)
        self.setToolTip(self._full if shown != self._full else "")
