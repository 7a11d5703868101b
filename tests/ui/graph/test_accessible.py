"""The graph as a screen reader reads it: a list with one item per node, top to bottom,
each named by who wrote it and how it begins, described by its version and marks; asking
past the last item, or for an item's own children, finds nothing."""

from __future__ import annotations

from PySide6.QtGui import QAccessible
from pytestqt.qtbot import QtBot

from treechat.core.model import Node
from treechat.services.turns.sessions import SessionView
from treechat.ui.graph.accessible import install_graph_accessibility
from treechat.ui.graph.view import HistoryGraphView

from ..session_views import session_view


def view_of(head: str) -> SessionView:
    nodes = (
        Node("q", 0, 0.0, "s", "user", output="Name a colour"),
        Node("a1", 1, 1.0, "s", "assistant", output="Blue", predecessor="q"),
        Node("a2", 2, 2.0, "s", "assistant", output="Green", predecessor="q"),
    )
    return session_view(nodes, head, pinned=frozenset({"q"}))


def test_each_node_is_a_named_list_item(qtbot: QtBot) -> None:
    install_graph_accessibility()
    view = HistoryGraphView()
    qtbot.addWidget(view)
    view.resize(300, 300)
    view.show()
    view.show_view(view_of("a2"))
    graph = QAccessible.queryAccessibleInterface(view)
    assert graph is not None and graph.role() == QAccessible.Role.List
    assert graph.childCount() == 3
    first = graph.child(0)
    assert first.role() == QAccessible.Role.ListItem
    assert first.text(QAccessible.Text.Name) == "You · Name a colour"
    assert "pinned" in first.text(QAccessible.Text.Description)
    names = [graph.child(i).text(QAccessible.Text.Name) for i in range(3)]
    assert names[1:] == ["Assistant · Blue", "Assistant · Green"]
    head = graph.child(2).text(QAccessible.Text.Description)
    assert "version 2 of 2" in head and "current position (HEAD)" in head
    assert graph.indexOfChild(graph.child(1)) == 1
    assert graph.focusChild().text(QAccessible.Text.Name) == "Assistant · Green"


def test_nothing_is_found_past_the_items(qtbot: QtBot) -> None:
    install_graph_accessibility()
    view = HistoryGraphView()
    qtbot.addWidget(view)
    view.show()
    view.show_view(view_of("a1"))
    graph = QAccessible.queryAccessibleInterface(view)
    assert graph is not None
    assert graph.child(3) is None
    item = graph.child(0)
    assert item.childCount() == 0 and item.child(0) is None and item.object() is None
    assert item.childAt(0, 0) is None and item.focusChild() is None
