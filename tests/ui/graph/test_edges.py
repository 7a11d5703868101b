"""The graph's edges: an attach is drawn from its source head, a merge from every peer head,
and edges are batched into one path item per kind and band of rows."""

from __future__ import annotations

from PySide6.QtWidgets import QGraphicsRectItem

from treechat.core.model import Node
from treechat.ui.common.theme import LIGHT, palette_for
from treechat.ui.graph.edges import EdgeLayer, edge_path, extra_sources
from treechat.ui.graph.items import BAND_ROWS, DY, GraphStyle


def runtime(name: str, metadata: dict[str, object]) -> Node:
    return Node("r", 3, 3.0, "s", "runtime", name=name, predecessor="p", metadata=metadata)


def test_an_attach_comes_from_its_source_head() -> None:
    assert extra_sources(runtime("attach", {"source_head": "h1"})) == [("h1", "attach")]
    assert extra_sources(runtime("attach", {})) == []  # nothing named: no extra edge


def test_a_merge_draws_every_peer_and_its_attaches_draw_none_of_their_own() -> None:
    merge = runtime("merge", {"peers": [{"source_head": "h1"}, "h2", {"other": 1}]})
    assert extra_sources(merge) == [("h1", "merge"), ("h2", "merge")]
    part = runtime("attach", {"source_head": "h1", "merge": "m"})
    assert extra_sources(part) == []


def test_plain_messages_have_only_their_parent() -> None:
    assert extra_sources(Node("u", 1, 1.0, "s", "user", output="hi", predecessor="p")) == []


def test_edges_are_batched_by_kind_and_band(qapp: object) -> None:
    style = GraphStyle.from_palette(palette_for(LIGHT))
    parent = QGraphicsRectItem()
    layer = EdgeLayer(parent, style)
    layer.add("conversation", 0, 0, 0, DY, 1)
    layer.add("conversation", 0, DY, 0, 2 * DY, 2)  # the same band: the same item
    layer.add("attach", 0, 0, 40, DY, 1)
    layer.add("conversation", 0, 0, 0, DY, BAND_ROWS + 1)  # the next band
    assert layer.item_count == 0  # nothing drawn before the flush
    layer.flush()
    assert layer.item_count == 3
    assert len(parent.childItems()) == 3


def test_a_side_lane_edge_curves_and_a_straight_one_does_not() -> None:
    from PySide6.QtCore import QPointF

    straight = edge_path(QPointF(0, 0), QPointF(0, DY), "conversation")
    curved = edge_path(QPointF(0, 0), QPointF(40, DY), "conversation")
    assert straight.elementCount() == 2
    assert curved.elementCount() > 2
