"""The history graph: a scene that mirrors a session's DAG (grown incrementally from the pure
layout in core/layout.py) and a view to navigate it: click to check out, hover to preview,
right-click for retry / edit / branch / pin / hide, drag a node onto the composer to attach it,
select heads to merge them. Zoom with the wheel, pan by dragging, fit, minimap."""

from __future__ import annotations

import html
import itertools
import json
import time
from collections.abc import Iterable, Sequence
from typing import Any

from PySide6.QtCore import QEvent, QMimeData, QPoint, QPointF, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QDrag,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QPainterPath,
    QPaintEvent,
    QPen,
    QPixmap,
    QResizeEvent,
    QWheelEvent,
)
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QGraphicsPathItem,
    QGraphicsScene,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QMenu,
    QToolButton,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from ...core import dag
from ...core.layout import EMPTY_LAYOUT, Layout, extend_layout
from ...core.model import Node
from ...services.attach import merged_peers
from .items import (
    BAND_ROWS,
    DETAIL_SCALE,
    DX,
    DY,
    FOCUSED,
    HEAD,
    HIDDEN,
    INTERRUPTED,
    LABEL_COLUMNS,
    MERGED,
    ON_PATH,
    PINNED,
    SELECTED,
    BandItem,
    EdgeLayer,
    GraphStyle,
    LayerItem,
    NodeItem,
    OverviewItem,
    R,
    cell_point,
    label_for,
    node_kind,
)

NODE_MIME = "application/x-treechat-node"
SYNC_ITEMS = 400  # above this many new nodes, items are made band by band after the paint
MIN_SCALE = 0.004
MAX_SCALE = 3.0

ROLE_NAMES = {
    "user": "You", "assistant": "Assistant", "tool": "Tool call", "attach": "Attached context",
    "merge": "Merge", "system": "System", "runtime": "Runtime",
}


def node_mime(session_id: str, node_id: str) -> QMimeData:
    """What a dragged node carries: enough for the composer to stage an attach."""
    data = QMimeData()
    data.setData(NODE_MIME, json.dumps({"session_id": session_id, "node_id": node_id}).encode())
    data.setText(f"treechat:{session_id}/{node_id}")
    return data


def read_node_mime(data: QMimeData) -> tuple[str, str | None] | None:
    """(session id, node id or None for the session's HEAD) from a drop, or None."""
    if not data.hasFormat(NODE_MIME):
        return None
    try:
        record = json.loads(bytes(data.data(NODE_MIME).data()).decode())
        return str(record["session_id"]), record.get("node_id") or None
    except (ValueError, KeyError, TypeError):
        return None


