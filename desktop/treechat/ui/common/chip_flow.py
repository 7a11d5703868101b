"""A row of chips that wraps into lines within the width it is given and never asks for more:
however many chips are staged, they never widen the window. (Qt ships no flow layout; this is
the small part of one the chip rows need.)"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QRect, QSize
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

CHIP_SPACING = 6


def flow(widths_heights: Sequence[tuple[int, int]], width: int,
         spacing: int = CHIP_SPACING) -> tuple[list[QRect], int]:
    """Where each chip of the given size hint goes within `width` (a chip wider than a line is
    narrowed to it), and the height all of them take."""
    width = max(1, width)
    x = y = line_h = 0
    rects: list[QRect] = []
    for hint_w, hint_h in widths_heights:
        w = min(hint_w, width)
        if x and x + w > width:
            x, y = 0, y + line_h + spacing
            line_h = 0
        rects.append(QRect(x, y, w, hint_h))
        x += w + spacing
        line_h = max(line_h, hint_h)
    return rects, (y + line_h + 2 if rects else 0)


class ChipFlow(QWidget):
    """Lays `chips()` out in lines; subclasses say which widgets are the chips."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # never asks the window for width: the chips wrap to what the parent has
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self._height = 0

    def chip_widgets(self) -> Sequence[QWidget]:
        raise NotImplementedError

    def _hints(self) -> list[tuple[int, int]]:
        return [(h.width(), h.height()) for h in (c.sizeHint() for c in self.chip_widgets())]

    def place(self) -> None:
        """Put the chips in lines within the row's width (after they change)."""
        rects, height = flow(self._hints(), self.width())
        for chip, rect in zip(self.chip_widgets(), rects, strict=True):
            chip.setGeometry(rect)
        if height != self._height:
            self._height = height
            self.updateGeometry()

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return flow(self._hints(), width)[1]

    def sizeHint(self) -> QSize:
        return QSize(0, self.heightForWidth(max(1, self.width())))

    def minimumSizeHint(self) -> QSize:
        return QSize(0, 0)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.place()
