"""The graph tab's toolbar: how many nodes and branches the chat has, and Merge… enabled
once two heads are picked (never while a reply runs)."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from treechat.core.model import Node
from treechat.ui.graph.panel import HistoryGraphPanel

from ..session_views import session_view

NODES = [
    Node("a", 0, 0.0, "s", "user", output="Name a colour"),
    Node("b", 1, 1.0, "s", "assistant", output="Blue", predecessor="a"),
    Node("b2", 2, 2.0, "s", "assistant", output="Green", predecessor="a"),
]


def test_the_summary_counts_nodes_and_branches(qtbot: QtBot) -> None:
    panel = HistoryGraphPanel()
    qtbot.addWidget(panel)
    panel.show_view(session_view(NODES, "b"))
    assert panel.summary.text() == "3 nodes · 2 branches"
    panel.clear()
    assert panel.summary.text() == ""


def test_merge_needs_two_heads_and_no_reply_running(qtbot: QtBot) -> None:
    panel = HistoryGraphPanel()
    qtbot.addWidget(panel)
    panel.show_view(session_view(NODES, "b"))
    assert not panel.merge_button.isEnabled()
    asked: list[list[str]] = []
    panel.view.mergeRequested.connect(asked.append)
    panel.view.select(["b", "b2"])
    assert panel.merge_button.isEnabled() and panel.merge_button.text() == "Merge 2…"
    panel.set_busy(True)
    assert not panel.merge_button.isEnabled()
    panel.set_busy(False)
    panel.merge_button.click()
    assert asked == [["b", "b2"]]
