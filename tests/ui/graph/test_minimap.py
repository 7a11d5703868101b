"""The minimap in the graph's corner: the whole graph drawn small with the visible part
framed; a press there moves the view to that place."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from treechat.core import dag
from treechat.core.model import Node, Session
from treechat.services.sessions import SessionView
from treechat.ui.graph.view import HistoryGraphView


def long_chat(n: int = 60) -> SessionView:
    nodes = [Node(f"n{i}", i, float(i), "s", "user" if i % 2 == 0 else "assistant",
                  output=f"message {i}", predecessor=f"n{i - 1}" if i else None)
             for i in range(n)]
    graph = dag.Graph(tuple(nodes))
    head = nodes[-1].id
    session = Session("s", "Long", head, "m", 1.0, updated_at=1.0)
    return SessionView(session, graph, dag.active_path(graph, head), frozenset(), frozenset())


def test_a_click_on_the_minimap_moves_the_view_there(qtbot: QtBot) -> None:
    view = HistoryGraphView()
    qtbot.addWidget(view)
    view.resize(360, 360)
    view.show()
    view.show_view(long_chat())
    view.center_on_node("n59", 1.0)
    minimap = view.minimap
    image = minimap.grab().toImage()  # paints the overview
    assert not image.isNull() and minimap.width() == 112
    before = view.mapToScene(view.viewport().rect().center())
    at = QPointF(56, 8)  # its top
    press = QMouseEvent(QEvent.Type.MouseButtonPress, at, minimap.mapToGlobal(at),
                        Qt.MouseButton.LeftButton, Qt.MouseButton.LeftButton,
                        Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(minimap, press)
    after = view.mapToScene(view.viewport().rect().center())
    assert after.y() < before.y()  # towards the chat's first messages
