"""The composer's occupancy ring: how full the model's window is (total_used / window),
coloured by level, with the numbers and their basis in the tooltip. Clicking opens /context."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QAbstractButton, QWidget

from ..common.theme import colors_of, level_color
from . import format as fmt

if TYPE_CHECKING:
    from ...core.occupancy import Occupancy

RING = 18
STROKE = 3.0


class OccupancyRing(QAbstractButton):
    """Reads one `Occupancy` record; the breakdown dialog is handed the very same one."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._occupancy: Occupancy | None = None
        self._pending = 0  # tokens of what the box holds: typed text and chips
        self._window = 0  # the chosen model's window, for a new chat (no record yet)
        self.setObjectName("OccupancyRing")
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        self.setAccessibleName("Context usage")
        self._refresh_text()

    @property
    def occupancy(self) -> Occupancy | None:
        return self._occupancy

    @property
    def fraction(self) -> float:
        """The share of the window the request holds (what the Context tab and /context
        show as their total)."""
        occ = self._occupancy
        return 0.0 if occ is None else min(1.0, max(0.0, occ.fraction))

    @property
    def pending(self) -> int:
        return self._pending

    @property
    def next_fraction(self) -> float:
        """The share the next request would hold if sent now: the request with what the box
        holds. The ring's figure counts it; the tooltip names both."""
        occ = self._occupancy
        if occ is None:
            return min(1.0, self._pending / self._window) if self._window > 0 else 0.0
        if occ.window <= 0:
            return 1.0
        return min(1.0, max(0.0, (occ.total_used + self._pending) / occ.window))

    def label(self) -> str:
        """The short figure painted beside the ring."""
        occ = self._occupancy
        if occ is None:
            if self._pending > 0 and self._window > 0:
                return fmt.percent(self._pending / self._window)
            return "–"
        if self._pending <= 0:
            return fmt.percent(occ.fraction)
        return fmt.percent((occ.total_used + self._pending) / occ.window
                           if occ.window > 0 else 1.0)

    def set_pending(self, tokens: int, window: int = 0) -> None:
        """`window`: the chosen model's, for a new chat that has no record yet."""
        if tokens == self._pending and window == self._window:
            return
        self._pending = max(0, tokens)
        self._window = max(0, window)
        self._refresh_text()
        self.updateGeometry()  # its figure may have grown a digit
        self.update()

    def set_occupancy(self, occupancy: Occupancy | None) -> None:
        self._occupancy = occupancy
        self._refresh_text()
        self.updateGeometry()
        self.update()

    def _refresh_text(self) -> None:
        occ = self._occupancy
        if occ is None and self._pending > 0 and self._window > 0:
            text = fmt.new_chat_pending_text(self._pending, self._window)
            self.setToolTip(text)
            self.setAccessibleDescription(text)
        elif occ is None:
            self.setToolTip("Context usage appears once a chat is open")
            self.setAccessibleDescription("No chat open")
        else:
            self.setToolTip(fmt.tooltip(occ, self._pending))
            self.setAccessibleDescription(f"{fmt.headline(occ)}, {occ.basis}")

    def sizeHint(self) -> QSize:
        fm = QFontMetrics(self.font())
        # room for its figure, even past 100% (a paste far larger than the window): never cut
        text = max(fm.horizontalAdvance("100%"), fm.horizontalAdvance(self.label()))
        return QSize(RING + 10 + text, max(RING + 8, fm.height() + 8))

    def paintEvent(self, event: QPaintEvent) -> None:
        colors = colors_of(self.palette())
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        if self.underMouse() or self.hasFocus():
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(QColor(colors.hover))
            p.drawRoundedRect(QRectF(self.rect()), 7, 7)
        top = (self.height() - RING) / 2
        ring = QRectF(4 + STROKE / 2, top + STROKE / 2, RING - STROKE, RING - STROKE)
        track = QPen(QColor(colors.border))
        track.setWidthF(STROKE)
        p.setPen(track)
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawEllipse(ring)
        fraction = self.fraction
        ahead = self.next_fraction
        # Qt angles are 1/16 degree, counter-clockwise from 3 o'clock: start at 12, run
        # clockwise.
        if ahead > fraction:
            # what the box holds, paler, after the request's own share
            waiting = QColor(level_color(ahead, colors))
            waiting.setAlphaF(0.45)
            pen = QPen(waiting)
            pen.setWidthF(STROKE)
            p.setPen(pen)
            start = 90 * 16 - round(fraction * 360 * 16)
            p.drawArc(ring, start, -max(1, round((ahead - fraction) * 360 * 16)))
        if self._occupancy is not None and fraction > 0:
            arc = QPen(QColor(level_color(ahead, colors)))
            arc.setWidthF(STROKE)
            arc.setCapStyle(Qt.PenCapStyle.RoundCap)
            p.setPen(arc)
            p.drawArc(ring, 90 * 16, -max(1, round(fraction * 360 * 16)))
        p.setPen(QColor(colors.muted))
        text_rect = QRectF(4 + RING + 6, 0, self.width() - RING - 10, self.height())
        p.drawText(text_rect, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                   self.label())
        p.end()