class HistoryScene(QGraphicsScene):
    """Mirrors one session's graph. New nodes extend the layout without moving anything, so
    updates touch only the new items, the bands their edges fall in and the HEAD path."""

    itemsCompleted = Signal()

    def __init__(self, style: GraphStyle, parent: Any = None) -> None:
        super().__init__(parent)
        # No BSP index: hit-testing goes through the layout grid, and Qt culls whole bands of
        # node items by their band's rectangle; a BSP tree over every node would be queried
        # for all of them on each zoomed-out frame even while they are hidden.
        self.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.NoIndex)
        self.style = style
        self.session_id: str | None = None
        self.layout: Layout = EMPTY_LAYOUT
        self.nodes: dict[str, Node] = {}
        self.items_by_id: dict[str, NodeItem] = {}
        self.head: str | None = None
        self.path_ids: frozenset[str] = frozenset()
        self.hidden_ids: frozenset[str] = frozenset()
        self.pinned_ids: frozenset[str] = frozenset()
        self.merged_ids: frozenset[str] = frozenset()
        self.focused: str | None = None
        self.graph = dag.Graph(())
        self.selected: list[str] = []  # picked for a merge, in the order picked
        self._pending: dict[int, list[str]] = {}  # band -> nodes without items yet
        self._detail = True
        self._chunk_timer = QTimer(self)
        self._chunk_timer.setSingleShot(True)
        self._chunk_timer.timeout.connect(self._create_chunk)
        self._reset_items()

    def _reset_items(self) -> None:
        self.clear()
        self.node_layer = LayerItem()
        self.node_layer.setZValue(2)
        self.edge_layer_item = LayerItem()
        self.edge_layer_item.setZValue(-2)
        self.addItem(self.node_layer)
        self.addItem(self.edge_layer_item)
        self.edges = EdgeLayer(self.edge_layer_item, self.style)
        self.overview = OverviewItem(self.style)
        self.overview.setZValue(-1)
        self.addItem(self.overview)
        # The HEAD path, one item per band of rows so only the visible stretch is stroked.
        self.head_layer = LayerItem()
        self.head_layer.setZValue(0)
        self.addItem(self.head_layer)
        self.head_bands: dict[int, QGraphicsPathItem] = {}
        self._head_segments: dict[int, list[tuple[str, str]]] = {}
        self.items_by_id = {}
        self.band_items: dict[int, BandItem] = {}
        self._pending = {}
        self._apply_detail()

    # --- mirroring the model -------------------------------------------------------

    def show_view(self, view: Any) -> None:
        """Mirror a `SessionView`: rebuild for another session or after a purge, otherwise
        add what is new and restate HEAD, hidden, pinned and merged marks."""
        graph = view.graph
        session_id = view.session.id
        if session_id != self.session_id or any(k not in graph for k in self.nodes):
            self.session_id = session_id
            self.layout = EMPTY_LAYOUT
            self.nodes = {}
            self.selected = []
            self._reset_items()
        # The chat shows a message before the store has it ("pending-…"); the graph waits
        # for the stored node, so it never has to take a node back out.
        fresh = [n for n in graph if n.id not in self.nodes and not n.id.startswith("pending-")]
        hidden: set[str] = set()
        for h in view.hidden:
            if h in graph:
                hidden.add(h)
                hidden.update(n.id for n in dag.descendants(graph, h))
        hidden_changed = frozenset(hidden) != self.hidden_ids
        self.hidden_ids = frozenset(hidden)
        if fresh:
            self._add(fresh, graph)
        elif hidden_changed and self.nodes:
            self._rebuild_edges()
        self.pinned_ids = frozenset(view.pinned)
        self.merged_ids = merged_peers(graph)
        self.graph = graph
        self.set_head(view.head, graph)

    def clear_view(self) -> None:
        """Show nothing (a new chat)."""
        self._chunk_timer.stop()
        self.session_id = None
        self.layout = EMPTY_LAYOUT
        self.nodes = {}
        self.selected = []
        self.head = None
        self.path_ids = frozenset()
        self._reset_items()

    def _add(self, fresh: list[Node], graph: dag.Graph) -> None:
        """Place new nodes and draw them in the overview now; their items and edge paths
        are made band by band, visible bands first (see `materialize_rows`)."""
        fresh.sort(key=lambda n: n.seq)
        had_items = bool(self.items_by_id)
        self.layout = extend_layout(self.layout, fresh)
        placements = self.layout.placements
        by_kind: dict[str, list[QPointF]] = {}
        edges = self.overview.edges  # one path of straight segments for the whole graph
        move_to, line_to = edges.moveTo, edges.lineTo
        pending = self._pending
        nodes = self.nodes
        for node in fresh:
            nodes[node.id] = node
        for node in fresh:
            p = placements[node.id]
            x, y = p.column * DX, p.row * DY
            kind = node.role if node.role != "runtime" else node_kind(node)
            points = by_kind.get(kind)
            if points is None:
                points = by_kind[kind] = []
            points.append(QPointF(x, y))
            if p.parent is not None:
                q = placements[p.parent]
                move_to(q.column * DX, q.row * DY)
                line_to(x, y)
            band = p.row // BAND_ROWS
            ids = pending.get(band)
            if ids is None:
                pending[band] = [node.id]
            else:
                ids.append(node.id)
        for kind, points in by_kind.items():
            self.overview.add_nodes(kind, points)
        self.overview.set_bounds(self.graph_rect())
        self.setSceneRect(self.graph_rect().adjusted(-DX * 3, -DY * 2, DX * 3, DY * 3))
        if had_items:
            self._refresh_label_room(fresh)
        if len(fresh) <= SYNC_ITEMS:
            self.ensure_items()
        else:
            self._chunk_timer.start(0)

    def _add_edges(self, node: Node) -> None:
        placements = self.layout.placements
        p = placements[node.id]
        x, y = p.column * DX, p.row * DY
        if p.parent is not None:
            q = placements[p.parent]
            if node.id in self.hidden_ids:
                kind = "hidden"
            else:
                kind = "call" if node.caller is not None else "conversation"
            self.edges.add(kind, q.column * DX, q.row * DY, x, y, p.row)
        if node.role == "runtime":
            for source, kind in self._extra_sources(node):
                s = placements.get(source)
                if s is not None:
                    self.edges.add(kind, s.column * DX, s.row * DY, x, y, p.row)

    @staticmethod
    def _extra_sources(node: Node) -> list[tuple[str, str]]:
        """Inbound edges besides the parent: an attach from its source head (unless it is
        part of a merge, which draws its own), a merge from every peer head."""
        meta = node.metadata
        if node.is_attach and not meta.get("merge"):
            head = meta.get("source_head")
            return [(head, "attach")] if isinstance(head, str) else []
        if node.is_merge:
            out = []
            for ref in meta.get("peers") or ():
                head = ref.get("source_head") if isinstance(ref, dict) else ref
                if isinstance(head, str):
                    out.append((head, "merge"))
            return out
        return []

    def _rebuild_edges(self) -> None:
        """Hidden marks changed: redraw the edge paths of the bands made so far."""
        for item in list(self.edge_layer_item.childItems()):
            self.removeItem(item)
        self.edges = EdgeLayer(self.edge_layer_item, self.style)
        for node_id in self.items_by_id:
            self._add_edges(self.nodes[node_id])
        self.edges.flush()
        for node_id in self.items_by_id:
            self._restate(node_id)

    def _refresh_label_room(self, fresh: Sequence[Node]) -> None:
        """A label runs right over empty cells; a new node may shorten its left neighbour's."""
        cells = self.layout.cells
        touched: set[str] = set()
        for node in fresh:
            column, row = self.layout.cell(node.id)
            for k in range(1, LABEL_COLUMNS + 1):
                left = cells.get((column - k, row))
                if left is not None:
                    touched.add(left)
                    break
        for node_id in touched:
            item = self.items_by_id.get(node_id)
            if item is not None:
                item.invalidate_label()

    def _room(self, node_id: str) -> float:
        column, row = self.layout.cell(node_id)
        cells = self.layout.cells
        free = 0
        while free < LABEL_COLUMNS and (column + free + 1, row) not in cells:
            free += 1
        if free == LABEL_COLUMNS:
            free += 2  # nothing to the right: the label may run on
        return max(0.0, free * DX + DX - 2 * R - 10)

    def _materialize(self, bands: Iterable[int]) -> None:
        """Make the node items and edge paths of these bands of rows."""
        placements = self.layout.placements
        style = self.style
        room = self._room
        state = self._state
        made = False
        for band in bands:
            ids = self._pending.pop(band, None)
            if not ids:
                continue
            made = True
            layer = self.band_items.get(band)
            if layer is None:
                layer = self.band_items[band] = BandItem(band, self.node_layer)
            for node_id in ids:
                node = self.nodes[node_id]
                p = placements[node_id]
                item = NodeItem(node, node_kind(node), style, room, layer)
                item.setPos(p.column * DX, p.row * DY)
                item.state = state(node)
                self.items_by_id[node_id] = item
                self._add_edges(node)
        if made:
            self.edges.flush()
            if not self._pending:
                self.itemsCompleted.emit()

    def materialize_rows(self, top: float, bottom: float) -> None:
        """Make what a viewport showing scene rows `top`..`bottom` needs, now."""
        if not self._pending:
            return
        first = max(0, int(top / DY) - 1) // BAND_ROWS
        last = max(0, int(bottom / DY) + 1) // BAND_ROWS
        self._materialize(range(first, last + 1))

    def _create_chunk(self) -> None:
        """One band per tick after the first paint, nearest HEAD first."""
        if not self._pending:
            return
        head_band = self.layout.cell(self.head)[1] // BAND_ROWS if self.head in self.layout \
            else 0
        band = min(self._pending, key=lambda b: abs(b - head_band))
        self._materialize([band])
        if self._pending:
            self._chunk_timer.start(0)

    def ensure_items(self) -> None:
        """Make every pending node item and edge now."""
        self._chunk_timer.stop()
        self._materialize(list(self._pending))

    @property
    def complete(self) -> bool:
        return not self._pending

    def _state(self, node: Node) -> int:
        state = 0
        nid = node.id
        if nid in self.path_ids:
            state |= ON_PATH
        if nid == self.head:
            state |= HEAD
        if nid in self.pinned_ids:
            state |= PINNED
        if nid in self.hidden_ids:
            state |= HIDDEN
        if nid in self.merged_ids:
            state |= MERGED
        if node.interrupted:
            state |= INTERRUPTED
        if nid == self.focused:
            state |= FOCUSED
        if nid in self.selected:
            state |= SELECTED
        return state

    def set_head(self, head: str | None, graph: dag.Graph | None = None) -> None:
        """Move the HEAD highlight: the path from the root to `head`, tool calls included.
        Only items whose marks change are touched, and only bands whose stretch of the
        path changed are re-stroked."""
        if head is not None and head not in self.nodes:
            head = self.head if self.head in self.nodes else None
        if graph is None:
            graph = dag.Graph(self.nodes.values())
        chain = dag.ancestry(graph, head) if head is not None else ()
        path = dag.active_path(graph, head) if head is not None else ()
        new_ids = frozenset(n.id for n in path)
        changed = (self.path_ids ^ new_ids) | {self.head, head}
        self.head = head
        self.path_ids = new_ids
        for node_id in changed:
            if node_id is not None:
                self._restate(node_id)
        for node_id in self.pinned_ids | self.merged_ids:
            self._restate(node_id)
        self._draw_head_path([n.id for n in chain])

    def _restate(self, node_id: str) -> None:
        item = self.items_by_id.get(node_id)
        node = self.nodes.get(node_id)
        if item is not None and node is not None:
            item.set_state(self._state(node))

    def _draw_head_path(self, chain: list[str]) -> None:
        placements = self.layout.placements
        segments: dict[int, list[tuple[str, str]]] = {}
        for a, b in itertools.pairwise(chain):
            segments.setdefault(placements[b].row // BAND_ROWS, []).append((a, b))

        def stroke(pairs: Iterable[tuple[str, str]], path: QPainterPath) -> QPainterPath:
            for a, b in pairs:
                p, q = placements[a], placements[b]
                ax, ay, bx, by = p.column * DX, p.row * DY, q.column * DX, q.row * DY
                path.moveTo(ax, ay)
                if p.column == q.column:
                    path.lineTo(bx, by)
                else:
                    mid = (ay + by) / 2
                    path.cubicTo(ax, mid, bx, mid, bx, by)
            return path

        pen = self.style.head_pen()
        for key in set(self.head_bands) | set(segments):
            pairs = segments.get(key, [])
            if self._head_segments.get(key) == pairs:
                continue
            self._head_segments[key] = pairs
            item = self.head_bands.get(key)
            if item is None:
                item = self.head_bands[key] = QGraphicsPathItem(self.head_layer)
                item.setPen(pen)
            item.setPath(stroke(pairs, QPainterPath()))
        overview = QPainterPath()
        for key in sorted(segments):
            stroke(segments[key], overview)
        self.overview.set_head(overview)

    def set_selected(self, node_ids: Iterable[str]) -> None:
        previous = set(self.selected)
        self.selected = [n for n in dict.fromkeys(node_ids) if n in self.nodes]
        for nid in previous ^ set(self.selected):
            self._restate(nid)

    def set_focused(self, node_id: str | None) -> None:
        """Mark the node a timeline item came from."""
        previous, self.focused = self.focused, node_id
        for nid in (previous, node_id):
            if nid is not None:
                self._restate(nid)

    def set_style(self, style: GraphStyle) -> None:
        self.style = style
        self.edges.restyle(style)
        self.overview.style = style
        self.overview.update()
        for item in self.head_bands.values():
            item.setPen(style.head_pen())
        for item in self.items_by_id.values():
            item.style = style
            item.update()

    # --- level of detail -----------------------------------------------------------

    def set_detail(self, detailed: bool) -> None:
        if detailed != self._detail:
            self._detail = detailed
            self._apply_detail()

    def _apply_detail(self) -> None:
        self.node_layer.setVisible(self._detail)
        self.edge_layer_item.setVisible(self._detail)
        self.head_layer.setVisible(self._detail)
        self.overview.setVisible(not self._detail)

    @property
    def detailed(self) -> bool:
        return self._detail

    # --- geometry ------------------------------------------------------------------

    def point_of(self, node_id: str) -> QPointF:
        column, row = self.layout.cell(node_id)
        return cell_point(column, row)

    def graph_rect(self) -> QRectF:
        """The nodes' extent, with room on the right for the last column's labels."""
        if not self.layout.placements:
            return QRectF(-DX, -DY, 2 * DX, 2 * DY)
        w = (self.layout.width - 1) * DX
        h = (self.layout.depth - 1) * DY
        return QRectF(-R * 2, -R * 2, w + R * 4 + DX * 4, h + R * 4)

    def node_at(self, pos: QPointF) -> str | None:
        """The node under a scene point, from the layout grid (works at any zoom, before
        the node's item exists)."""
        column = round(pos.x() / DX)
        row = round(pos.y() / DY)
        node_id = self.layout.cells.get((column, row))
        if node_id is None:
            return None
        centre = cell_point(column, row)
        d = pos - centre
        if d.x() * d.x() + d.y() * d.y() > (R + 5) ** 2:
            return None
        return node_id

    def render_overview(self, size: QSize) -> tuple[QPixmap, float, QPointF]:
        """The graph drawn into a pixmap of at most `size` (for the minimap): (pixmap,
        scale, scene origin)."""
        rect = self.graph_rect()
        scale = min(size.width() / max(rect.width(), 1), size.height() / max(rect.height(), 1))
        w = max(1, int(rect.width() * scale))
        h = max(1, int(rect.height() * scale))
        ratio = 2.0
        pixmap = QPixmap(int(w * ratio), int(h * ratio))
        pixmap.setDevicePixelRatio(ratio)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        painter.scale(scale, scale)
        painter.translate(-rect.topLeft())
        self.overview.draw(painter, scale)
        painter.end()
        return pixmap, scale, rect.topLeft()


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
        bg = QColor(scene.style.background)
        bg.setAlpha(235)
        painter.setPen(QPen(scene.style.muted, 0.6))
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
        accent = QColor(scene.style.accent)
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
        self._press: tuple[QPoint, str | None] | None = None
        self._panning: QPoint | None = None
        self._dragged = False
        self._fitted_once = False
        self._navigating = False
        self.minimap = GraphMinimap(self)
        self.graph_scene.changed.connect(lambda _r: self.minimap.update())
        self.graph_scene.itemsCompleted.connect(self.viewport().update)

    # --- model ---------------------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self.graph_scene.session_id

    def show_view(self, view: Any) -> None:
        scene = self.graph_scene
        first = view.session.id != scene.session_id
        before = len(scene.nodes)
        scene.show_view(view)
        if len(scene.nodes) != before or first:
            self.minimap.invalidate()
        if first:
            self.home()
        self._sync_detail()

    def changeEvent(self, event: Any) -> None:
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

    def set_zoom(self, scale: float, anchor: QPointF | None = None) -> None:
        scale = min(MAX_SCALE, max(MIN_SCALE, scale))
        centre = anchor if anchor is not None else self.mapToScene(
            self.viewport().rect().center())
        self._navigating = True
        try:
            self.resetTransform()
            self.scale(scale, scale)
            self.centerOn(centre)
        finally:
            self._navigating = False
        self._sync_detail()

    def zoom_by(self, factor: float) -> None:
        old = self.transformationAnchor()
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        target = min(MAX_SCALE, max(MIN_SCALE, self.zoom * factor))
        self.scale(target / self.zoom, target / self.zoom)
        self.setTransformationAnchor(old)
        self._sync_detail()

    def fit_all(self) -> None:
        rect = self.graph_scene.graph_rect().adjusted(-DX, -DY, DX, DY)
        self._navigating = True
        try:
            self.fitInView(rect, Qt.AspectRatioMode.KeepAspectRatio)
            if self.zoom > 1.0:
                self.resetTransform()
                self.centerOn(rect.center())
        finally:
            self._navigating = False
        self._sync_detail()

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
        target = min(MAX_SCALE, max(MIN_SCALE, self.zoom * factor))
        self.scale(target / self.zoom, target / self.zoom)
        self._sync_detail()
        event.accept()

    def scrollContentsBy(self, dx: int, dy: int) -> None:
        super().scrollContentsBy(dx, dy)
        if not self._navigating and self.graph_scene.detailed:
            self._materialize_visible()
        self._update_minimap()

    def _update_minimap(self) -> None:
        """The minimap only when part of the graph is out of sight."""
        visible = self.mapToScene(self.viewport().rect()).boundingRect()
        everything = self.graph_scene.graph_rect()
        self.minimap.setVisible(bool(self.graph_scene.nodes)
                                and not visible.contains(everything))
        self.minimap.update()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        m = self.minimap
        m.move(self.viewport().width() - m.width() - 8, self.viewport().height() - m.height() - 8)
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
        """Walk the graph from the keyboard: up to the parent, down to the child on HEAD's
        path (or the first), left and right to the neighbours in the same row."""
        scene = self.graph_scene
        current = scene.focused if scene.focused in scene.nodes else scene.head
        if current is None:
            return
        target: str | None = None
        if key == Qt.Key.Key_Up:
            target = scene.layout.placements[current].parent
        elif key == Qt.Key.Key_Down:
            children = scene.graph.children(current) if current in scene.graph else ()
            on_path = [c.id for c in children if c.id in scene.path_ids]
            target = on_path[0] if on_path else (children[0].id if children else None)
        else:
            column, row = scene.layout.cell(current)
            step = -1 if key == Qt.Key.Key_Left else 1
            for k in range(1, scene.layout.width + 1):
                found = scene.layout.cells.get((column + step * k, row))
                if found is not None:
                    target = found
                    break
        if target is not None and target in scene.nodes:
            scene.set_focused(target)
            self.center_on_node(target, max(self.zoom, 1.0))
            self.cursorMoved.emit(target)

    # --- gestures ------------------------------------------------------------------

    def mousePressEvent(self, event: QMouseEvent) -> None:
        pos = event.position().toPoint()
        if event.button() == Qt.MouseButton.MiddleButton:
            self._panning = pos
            self.viewport().setCursor(Qt.CursorShape.ClosedHandCursor)
            return
        if event.button() != Qt.MouseButton.LeftButton:
            super().mousePressEvent(event)
            return
        node_id = self.graph_scene.node_at(self.mapToScene(pos))
        self._press = (pos, node_id)
        self._dragged = False
        if node_id is None:
            self._panning = pos
            self.viewport().setCursor(Qt.CursorShape.ClosedHandCursor)
        event.accept()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        pos = event.position().toPoint()
        if self._panning is not None:
            delta = pos - self._panning
            self._panning = pos
            if delta.manhattanLength():
                self._dragged = True
            self.horizontalScrollBar().setValue(self.horizontalScrollBar().value() - delta.x())
            self.verticalScrollBar().setValue(self.verticalScrollBar().value() - delta.y())
            return
        if self._press is not None and self._press[1] is not None:
            start, node_id = self._press
            if (pos - start).manhattanLength() >= QApplication.startDragDistance():
                self._press = None
                self._start_drag(node_id)
            return
        hovering = self.graph_scene.node_at(self.mapToScene(pos)) is not None
        self.viewport().setCursor(Qt.CursorShape.PointingHandCursor if hovering
                                  else Qt.CursorShape.ArrowCursor)
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        press, self._press = self._press, None
        if self._panning is not None:
            self._panning = None
            self.viewport().setCursor(Qt.CursorShape.ArrowCursor)
            clicked_empty = press is not None and press[1] is None and not self._dragged
            if clicked_empty and not event.modifiers() & Qt.KeyboardModifier.ControlModifier:
                self.select(())
            return
        if press is None or press[1] is None or event.button() != Qt.MouseButton.LeftButton:
            super().mouseReleaseEvent(event)
            return
        node_id = press[1]
        mods = event.modifiers()
        if mods & (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier):
            self.toggle_selected(node_id)
        else:
            self.checkoutRequested.emit(node_id)
        event.accept()

    def toggle_selected(self, node_id: str) -> None:
        current = self.selected_nodes()
        if node_id in current:
            current.remove(node_id)
        else:
            current.append(node_id)
        self.select(current)

    def drag_mime(self, node_id: str) -> QMimeData:
        """What dragging `node_id` out of the graph carries (an attach of that head)."""
        return node_mime(self.graph_scene.session_id or "", node_id)

    def _start_drag(self, node_id: str) -> None:
        if self.graph_scene.session_id is None:
            return
        drag = QDrag(self)
        drag.setMimeData(self.drag_mime(node_id))
        drag.setPixmap(self._drag_pixmap(node_id))
        drag.exec(Qt.DropAction.CopyAction)

    def _drag_pixmap(self, node_id: str) -> QPixmap:
        node = self.graph_scene.nodes[node_id]
        text = label_for(node)[:40] or ROLE_NAMES.get(node_kind(node), node.role)
        metrics = self.fontMetrics()
        w = min(280, metrics.horizontalAdvance(text) + 34)
        pixmap = QPixmap(w, 24)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        style = self.graph_scene.style
        painter.setBrush(style.background)
        painter.setPen(QPen(style.accent, 1.2))
        painter.drawRoundedRect(QRectF(0.5, 0.5, w - 1, 23), 11, 11)
        painter.setBrush(style.fills[node_kind(node)])
        painter.setPen(Qt.PenStyle.NoPen)
        painter.drawEllipse(QPointF(13, 12), 5, 5)
        painter.setPen(style.text)
        painter.drawText(QRectF(24, 0, w - 28, 24), Qt.AlignmentFlag.AlignVCenter,
                         metrics.elidedText(text, Qt.TextElideMode.ElideRight, w - 30))
        painter.end()
        return pixmap

    def contextMenuEvent(self, event: Any) -> None:
        node_id = self.graph_scene.node_at(self.mapToScene(event.pos()))
        if node_id is None:
            menu = QMenu(self)
            menu.addAction("Fit graph", self.fit_all)
            if self.graph_scene.head:
                menu.addAction("Go to HEAD", lambda: self.center_on_node(
                    self.graph_scene.head or "", max(self.zoom, 1.0)))
            menu.popup(event.globalPos())
            return
        menu = self.node_menu(node_id)
        menu.popup(event.globalPos())

    def node_menu(self, node_id: str) -> QMenu:
        """The context menu of a node (built here so tests can read it without showing it)."""
        scene = self.graph_scene
        node = scene.nodes[node_id]
        menu = QMenu(self)
        menu.setObjectName("NodeMenu")
        menu.addAction("Check out", lambda: self.checkoutRequested.emit(node_id))
        retry = menu.addAction("Retry", lambda: self.retryRequested.emit(node_id))
        retry.setEnabled(node.role in ("user", "assistant") and not self.busy)
        edit = menu.addAction("Edit…", lambda: self.editRequested.emit(node_id))
        edit.setEnabled(node.role == "user" and not self.busy)
        menu.addAction("Branch into new chat", lambda: self.branchRequested.emit(node_id))
        pinned = node_id in scene.pinned_ids
        menu.addAction("Unpin" if pinned else "Pin",
                       lambda: self.pinRequested.emit(node_id, not pinned))
        menu.addAction("Hide branch", lambda: self.hideRequested.emit(node_id))
        menu.addSeparator()
        menu.addAction("Attach to next message", lambda: self.attachRequested.emit(node_id))
        selected = self.selected_nodes()
        in_selection = node_id in selected
        menu.addAction("Remove from merge selection" if in_selection else "Select for merge",
                       lambda: self.toggle_selected(node_id))
        heads = selected if in_selection else [*selected, node_id]
        merge = menu.addAction(f"Merge {len(heads)} branches…",
                               lambda: self.mergeRequested.emit(heads))
        merge.setEnabled(len(heads) >= 2 and not self.busy)
        return menu

    def viewportEvent(self, event: Any) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            node_id = self.graph_scene.node_at(self.mapToScene(event.pos()))
            if node_id is None:
                QToolTip.hideText()
            else:
                QToolTip.showText(event.globalPos(), self.preview_html(node_id), self)
            return True
        return super().viewportEvent(event)

    def preview_html(self, node_id: str) -> str:
        """The hover preview of a node: who, when, version, marks and the start of the text."""
        scene = self.graph_scene
        node = scene.nodes[node_id]
        kind = node_kind(node)
        graph = scene.graph if node.parent else None
        bits = [ROLE_NAMES.get(kind, node.role)]
        if node.role == "assistant" and node.name:
            bits.append(node.name)
        if node.role == "tool" and node.name:
            bits.append(node.name)
        bits.append(time.strftime("%d %b %H:%M", time.localtime(node.created_at)))
        if graph is not None and node.role in ("user", "assistant"):
            n, m = dag.version_of(graph, node_id)
            if m > 1:
                bits.append(f"version {n}/{m}")
        marks = []
        if node_id == scene.head:
            marks.append("HEAD")
        if node_id in scene.pinned_ids:
            marks.append("pinned")
        if node_id in scene.merged_ids:
            marks.append("merged")
        if node_id in scene.hidden_ids:
            marks.append("hidden")
        if node.interrupted:
            marks.append("interrupted")
        text = node.text
        if node.role == "tool" and node.input is not None:
            text = f"{json.dumps(node.input, ensure_ascii=False)[:200]}\n→ {text}"
        body = html.escape(text[:420] + ("…" if len(text) > 420 else "")).replace("\n", "<br>")
        head = html.escape(" · ".join(bits))
        mark = f" <i>({html.escape(', '.join(marks))})</i>" if marks else ""
        return f"<p style='white-space:pre-wrap'><b>{head}</b>{mark}<br>{body}</p>"


class HistoryGraphPanel(QWidget):
    """The Graph tab: a small toolbar over the view (zoom, fit, HEAD, merge)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("HistoryGraphPanel")
        self.view = HistoryGraphView(self)
        bar = QHBoxLayout()
        bar.setContentsMargins(8, 6, 8, 4)
        bar.setSpacing(4)

        def button(text: str, tip: str, slot: Any) -> QToolButton:
            b = QToolButton()
            b.setText(text)
            b.setToolTip(tip)
            b.setAccessibleName(tip)
            b.setAutoRaise(True)
            b.clicked.connect(slot)
            bar.addWidget(b)
            return b

        self.zoom_out_button = button("−", "Zoom out (-)", lambda: self.view.zoom_by(0.8))
        self.zoom_in_button = button("+", "Zoom in (+)", lambda: self.view.zoom_by(1.25))
        self.fit_button = button("Fit", "Fit the whole graph (0)", self.view.fit_all)
        self.head_button = button("HEAD", "Go to HEAD (H)", self._go_head)
        self.summary = QLabel("")
        self.summary.setObjectName("EmptyHint")
        bar.addWidget(self.summary, 1)
        self.merge_button = button("Merge…", "Merge the selected branch heads", self._merge)
        self.merge_button.setEnabled(False)
        self.hint = QLabel("Click a node (or arrows, Enter) to check it out · drag it onto "
                           "the message box to attach it · Ctrl+click heads to merge them")
        self.hint.setObjectName("EmptyHint")
        self.hint.setWordWrap(True)
        self.hint.setContentsMargins(10, 0, 10, 6)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(0)
        box.addLayout(bar)
        box.addWidget(self.hint)
        box.addWidget(self.view, 1)
        self.view.selectionChangedTo.connect(self._selection)

    def show_view(self, view: Any) -> None:
        self.view.show_view(view)
        scene = self.view.graph_scene
        nodes = len(scene.nodes)
        continued = {n.predecessor for n in scene.nodes.values()}
        leaves = sum(1 for n in scene.nodes.values()
                     if n.role != "tool" and n.id not in continued)
        self.summary.setText(f"{nodes} node{'s' if nodes != 1 else ''} · "
                             f"{leaves} branch{'es' if leaves != 1 else ''}")
        self._selection(self.view.selected_nodes())

    def clear(self) -> None:
        self.view.graph_scene.clear_view()
        self.view.minimap.invalidate()
        self.summary.setText("")
        self._selection([])

    def set_busy(self, busy: bool) -> None:
        self.view.busy = busy
        self._selection(self.view.selected_nodes())

    def _selection(self, selected: list[str]) -> None:
        self.merge_button.setEnabled(len(selected) >= 2 and not self.view.busy)
        self.merge_button.setText(f"Merge {len(selected)}…" if len(selected) >= 2 else "Merge…")

    def _merge(self) -> None:
        selected = self.view.selected_nodes()
        if len(selected) >= 2:
            self.view.mergeRequested.emit(selected)

    def _go_head(self) -> None:
        head = self.view.graph_scene.head
        if head:
            self.view.center_on_node(head, max(self.view.zoom, 1.0))
