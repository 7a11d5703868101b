"""Gestures on the graph: a node's menu offers what the node allows (no edit of a reply, no
retry while one runs, a merge once two heads are picked), its preview says who wrote it and
its marks, and the arrow keys walk parent, child on HEAD's path and row neighbours."""

from __future__ import annotations

from PySide6.QtCore import Qt
from pytestqt.qtbot import QtBot

from treechat.core.model import Node
from treechat.ui.graph.interactions import cursor_target, node_menu, preview_html, shown_name
from treechat.ui.graph.view import HistoryGraphView

from ..session_views import session_view

NODES = (
    Node("q", 0, 0.0, "s", "user", output="Name a colour"),
    Node("a1", 1, 1.0, "s", "assistant", output="Blue", predecessor="q",
         metadata={"model_label": "Loopback GPT"}),
    Node("a2", 2, 2.0, "s", "assistant", output="Green <b>", predecessor="q"),
    Node("t", 3, 3.0, "s", "tool", name="read_file", predecessor="a2", input={"path": "x"},
         metadata={"mcp": {"server": "files", "tool": "read"}}),
)


def graph_view(qtbot: QtBot, head: str = "a2") -> HistoryGraphView:
    view = HistoryGraphView()
    qtbot.addWidget(view)
    view.resize(400, 400)
    view.show_view(session_view(NODES, head, pinned=frozenset({"q"})))
    return view


def labels(view: HistoryGraphView, node_id: str) -> dict[str, bool]:
    return {a.text(): a.isEnabled() for a in node_menu(view, node_id).actions() if a.text()}


def test_a_nodes_menu_offers_what_the_node_allows(qtbot: QtBot) -> None:
    view = graph_view(qtbot)
    assert labels(view, "q")["Edit…"] and labels(view, "q")["Unpin"]
    reply = labels(view, "a1")
    assert not reply["Edit…"] and reply["Retry"] and reply["Pin"]
    assert not reply["Merge 1 branches…"]
    view.select(["a1"])
    assert labels(view, "a2")["Merge 2 branches…"]
    view.busy = True
    busy = labels(view, "a2")
    assert not busy["Retry"] and not busy["Merge 2 branches…"]
    asked: list[str] = []
    view.checkoutRequested.connect(asked.append)
    next(a for a in node_menu(view, "a1").actions() if a.text() == "Check out").trigger()
    assert asked == ["a1"]


def test_the_preview_names_the_writer_and_escapes_the_text(qtbot: QtBot) -> None:
    view = graph_view(qtbot)
    scene = view.graph_scene
    assert shown_name(scene.nodes["a1"]) == "Loopback GPT"
    assert shown_name(scene.nodes["t"]) == "files › read"
    head = preview_html(scene, "a2")
    assert "version 2/2" in head and "(HEAD)" in head and "Green &lt;b&gt;" in head
    assert "pinned" in preview_html(scene, "q")
    assert "{&quot;path&quot;: &quot;x&quot;}" in preview_html(scene, "t")


def test_arrow_keys_walk_the_graph(qtbot: QtBot) -> None:
    view = graph_view(qtbot)
    scene = view.graph_scene
    assert cursor_target(scene, Qt.Key.Key_Up) == "q"  # from HEAD to its parent
    scene.set_focused("q")
    assert cursor_target(scene, Qt.Key.Key_Down) == "a2"  # the child on HEAD's path
    scene.set_focused("a1")
    assert cursor_target(scene, Qt.Key.Key_Right) == "a2"
    assert cursor_target(scene, Qt.Key.Key_Left) is None
