"""The minimap in the graph's corner: the whole graph drawn small with the visible part
framed; a press there moves the view to that place."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from treechat.ui.graph.view import HistoryGraphView

from ..session_views import chain, session_view


def test_a_click_on_the_minimap_moves_the_view_there(qtbot: QtBot) -> None:
    view = HistoryGraphView()
    qtbot.addWidget(view)
    view.resize(360, 360)
    view.show()
    view.show_view(session_view(chain(60)))
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
