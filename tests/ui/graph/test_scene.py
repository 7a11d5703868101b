"""The history scene mirrors a session's graph: an item per node, HEAD's path marked, new
nodes added without moving the old ones, and another session rebuilt from scratch."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from treechat.core.model import Node
from treechat.ui.common.theme import LIGHT, palette_for
from treechat.ui.graph.items import HEAD, HIDDEN, ON_PATH, PINNED, GraphStyle
from treechat.ui.graph.scene import HistoryScene

from ..session_views import session_view


def node(node_id: str, seq: int, parent: str | None, role: str = "user") -> Node:
    return Node(node_id, seq, float(seq), "s", role, output=node_id, predecessor=parent)


view_of = session_view


NODES = [node("a", 0, None), node("b", 1, "a", "assistant"), node("b2", 2, "a", "assistant")]


def scene_for(qapp: QApplication) -> HistoryScene:
    return HistoryScene(GraphStyle.from_palette(palette_for(LIGHT)))


def test_every_node_gets_an_item_and_heads_path_is_marked(qapp: QApplication) -> None:
    scene = scene_for(qapp)
    scene.show_view(view_of(NODES, "b", pinned=frozenset({"a"})))
    assert scene.complete and set(scene.items_by_id) == {"a", "b", "b2"}
    assert scene.items_by_id["b"].state & HEAD
    assert scene.items_by_id["a"].state & ON_PATH and scene.items_by_id["a"].state & PINNED
    assert not scene.items_by_id["b2"].state & ON_PATH
    scene.set_head("b2")
    assert scene.items_by_id["b2"].state & HEAD and not scene.items_by_id["b"].state & HEAD


def test_new_nodes_never_move_the_old_ones(qapp: QApplication) -> None:
    scene = scene_for(qapp)
    scene.show_view(view_of(NODES, "b"))
    before = {k: scene.point_of(k) for k in scene.nodes}
    grown = [*NODES, node("c", 3, "b"), node("c2", 4, "b2")]
    scene.show_view(view_of(grown, "c"))
    assert {k: scene.point_of(k) for k in before} == before
    assert scene.node_at(scene.point_of("c2")) == "c2"


def test_hiding_a_node_hides_what_follows_it(qapp: QApplication) -> None:
    scene = scene_for(qapp)
    grown = [*NODES, node("c2", 3, "b2")]
    scene.show_view(view_of(grown, "b", hidden=frozenset({"b2"})))
    assert scene.hidden_ids == {"b2", "c2"}
    assert scene.items_by_id["c2"].state & HIDDEN


def test_another_session_or_a_new_chat_starts_afresh(qapp: QApplication) -> None:
    scene = scene_for(qapp)
    scene.show_view(view_of(NODES, "b"))
    other = [Node("x", 0, 0.0, "t", "user", output="x")]
    scene.show_view(view_of(other, "x", session="t"))
    assert set(scene.nodes) == {"x"} and scene.session_id == "t"
    scene.clear_view()
    assert scene.nodes == {} and scene.head is None and scene.session_id is None


def test_a_long_chat_s_end_then_its_whole_is_one_line_as_if_drawn_whole(
    qapp: QApplication,
) -> None:
    """A long chat opens on its end, then the whole path arrives: the older nodes take their
    place above the end, in one lane, and HEAD is where a whole first draw puts it."""
    line = [node(f"n{i}", i, f"n{i - 1}" if i else None, "user" if i % 2 == 0 else "assistant")
            for i in range(40)]
    whole = scene_for(qapp)
    whole.show_view(view_of(line, "n39"))
    scene = scene_for(qapp)
    scene.show_view(view_of(line[30:], "n39"))  # the end alone: n30 has no parent here
    scene.show_view(view_of(line, "n39"))
    assert {k: scene.point_of(k) for k in scene.nodes} == {
        k: whole.point_of(k) for k in whole.nodes}
    assert {scene.point_of(k).x() for k in scene.nodes} == {whole.point_of("n0").x()}
    assert scene.head == "n39"
