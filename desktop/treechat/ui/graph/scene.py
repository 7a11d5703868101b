"""The history graph scene: mirrors a session's DAG, grown incrementally from the pure
layout in core/layout.py, so new nodes never move the old ones; items far from the view are
made band by band after the first paint."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence

from PySide6.QtCore import QObject, QPointF, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QPainter, QPainterPath, QPixmap
from PySide6.QtWidgets import QGraphicsPathItem, QGraphicsScene

from ...core import dag
from ...core.layout import EMPTY_LAYOUT, Layout, extend_layout
from ...core.model import Node
from ...services.merge import merged_peers
from ...services.turns.sessions import SessionView
from .edges import EdgeLayer, extra_sources
from .geometry import graph_rect, label_room, left_neighbours, node_at, nodes_rect
from .items import (
    BAND_ROWS,
    DX,
    DY,
    FOCUSED,
    HEAD,
    HIDDEN,
    INTERRUPTED,
    MERGED,
    ON_PATH,
    PINNED,
    SELECTED,
    BandItem,
    GraphStyle,
    LayerItem,
    NodeItem,
    OverviewItem,
    cell_point,
    elided_label,
    label_box,
    node_kind,
)

SYNC_ITEMS = 400  # above this many new nodes, items are made band by band after the paint


class HistoryScene(QGraphicsScene):
    """Mirrors one session's graph. New nodes extend the layout without moving anything, so
    updates touch only the new items, the bands their edges fall in and the HEAD path."""

    itemsCompleted = Signal()

    def __init__(self, style: GraphStyle, parent: QObject | None = None) -> None:
        super().__init__(parent)
        # No BSP index: hit-testing goes through the layout grid, and Qt culls whole bands of
        # node items by their band's rectangle; a BSP tree over every node would be queried
        # for all of them on each zoomed-out frame even while they are hidden.
        self.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.NoIndex)
        self.graph_style = style
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
        self.label_limit: float | None = None  # labels end before this x (set by a fit)
        self._reach = QRectF()  # what a fit showed: the scene rect keeps room for it
        self._bottom_room = 0.0  # scene units below the last row kept clear of the minimap
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
        self.edges = EdgeLayer(self.edge_layer_item, self.graph_style)
        self.overview = OverviewItem(self.graph_style)
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
        self.label_limit = None
        self._reach = QRectF()
        self._apply_detail()

    # --- mirroring the model -------------------------------------------------------

    def show_view(self, view: SessionView) -> bool:
        """Mirror a `SessionView`: rebuild for another session or after a purge, otherwise
        add what is new and restate HEAD, hidden, pinned and merged marks. True when it was
        drawn afresh."""
        graph = view.graph
        session_id = view.session.id
        # Nodes are placed in the order they were written: older ones arriving after newer
        # (a long chat's end drawn first, then the whole of it) are placed afresh with them.
        older = session_id == self.session_id and self.nodes and min(
            (n.seq for n in graph if n.id not in self.nodes), default=1 << 62
        ) < max(n.seq for n in self.nodes.values())
        rebuilt = session_id != self.session_id or older or any(
            k not in graph for k in self.nodes)
        if rebuilt:
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
        return bool(rebuilt)

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
        self._update_scene_rect()
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
            for source, kind in extra_sources(node):
                s = placements.get(source)
                if s is not None:
                    self.edges.add(kind, s.column * DX, s.row * DY, x, y, p.row)

    def _rebuild_edges(self) -> None:
        """Hidden marks changed: redraw the edge paths of the bands made so far."""
        for item in list(self.edge_layer_item.childItems()):
            self.removeItem(item)
        self.edges = EdgeLayer(self.edge_layer_item, self.graph_style)
        for node_id in self.items_by_id:
            self._add_edges(self.nodes[node_id])
        self.edges.flush()
        for node_id in self.items_by_id:
            self._restate(node_id)

    def _refresh_label_room(self, fresh: Sequence[Node]) -> None:
        """A label runs right over empty cells; a new node may shorten its left neighbour's."""
        for node_id in left_neighbours(self.layout, fresh):
            item = self.items_by_id.get(node_id)
            if item is not None:
                item.invalidate_label()

    def _room(self, node_id: str) -> float:
        return label_room(self.layout, node_id, self.label_limit)

    def set_label_limit(self, limit: float | None) -> None:
        """Labels end before scene x `limit` (None: only their neighbours cut them)."""
        if limit == self.label_limit:
            return
        self.label_limit = limit
        for item in self.items_by_id.values():
            item.invalidate_label()

    def label_rect(self, node_id: str) -> QRectF:
        """A node's label in scene coordinates, as it is (or would be) drawn."""
        item = self.items_by_id.get(node_id)
        if item is not None:
            return item.mapRectToScene(item.label_rect())
        text = elided_label(self.nodes[node_id], self._room(node_id), self.graph_style.font)
        return label_box(text, self.graph_style.font).translated(self.point_of(node_id))

    def labels_rect(self) -> QRectF:
        """The nodes' extent with every label drawn in full (what a fit must show)."""
        rect = self.nodes_rect()
        for node_id in self.nodes:
            box = self.label_rect(node_id)
            if not box.isEmpty():
                rect = rect.united(box)
        return rect

    def reach(self, rect: QRectF) -> None:
        """Keep room for `rect` in the scene rect (a fitted view that shows labels in full
        must not be pulled back to the nodes' centre)."""
        self._reach = rect
        self._update_scene_rect()

    def set_bottom_room(self, room: float) -> None:
        """Room below the last row, in scene units, so the rows at the bottom can be scrolled
        above what covers the view's bottom corner (the minimap)."""
        room = max(0.0, round(room, 1))
        if room != self._bottom_room:
            self._bottom_room = room
            self._update_scene_rect()

    def _update_scene_rect(self) -> None:
        rect = self.graph_rect().adjusted(-DX * 3, -DY * 2, DX * 3, max(DY * 3, self._bottom_room))
        self.setSceneRect(rect.united(self._reach) if not self._reach.isEmpty() else rect)

    def _materialize(self, bands: Iterable[int]) -> None:
        """Make the node items and edge paths of these bands of rows."""
        placements = self.layout.placements
        style = self.graph_style
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
        head = self.head
        head_band = (self.layout.cell(head)[1] // BAND_ROWS
                     if head is not None and head in self.layout else 0)
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

        pen = self.graph_style.head_pen()
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
        self.graph_style = style
        self.edges.restyle(style)
        self.overview.style = style
        self.overview.update()
        for item in self.head_bands.values():
            item.setPen(style.head_pen())
        for node_item in self.items_by_id.values():
            node_item.style = style
            node_item.update()

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

    def nodes_rect(self) -> QRectF:
        """The nodes' extent, their labels left out."""
        return nodes_rect(self.layout)

    def graph_rect(self) -> QRectF:
        """The nodes' extent, with room on the right for the last column's labels."""
        return graph_rect(self.layout)

    def node_at(self, pos: QPointF) -> str | None:
        """The node under a scene point (see `geometry.node_at`)."""
        return node_at(self.layout, pos)

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


