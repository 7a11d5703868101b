"""Layered, stable layout of the conversation graph: a pure function from nodes to grid cells.

Rows are depths (a child sits one row below the node it hangs from); columns are lanes.
Placing a node never moves one already placed, so a view can add items incrementally.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from .model import Node

Cell = tuple[int, int]  # (column, row)


@dataclass(frozen=True, slots=True)
class Placement:
    """Where one node sits, and the edge it hangs from (if its parent is placed)."""

    node_id: str
    column: int
    row: int
    parent: str | None
    role: str = ""


@dataclass(frozen=True, slots=True)
class Layout:
    """Grid cells of every placed node. Treat as immutable: `extend_layout` returns a new one.

    `bottoms[c]` is the lowest row used in column c; a new conversation branch only opens in
    a column that is empty from the row above it downwards, so its continuation can run
    straight down without meeting older nodes.
    """

    placements: Mapping[str, Placement] = field(default_factory=dict)
    cells: Mapping[Cell, str] = field(default_factory=dict)
    bottoms: Mapping[int, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.placements)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.placements

    def cell(self, node_id: str) -> Cell:
        p = self.placements[node_id]
        return p.column, p.row

    @property
    def width(self) -> int:
        """Number of columns in use (0 when empty)."""
        return max(self.bottoms, default=-1) + 1

    @property
    def depth(self) -> int:
        """Number of rows in use (0 when empty)."""
        return max(self.bottoms.values(), default=-1) + 1


EMPTY_LAYOUT = Layout()


def layout_graph(nodes: Iterable[Node]) -> Layout:
    """Lay out a whole graph; the same as extending the empty layout."""
    return extend_layout(EMPTY_LAYOUT, nodes)


def extend_layout(previous: Layout, new_nodes: Iterable[Node]) -> Layout:
    """Place `new_nodes` (any order; placed by `seq`) around an existing layout.

    Existing placements are kept exactly. Rules, in order of preference:
    - the cell straight below a node belongs to its first conversation child (for an
      assistant, tool calls never take it, so the dialogue stays in one lane);
    - a later sibling opens a lane to the right of its parent in the first column that is
      empty from the parent's row down, so siblings line up left to right in seq order;
    - a tool call takes the first cell to the right whose cell above is empty (tool calls
      are leaves, so they do not need a whole lane).
    Nodes whose parent is unknown become roots in row 0.
    """
    fresh = [n for n in sorted(new_nodes, key=lambda n: n.seq) if n.id not in previous]
    if not fresh:
        return previous
    placements = dict(previous.placements)
    cells = dict(previous.cells)
    bottoms = dict(previous.bottoms)

    def lane_free(column: int, row: int) -> bool:
        bottom = bottoms.get(column)
        return bottom is None or bottom < row - 1

    def cell_free(column: int, row: int) -> bool:
        return (column, row) not in cells and (column, row - 1) not in cells

    for node in fresh:
        parent = node.parent
        above = placements.get(parent) if parent is not None else None
        if above is None:
            column, row = _first(lane_free, 0, 0), 0
            parent = None
        else:
            row = above.row + 1
            below = (above.column, row)
            tool_call = node.caller is not None and above.role == "assistant"
            if not tool_call and below not in cells:
                column = above.column
            elif tool_call:
                column = _first(cell_free, above.column + 1, row)
            else:
                column = _first(lane_free, above.column + 1, row)
        placements[node.id] = Placement(node.id, column, row, parent, node.role)
        cells[(column, row)] = node.id
        if row > bottoms.get(column, -1):
            bottoms[column] = row
    return Layout(placements, cells, bottoms)


def _first(free: Callable[[int, int], bool], start: int, row: int) -> int:
    column = start
    while not free(column, row):
        column += 1
    return column
