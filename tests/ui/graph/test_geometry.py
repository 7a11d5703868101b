"""Where a laid-out graph sits in the scene: its extent, the node under a point at any zoom,
and how far each label may run before a neighbour or the fitted view cuts it."""

from __future__ import annotations

from PySide6.QtCore import QPointF

from treechat.core.layout import EMPTY_LAYOUT, layout_graph
from treechat.core.model import Node
from treechat.ui.graph.geometry import (
    graph_rect,
    label_room,
    left_neighbours,
    node_at,
    nodes_rect,
)
from treechat.ui.graph.items import DX, DY, LABEL_COLUMNS, R, cell_point


def node(node_id: str, seq: int, parent: str | None, role: str = "user") -> Node:
    return Node(node_id, seq, float(seq), "s", role, output=node_id, predecessor=parent)


def branched() -> list[Node]:
    """a → b → c, and a second answer b2 to a (a branch in the next lane)."""
    return [node("a", 0, None), node("b", 1, "a", "assistant"), node("c", 2, "b"),
            node("b2", 3, "a", "assistant")]


def test_an_empty_graph_still_has_room_to_show() -> None:
    assert not nodes_rect(EMPTY_LAYOUT).isEmpty()
    assert graph_rect(EMPTY_LAYOUT) == nodes_rect(EMPTY_LAYOUT)


def test_the_extent_holds_every_node_and_leaves_room_for_the_last_labels() -> None:
    layout = layout_graph(branched())
    rect = nodes_rect(layout)
    for node_id in ("a", "b", "c", "b2"):
        column, row = layout.cell(node_id)
        assert rect.contains(cell_point(column, row))
    wide = graph_rect(layout)
    assert wide.width() > rect.width() and wide.height() == rect.height()


def test_the_node_under_a_point_is_read_from_the_grid() -> None:
    layout = layout_graph(branched())
    column, row = layout.cell("b2")
    centre = cell_point(column, row)
    assert node_at(layout, centre) == "b2"
    assert node_at(layout, centre + QPointF(R, 0)) == "b2"  # on its rim
    assert node_at(layout, centre + QPointF(DX / 2 - 1, 0)) is None  # between two cells
    assert node_at(layout, QPointF(-DX * 5, -DY * 5)) is None


def test_a_label_runs_on_over_an_empty_row_and_stops_at_a_neighbour() -> None:
    layout = layout_graph(branched())  # a, b, c down lane 0; b2 beside b in lane 1
    assert layout.cell("b2") == (layout.cell("b")[0] + 1, layout.cell("b")[1])
    beside = label_room(layout, "b", None)
    assert beside == DX - 2 * R - 10  # b2 right next to it: one cell's room
    free = label_room(layout, "c", None)
    assert free == (LABEL_COLUMNS + 2) * DX + DX - 2 * R - 10  # nothing right of c
    x = cell_point(*layout.cell("c")).x()
    assert label_room(layout, "c", limit=x + 60) < free  # a fitted view ends it sooner
    assert label_room(layout, "c", limit=-1000.0) == 0.0


def test_a_new_node_shortens_the_label_of_its_left_neighbour_only() -> None:
    nodes = branched()
    layout = layout_graph(nodes)
    b2_column, b2_row = layout.cell("b2")
    left = {layout.cells[(b2_column - k, b2_row)] for k in range(1, LABEL_COLUMNS + 1)
            if (b2_column - k, b2_row) in layout.cells}
    assert left == {"b"}
    assert left_neighbours(layout, [nodes[-1]]) == {"b"}
    assert left_neighbours(layout, [nodes[0]]) == set()  # nothing left of the root
