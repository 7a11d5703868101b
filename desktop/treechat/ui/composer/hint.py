"""The keyboard hint in the composer's footer ("Enter to send · Shift+Enter for a new line"):
the longest wording that fits the room the footer leaves it, a shorter one where that does not
fit, nothing when cramped. It never asks for room, and a word is never cut in half."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

if TYPE_CHECKING:
    from PySide6.QtGui import QResizeEvent, QShowEvent


class ComposerHint(QLabel):
    """Takes the footer's spare width (so Send keeps its size) and shows what fits in it."""

    def __init__(self, wordings: Sequence[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ComposerHint")
        self._wordings = tuple(wordings)
        self._shown = True
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if self._wordings:
            self.setAccessibleDescription(self._wordings[0])
        self._fit()

    def set_shown(self, shown: bool) -> None:
        """Say the hint or keep quiet; the label keeps its place either way."""
        if shown != self._shown:
            self._shown = shown
            self._fit()

    def wording(self) -> str:
        """What is on screen now ("" when nothing fits or the hint is off)."""
        return self.text()

    def sizeHint(self) -> QSize:
        widest = max((self.fontMetrics().horizontalAdvance(w) for w in self._wordings),
                     default=0)
        return QSize(widest, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        return QSize(0, super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self._fit()

    def _fit(self) -> None:
        room = self.contentsRect().width()
        metrics = self.fontMetrics()
        chosen = ""
        if self._shown:
            chosen = next((w for w in self._wordings if metrics.horizontalAdvance(w) <= room),
                          "")
        if chosen != self.text():
            self.setText(chosen)
