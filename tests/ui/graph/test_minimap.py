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


def long_chain_in(qtbot: QtBot, width: int, height: int, at: str) -> HistoryGraphView:
    """A view of that size on 60 messages whose labels run far right, centred on `at`."""
    view = HistoryGraphView()
    qtbot.addWidget(view)
    view.resize(width, height)
    view.show()
    view.show_view(session_view(chain(60, "a message long enough to run under the corner")))
    view.center_on_node(at, 1.0)
    return view


def test_the_last_rows_scroll_clear_of_the_minimap(qtbot: QtBot) -> None:
    view = long_chain_in(qtbot, 420, 640, "n59")
    assert view.minimap.isVisible()
    bar = view.verticalScrollBar()
    bar.setValue(bar.maximum())
    label = view.mapFromScene(view.graph_scene.label_rect("n59")).boundingRect()
    node = view.mapFromScene(view.graph_scene.point_of("n59"))
    assert view.viewport().rect().contains(node)
    assert not label.intersects(view.minimap.geometry())  # the newest label is readable


def test_a_view_too_low_for_the_minimap_shows_none(qtbot: QtBot) -> None:
    """In a view less than twice the minimap's height (the window at its smallest) it would
    cover the labels it helps to find, so it is not shown; it comes back with the room."""
    view = long_chain_in(qtbot, 360, 260, "n30")
    qtbot.waitUntil(lambda: view.viewport().height() > 0)
    assert not view.minimap.isVisible()
    view.resize(360, 420)
    qtbot.waitUntil(view.minimap.isVisible)
