"""A stacked horizontal bar of the context window: one segment per category, free space as
the empty remainder. Used as the breakdown dialog's picture of the record."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF, QSize
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPaintEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

from ..common.theme import Colors, colors_of

if TYPE_CHECKING:
    from ...core.occupancy import Occupancy

# Each category keeps its hue in both schemes; lightness follows the scheme.
CATEGORY_HUES = {
    "system": 265,
    "tools": 200,
    "summaries": 35,
    "messages": 215,
    "tool_results": 160,
    "attachments": 320,
}


def category_color(key: str, colors: Colors) -> QColor:
    if key == "free":
        return QColor(colors.border)
    hue = CATEGORY_HUES.get(key, 0)
    return QColor.fromHsl(hue, 150 if colors.dark else 170, 150 if colors.dark else 120)


class ContextUsageBar(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._occupancy: Occupancy | None = None
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setAccessibleName("Context window usage by category")

    def set_occupancy(self, occupancy: Occupancy | None) -> None:
        self._occupancy = occupancy
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(360, 14)

    def paintEvent(self, event: QPaintEvent) -> None:
        colors = colors_of(self.palette())
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        bounds = QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5)
        clip = QPainterPath()
        clip.addRoundedRect(bounds, 6, 6)
        p.fillPath(clip, QColor(colors.border))
        occ = self._occupancy
        if occ is not None and occ.window > 0:
            p.setClipPath(clip)
            x = bounds.left()
            for key, value in occ.breakdown:
                if key == "free" or value <= 0:
                    continue
                w = bounds.width() * value / occ.window
                p.fillRect(QRectF(x, bounds.top(), w, bounds.height()), category_color(key, colors))
                x += w
        p.end()
