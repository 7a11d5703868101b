"""Layered, stable layout of the conversation graph: a pure function from nodes to grid cells.

Rows are depths (a child sits one row below the node it hangs from); columns are lanes.
Placing a node never moves one already placed, so a view can add items incrementally.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from .model import Node

Cell = tuple[int, int]  # (column, row)


class Placement(NamedTuple):
    """Where one node sits, and the edge it hangs from (if its parent is placed).

    A named tuple rather than a dataclass: a big graph creates tens of thousands."""

    node_id: str
    column: int
    row: int
    parent: str | None
    role: str = ""


@dataclass(frozen=True, slots=True)
class Layout:
    """Grid cells of every placed node. Treat as immutable: `extend_layout` returns a new one."""

    placements: Mapping[str, Placement] = field(default_factory=dict)
    cells: Mapping[Cell, str] = field(default_factory=dict)
    # per parent, the column of its rightmost conversation child: the next sibling goes right
    rightmost: Mapping[str, int] = field(default_factory=dict)
    width: int = 0  # columns in use
    depth: int = 0  # rows in use

    def __len__(self) -> int:
        return len(self.placements)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.placements

    def cell(self, node_id: str) -> Cell:
        p = self.placements[node_id]
        return p.column, p.row


EMPTY_LAYOUT = Layout()

# A new branch opens where this many rows below it are still free, so it can grow a few
# turns in a straight line; if it meets an older node later it steps one lane aside.
BRANCH_ROOM = 8


def layout_graph(nodes: Iterable[Node]) -> Layout:
    """Lay out a whole graph; the same as extending the empty layout."""
    return extend_layout(EMPTY_LAYOUT, nodes)


def extend_layout(previous: Layout, new_nodes: Iterable[Node]) -> Layout:
    """Place `new_nodes` (any order; placed by `seq`) around an existing layout.

    Existing placements are kept exactly. Rules, in order of preference:
    - the cell straight below a node belongs to its first conversation child (for an
      assistant, tool calls never take it, so the dialogue stays in one lane);
    - a later sibling opens a lane to the right of its parent in the first column with room
      from the parent's row down (`BRANCH_ROOM`), so siblings line up left to right in seq
      order, and a lane is reused once older branches in it have ended;
    - a tool call takes the first cell to the right whose cell above is empty (tool calls
      are leaves, so they do not need a whole lane).
    Nodes whose parent is unknown become roots in row 0.
    """
    known = previous.placements
    fresh = sorted((n for n in new_nodes if n.id not in known), key=_seq)
    if not fresh:
        return previous
    placements = dict(known)
    cells = dict(previous.cells)
    rightmost = dict(previous.rightmost)
    width, depth = previous.width, previous.depth

    def lane_free(column: int, row: int) -> bool:
        return all((column, r) not in cells for r in range(row - 1, row + BRANCH_ROOM))

    def cell_free(column: int, row: int) -> bool:
        return (column, row) not in cells and (column, row - 1) not in cells

    get = placements.get
    for node in fresh:
        caller = node.caller
        parent = node.predecessor if node.predecessor is not None else caller
        above = get(parent) if parent is not None else None
        if above is None:
            column, row = _first(lane_free, 0, 0), 0
            parent = None
        else:
            row = above.row + 1
            below = (above.column, row)
            tool_call = caller is not None and above.role == "assistant"
            sibling = rightmost.get(above.node_id)
            if tool_call:
                column = _first(cell_free, above.column + 1, row)
            elif sibling is not None:
                column = _first(lane_free, max(sibling, above.column) + 1, row)
            elif below not in cells:
                column = above.column
            else:
                # the lane ran into an older branch: step aside to the nearest room
                column = _nearest(lane_free, above.column, row)
            if not tool_call:
                rightmost[above.node_id] = column
        placements[node.id] = Placement(node.id, column, row, parent, node.role)
        cells[(column, row)] = node.id
        if column >= width:
            width = column + 1
        if row >= depth:
            depth = row + 1
    return Layout(placements, cells, rightmost, width, depth)


def _seq(node: Node) -> int:
    return node.seq


def _first(free: Callable[[int, int], bool], start: int, row: int) -> int:
    column = start
    while not free(column, row):
        column += 1
    return column


def _nearest(free: Callable[[int, int], bool], around: int, row: int) -> int:
    for step in range(1, around + 2):
        if free(around + step, row):
            return around + step
        if around - step >= 0 and free(around - step, row):
            return around - step
    return _first(free, around + 1, row)
