"""Where a laid-out graph sits in scene coordinates: its extent with or without the labels'
room, how far each label may run, and the node under a point, read from the layout grid (so
it works at any zoom and before the node's item exists)."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QPointF, QRectF

from ...core.layout import Layout
from ...core.model import Node
from .items import DX, DY, LABEL_COLUMNS, LABEL_X, R, cell_point


def nodes_rect(layout: Layout) -> QRectF:
    """The nodes' extent, their labels left out."""
    if not layout.placements:
        return QRectF(-DX, -DY, 2 * DX, 2 * DY)
    w = (layout.width - 1) * DX
    h = (layout.depth - 1) * DY
    return QRectF(-R * 2, -R * 2, w + R * 4, h + R * 4)


def graph_rect(layout: Layout) -> QRectF:
    """The nodes' extent, with room on the right for the last column's labels."""
    if not layout.placements:
        return QRectF(-DX, -DY, 2 * DX, 2 * DY)
    w = (layout.width - 1) * DX
    h = (layout.depth - 1) * DY
    return QRectF(-R * 2, -R * 2, w + R * 4 + DX * 4, h + R * 4)


def node_at(layout: Layout, pos: QPointF) -> str | None:
    """The node whose circle holds the scene point `pos` (a little slack around it)."""
    column = round(pos.x() / DX)
    row = round(pos.y() / DY)
    node_id = layout.cells.get((column, row))
    if node_id is None:
        return None
    centre = cell_point(column, row)
    d = pos - centre
    if d.x() * d.x() + d.y() * d.y() > (R + 5) ** 2:
        return None
    return node_id


def label_room(layout: Layout, node_id: str, limit: float | None) -> float:
    """How wide a node's label may be: it runs right over empty cells (on and on when the
    row is empty to its right), and ends before scene x `limit` when a fit set one."""
    column, row = layout.cell(node_id)
    cells = layout.cells
    free = 0
    while free < LABEL_COLUMNS and (column + free + 1, row) not in cells:
        free += 1
    if free == LABEL_COLUMNS:
        free += 2  # nothing to the right: the label may run on
    room = free * DX + DX - 2 * R - 10
    if limit is not None:  # elided where the fitted view ends
        room = min(room, limit - column * DX - LABEL_X + 4)
    return max(0.0, room)


def left_neighbours(layout: Layout, fresh: Iterable[Node]) -> set[str]:
    """The nodes whose labels new nodes `fresh` may now cut short: the nearest one to the
    left of each, within a label's reach."""
    cells = layout.cells
    touched: set[str] = set()
    for node in fresh:
        column, row = layout.cell(node.id)
        for k in range(1, LABEL_COLUMNS + 1):
            left = cells.get((column - k, row))
            if left is not None:
                touched.add(left)
                break
    return touched
