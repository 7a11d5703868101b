"""The history graph view: zoom (wheel, keys, fit), pan, the keyboard cursor and the
minimap over a HistoryScene. Gestures (click, drag to attach, menus, previews) are in
interactions.py. Every action is a signal; nothing here talks to services."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QEvent, QMimeData, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import (
    QContextMenuEvent,
    QHelpEvent,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QResizeEvent,
    QWheelEvent,
)
from PySide6.QtWidgets import (
    QFrame,
    QGraphicsView,
    QMenu,
    QWidget,
)

from ...services.turns.sessions import SessionView
from .interactions import (
    PointerGestures,
    context_menu,
    cursor_target,
    node_menu,
    preview_html,
    show_preview,
)
from .items import (
    DETAIL_SCALE,
    DX,
    DY,
    LABEL_LOD,
    GraphStyle,
)
from .minimap import MINIMAP_MARGIN, GraphMinimap
from .scene import HistoryScene

# The view must be this many times the minimap's size, each way, to show it.
MINIMAP_ROOM = 2.0
MIN_SCALE = 0.004
MAX_SCALE = 3.0
FIT_MARGIN = 10.0  # pixels kept between a fitted graph, labels included, and the edges
LABEL_ZOOM = LABEL_LOD * 1.001  # the least zoom labels are drawn at, with room for rounding


class HistoryGraphView(QGraphicsView):
    """Navigation and gestures over a HistoryScene. Every action is a signal; nothing here
    talks to services."""

    checkoutRequested = Signal(str)
    retryRequested = Signal(str)
    editRequested = Signal(str)
    branchRequested = Signal(str)
    pinRequested = Signal(str, bool)
    hideRequested = Signal(str)
    attachRequested = Signal(str)
    mergeRequested = Signal(list)
    selectionChangedTo = Signal(list)
    zoomChanged = Signal(float)
    cursorMoved = Signal(str)  # the keyboard cursor's node

    def __init__(self, parent: QWidget | None = None, style: GraphStyle | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("HistoryGraphView")
        self.setAccessibleName("History graph")
        style = style or GraphStyle.from_palette(self.palette())
        from .accessible import install_graph_accessibility

        install_graph_accessibility()  # a screen reader reads the nodes as a tree's items
        self.graph_scene = HistoryScene(style, self)
        self.setScene(self.graph_scene)
        self.setRenderHints(QPainter.RenderHint.Antialiasing
                            | QPainter.RenderHint.TextAntialiasing)
        self.setOptimizationFlags(QGraphicsView.OptimizationFlag.DontAdjustForAntialiasing
                                  | QGraphicsView.OptimizationFlag.DontSavePainterState)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.SmartViewportUpdate)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setDragMode(QGraphicsView.DragMode.NoDrag)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setBackgroundBrush(style.background)
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.busy = False
        self.gestures = PointerGestures(self)
        self._fitted_once = False
        self._navigating = False
        self.minimap = GraphMinimap(self)
        self.graph_scene.changed.connect(lambda _r: self.minimap.update())
        self.graph_scene.itemsCompleted.connect(self.viewport().update)

    # --- model ---------------------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self.graph_scene.session_id

    def show_view(self, view: SessionView) -> None:
        scene = self.graph_scene
        before = len(scene.nodes)
        afresh = scene.show_view(view)  # another chat, or a long chat's whole after its end
        if len(scene.nodes) != before or afresh:
            self.minimap.invalidate()
        if afresh:
            self.home()
        self._sync_detail()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self.restyle()

    def restyle(self) -> None:
        style = GraphStyle.from_palette(self.palette())
        self.setBackgroundBrush(style.background)
        self.graph_scene.set_style(style)
        self.minimap.invalidate()

    def selected_nodes(self) -> list[str]:
        return list(self.graph_scene.selected)

    def select(self, node_ids: Iterable[str]) -> None:
        self.graph_scene.set_selected(node_ids)
        self.selectionChangedTo.emit(self.selected_nodes())

    # --- zoom and pan --------------------------------------------------------------

    @property
    def zoom(self) -> float:
        return self.transform().m11()

    def _show_at(self, scale: float, centre: QPointF) -> None:
        """Zoom to `scale` around `centre` as one step (no detail change in between)."""
        self._navigating = True
        try:
            self.resetTransform()
            self.scale(scale, scale)
            self.centerOn(centre)
        finally:
            self._navigating = False
        self._sync_detail()

    def set_zoom(self, scale: float, anchor: QPointF | None = None) -> None:
        self.graph_scene.set_label_limit(None)
        scale = min(MAX_SCALE, max(MIN_SCALE, scale))
        centre = anchor if anchor is not None else self.mapToScene(
            self.viewport().rect().center())
        self._show_at(scale, centre)

    def zoom_by(self, factor: float) -> None:
        """Zoom by `factor` (the buttons and keys) around a node, which stays where it is on
        screen: HEAD when it is in view, else the node nearest the middle. Around the middle
        of the view, a zoom after Fit (which centres the labels, to the nodes' right) pushed
        every node out of the left edge."""
        self.graph_scene.set_label_limit(None)
        anchor = self._zoom_anchor()
        before = self.mapFromScene(anchor) if anchor is not None else None
        old = self.transformationAnchor()
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        target = min(MAX_SCALE, max(MIN_SCALE, self.zoom * factor))
        self.scale(target / self.zoom, target / self.zoom)
        self.setTransformationAnchor(old)
        if anchor is not None and before is not None:
            moved = self.mapFromScene(anchor) - before
            for bar, by in ((self.horizontalScrollBar(), moved.x()),
                            (self.verticalScrollBar(), moved.y())):
                bar.setValue(bar.value() + by)
        self._sync_detail()

    def _zoom_anchor(self) -> QPointF | None:
        scene = self.graph_scene
        shown = self.mapToScene(self.viewport().rect()).boundingRect()
        if scene.head is not None and scene.head in scene.layout:
            head = scene.point_of(scene.head)
            if shown.contains(head):
                return head
        middle = shown.center()
        points = [scene.point_of(n) for n in scene.nodes if n in scene.layout]
        if not points:
            return None
        return min(points, key=lambda p: (p - middle).manhattanLength())

    def fit_all(self) -> None:
        """The whole graph in view. When it can be shown at a zoom that draws labels, every
        label shows in full inside the view; when only the nodes fit at that zoom, labels
        are drawn at it and cut where the view ends, rather than zooming out past them."""
        scene = self.graph_scene
        scene.set_label_limit(None)
        nodes = scene.nodes_rect()
        if scene.nodes and self._fit_scale(nodes) >= LABEL_LOD:
            labels = scene.labels_rect()
            scale = self._fit_scale(labels)
            if scale >= LABEL_LOD:
                self._show_rect(labels, scale)
                return
            width = (self.viewport().width() - 2 * FIT_MARGIN) / LABEL_ZOOM
            shown = QRectF(nodes.left(), labels.top(), width, labels.height())
            self._show_rect(shown, LABEL_ZOOM)
            scene.set_label_limit(shown.right())
            return
        rect = scene.graph_rect().adjusted(-DX, -DY, DX, DY)
        self._navigating = True
        try:
            self.fitInView(rect, Qt.AspectRatioMode.KeepAspectRatio)
            if self.zoom > 1.0:
                self.resetTransform()
                self.centerOn(rect.center())
        finally:
            self._navigating = False
        self._sync_detail()

    def _fit_scale(self, rect: QRectF) -> float:
        """The zoom that shows `rect` inside the viewport's margins (at most 100%)."""
        vp = self.viewport().rect()
        if rect.isEmpty():
            return 1.0
        return min(1.0, (vp.width() - 2 * FIT_MARGIN) / rect.width(),
                   (vp.height() - 2 * FIT_MARGIN) / rect.height())

    def _show_rect(self, rect: QRectF, scale: float) -> None:
        vp = self.viewport().rect()
        centre = rect.center()
        visible = QRectF(0, 0, vp.width() / scale, vp.height() / scale)
        visible.moveCenter(centre)
        self.graph_scene.reach(visible)  # or the view would centre the smaller scene rect
        self._show_at(scale, centre)

    def center_on_node(self, node_id: str, zoom: float | None = None) -> None:
        if node_id not in self.graph_scene.layout:
            return
        point = self.graph_scene.point_of(node_id)
        # a little left of centre: labels run to the right of their node
        point += QPointF(self.viewport().width() * 0.2 / (zoom or self.zoom or 1.0), 0)
        if zoom is not None:
            self.set_zoom(zoom, point)
        else:
            self.centerOn(point)
        self._sync_detail()

    def home(self) -> None:
        """Where a freshly opened session starts: the whole graph if it fits at a readable
        zoom, otherwise HEAD at 100%."""
        scene = self.graph_scene
        rect = scene.graph_rect()
        vp = self.viewport().rect()
        fits = rect.width() <= vp.width() * 1.1 and rect.height() <= vp.height() * 1.1
        if fits or scene.head is None:
            self.fit_all()
        else:
            self.center_on_node(scene.head, 1.0)

    def _sync_detail(self) -> None:
        detailed = self.zoom >= DETAIL_SCALE
        self.graph_scene.set_detail(detailed)
        if detailed:
            self._materialize_visible()
        self._update_minimap()
        self.zoomChanged.emit(self.zoom)

    def _materialize_visible(self) -> None:
        if self.graph_scene.complete:
            return
        rect = self.mapToScene(self.viewport().rect()).boundingRect()
        self.graph_scene.materialize_rows(rect.top(), rect.bottom())

    def wheelEvent(self, event: QWheelEvent) -> None:
        delta = event.angleDelta()
        if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            bar = self.horizontalScrollBar()
            bar.setValue(bar.value() - delta.y())
            return
        steps = delta.y() / 120.0
        if not steps:
            return
        factor = 1.18 ** steps
        self.graph_scene.set_label_limit(None)
        target = min(MAX_SCALE, max(MIN_SCALE, self.zoom * factor))
        self.scale(target / self.zoom, target / self.zoom)
        self._sync_detail()
        event.accept()

    def scrollContentsBy(self, dx: int, dy: int) -> None:
        super().scrollContentsBy(dx, dy)
        if dx:  # labels end at the view's edge: scrolled sideways, they are drawn again
            self.viewport().update()
        if not self._navigating and self.graph_scene.detailed:
            self._materialize_visible()
        self._update_minimap()

    def _update_minimap(self) -> None:
        """The minimap only when part of the graph is out of sight, and only in a view with
        room for it: in a low or narrow one it would cover the labels it helps to find."""
        visible = self.mapToScene(self.viewport().rect()).boundingRect()
        everything = self.graph_scene.graph_rect()
        room = self.viewport().size()
        roomy = (room.width() >= MINIMAP_ROOM * self.minimap.width()
                 and room.height() >= MINIMAP_ROOM * self.minimap.height())
        shown = roomy and bool(self.graph_scene.nodes) and not visible.contains(everything)
        self.minimap.setVisible(shown)
        # the last rows can be scrolled clear of the minimap in the bottom corner (and of a
        # sideways scroll bar under it, with a label's height to spare)
        covered = (self.minimap.height() + MINIMAP_MARGIN * 2
                   + self.horizontalScrollBar().sizeHint().height() + DY)
        zoom = max(self.zoom, 1e-6)  # scroll bar values are pixels at this zoom
        self.graph_scene.set_bottom_room(covered / zoom if shown else 0.0)
        rect = self.graph_scene.sceneRect()
        reach = (self.verticalScrollBar().maximum() + self.viewport().height()) / zoom
        if shown and reach < rect.bottom() - 1:  # the scroll bars follow the new room now
            self.updateSceneRect(rect)
        self.minimap.update()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        m = self.minimap
        m.move(self.viewport().width() - m.width() - MINIMAP_MARGIN,
               self.viewport().height() - m.height() - MINIMAP_MARGIN)
        self._update_minimap()
        if not self._fitted_once and self.graph_scene.nodes:
            self._fitted_once = True
            self.home()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        if key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            self.zoom_by(1.25)
        elif key == Qt.Key.Key_Minus:
            self.zoom_by(0.8)
        elif key == Qt.Key.Key_0:
            self.fit_all()
        elif key == Qt.Key.Key_H and self.graph_scene.head:
            self.center_on_node(self.graph_scene.head, max(self.zoom, 1.0))
        elif key in (Qt.Key.Key_Up, Qt.Key.Key_Down, Qt.Key.Key_Left, Qt.Key.Key_Right):
            self.move_cursor(key)
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
            cursor = self.graph_scene.focused
            if cursor is not None:
                if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
                    self.toggle_selected(cursor)
                else:
                    self.checkoutRequested.emit(cursor)
        else:
            super().keyPressEvent(event)

    def move_cursor(self, key: int) -> None:
        """Walk the graph from the keyboard (see `interactions.cursor_target`)."""
        target = cursor_target(self.graph_scene, key)
        if target is not None:
            self.graph_scene.set_focused(target)
            self.center_on_node(target, max(self.zoom, 1.0))
            self.cursorMoved.emit(target)

    # --- gestures (see interactions) ---------------------------------------------------

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if not self.gestures.press(event):
            super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if not self.gestures.move(event):
            super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if not self.gestures.release(event):
            super().mouseReleaseEvent(event)

    def toggle_selected(self, node_id: str) -> None:
        current = self.selected_nodes()
        if node_id in current:
            current.remove(node_id)
        else:
            current.append(node_id)
        self.select(current)

    def drag_mime(self, node_id: str) -> QMimeData:
        """What dragging `node_id` out of the graph carries (an attach of that head)."""
        return self.gestures.drag.mime(node_id)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        context_menu(self, event)

    def node_menu(self, node_id: str) -> QMenu:
        return node_menu(self, node_id)

    def viewportEvent(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            assert isinstance(event, QHelpEvent)
            show_preview(self, event)
            return True
        return super().viewportEvent(event)

    def preview_html(self, node_id: str) -> str:
        return preview_html(self.graph_scene, node_id)
