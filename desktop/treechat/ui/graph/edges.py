"""The graph's edges: which nodes a node's inbound edges come from, and all edges drawn as a
few path items, one per kind and band of rows, so adding edges only touches the bands they
fall in and Qt culls off-screen edges band by band."""

from __future__ import annotations

from PySide6.QtCore import QPointF
from PySide6.QtGui import QPainterPath
from PySide6.QtWidgets import QGraphicsItem, QGraphicsPathItem

from ...core.model import Node
from .items import BAND_ROWS, DX, DY, GraphStyle


def extra_sources(node: Node) -> list[tuple[str, str]]:
    """Inbound edges besides the parent, as (source node, edge kind): an attach from its
    source head (unless it is part of a merge, which draws its own), a merge from every
    peer head."""
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


def edge_path(a: QPointF, b: QPointF, kind: str) -> QPainterPath:
    """Parent to child: straight down a lane, an S-curve into a side lane, and a wide arc for
    attach and merge edges that may span many rows."""
    path = QPainterPath(a)
    if kind in ("attach", "merge"):
        bulge = DX * 0.9
        path.cubicTo(QPointF(a.x() + bulge, a.y() + DY * 0.3),
                     QPointF(b.x() + bulge, b.y() - DY * 0.3), b)
    elif abs(a.x() - b.x()) < 0.5:
        path.lineTo(b)
    else:
        mid = (a.y() + b.y()) / 2
        path.cubicTo(QPointF(a.x(), mid), QPointF(b.x(), mid), b)
    return path


class EdgeLayer:
    """All edges as a few path items: one per (kind, band of BAND_ROWS rows). Adding edges
    only touches the bands they fall in."""

    def __init__(self, parent: QGraphicsItem, style: GraphStyle) -> None:
        self.parent = parent
        self.style = style
        self._paths: dict[tuple[str, int], QPainterPath] = {}
        self._items: dict[tuple[str, int], QGraphicsPathItem] = {}
        self._dirty: set[tuple[str, int]] = set()

    def add(self, kind: str, ax: float, ay: float, bx: float, by: float, row: int) -> None:
        key = (kind, row // BAND_ROWS)
        path = self._paths.get(key)
        if path is None:
            path = self._paths[key] = QPainterPath()
        path.moveTo(ax, ay)
        if kind in ("attach", "merge"):
            bulge = DX * 0.9
            path.cubicTo(ax + bulge, ay + DY * 0.3, bx + bulge, by - DY * 0.3, bx, by)
        elif abs(ax - bx) < 0.5:
            path.lineTo(bx, by)
        else:
            mid = (ay + by) / 2
            path.cubicTo(ax, mid, bx, mid, bx, by)
        self._dirty.add(key)

    def flush(self) -> None:
        for key in self._dirty:
            item = self._items.get(key)
            if item is None:
                item = self._items[key] = QGraphicsPathItem(self.parent)
                item.setPen(self.style.edge_pens[key[0]])
                item.setZValue(-2)
            item.setPath(self._paths[key])
        self._dirty.clear()

    def restyle(self, style: GraphStyle) -> None:
        self.style = style
        for (kind, _band), item in self._items.items():
            item.setPen(style.edge_pens[kind])

    @property
    def item_count(self) -> int:
        return len(self._items)
