"""The overview in the graph's corner: the whole graph in one pixmap and the viewport as a
frame; click or drag in it to move there."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QPointF, QRectF, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPen,
    QPixmap,
)
from PySide6.QtWidgets import (
    QFrame,
)

if TYPE_CHECKING:
    from .view import HistoryGraphView

MINIMAP_MARGIN = 8  # pixels between the minimap and the view's edges


class GraphMinimap(QFrame):
    """The whole graph in a corner with the visible area framed; click or drag to go there."""

    def __init__(self, view: HistoryGraphView) -> None:
        super().__init__(view)
        self.view = view
        self.setObjectName("GraphMinimap")
        self.setFixedSize(112, 150)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip("Overview: click or drag to move around")
        self._pixmap: QPixmap | None = None
        self._scale = 1.0
        self._origin = QPointF()
        self._offset = QPointF()
        self._stale = True

    def invalidate(self) -> None:
        self._stale = True
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:
        scene = self.view.graph_scene
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        bg = QColor(scene.graph_style.background)
        bg.setAlpha(235)
        painter.setPen(QPen(scene.graph_style.muted, 0.6))
        painter.setBrush(bg)
        painter.drawRoundedRect(QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5), 6, 6)
        if self._stale:
            inner = self.size() - QSize(12, 12)
            self._pixmap, self._scale, self._origin = scene.render_overview(inner)
            ps = self._pixmap.deviceIndependentSize()
            self._offset = QPointF((self.width() - ps.width()) / 2,
                                   (self.height() - ps.height()) / 2)
            self._stale = False
        if self._pixmap is not None:
            painter.drawPixmap(self._offset, self._pixmap)
        visible = self.view.mapToScene(self.view.viewport().rect()).boundingRect()
        frame = QRectF(self._to_map(visible.topLeft()), self._to_map(visible.bottomRight()))
        if frame.width() < 8 or frame.height() < 8:  # keep a far zoomed-in frame findable
            c = frame.center()
            frame = QRectF(c.x() - max(4, frame.width() / 2), c.y() - max(4, frame.height() / 2),
                           max(8, frame.width()), max(8, frame.height()))
        frame = frame.intersected(QRectF(self.rect()).adjusted(1, 1, -1, -1))
        accent = QColor(scene.graph_style.accent)
        painter.setPen(QPen(accent, 1.5))
        accent.setAlpha(40)
        painter.setBrush(accent)
        painter.drawRect(frame)

    def _to_map(self, p: QPointF) -> QPointF:
        return (p - self._origin) * self._scale + self._offset

    def _to_scene(self, p: QPointF) -> QPointF:
        return (p - self._offset) / max(self._scale, 1e-9) + self._origin

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self.view.centerOn(self._to_scene(event.position()))
        event.accept()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if event.buttons() & Qt.MouseButton.LeftButton:
            self.view.centerOn(self._to_scene(event.position()))
        event.accept()


