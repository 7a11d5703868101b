"""Chats dragged within the chat list: what a drag carries (the pressed chat, with the other
picked ones when it is one of them), where a drop would put them (the project under the
pointer, or out of every project), the project highlighted while the drag is over it, and
nothing taken where nothing would change or while the list shows search hits."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, QModelIndex, QPoint, QPointF, Qt
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from treechat.core.model import Session
from treechat.ui.sessions.chat_drop import (
    CHATS_MIME,
    add_chats,
    drag_label,
    dragged_chats,
    read_chats,
)
from treechat.ui.sessions.list import SessionList
from treechat.ui.sessions.roles import SESSION_ID_ROLE

NOW = 1_700_000_000.0
MOVE_OR_COPY = Qt.DropAction.CopyAction | Qt.DropAction.MoveAction


def chats() -> list[Session]:
    return [Session(f"s{n}", f"Chat {n}", None, "m", NOW - n * 60, updated_at=NOW - n * 60)
            for n in range(1, 5)]


def listing(qtbot: QtBot) -> SessionList:
    widget = SessionList()
    qtbot.addWidget(widget)
    widget.resize(280, 500)
    widget.set_sessions(chats(), NOW)
    widget.set_projects([("p1", "Kitchen"), ("p2", "Garden")], {"s1": "p1"})
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def centre(widget: SessionList, index: QModelIndex) -> QPoint:
    return widget.view.visualRect(index).center()


def drag_over(widget: SessionList, mime: QMimeData, at: QPoint) -> bool:
    """A drag entering the list and moving to `at`: whether the list would take it there."""
    port = widget.view.viewport()
    enter = QDragEnterEvent(at, MOVE_OR_COPY, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(port, enter)
    if not enter.isAccepted():  # the drag manager sends no moves to what refused it
        return False
    move = QDragMoveEvent(at, MOVE_OR_COPY, mime, Qt.MouseButton.LeftButton,
                          Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(port, move)
    return move.isAccepted()


def drop(widget: SessionList, mime: QMimeData, at: QPoint) -> QDropEvent:
    """A drag over the list released at `at` (the drag manager drops on what took it)."""
    assert drag_over(widget, mime, at)
    event = QDropEvent(QPointF(at), MOVE_OR_COPY, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(widget.view.viewport(), event)
    return event


def test_a_drag_carries_the_pressed_chat_and_the_picked_ones_with_it(qtbot: QtBot) -> None:
    widget = listing(qtbot)
    view, model = widget.view, widget.model
    view.setCurrentIndex(model.index_of("s2"))
    view.selectionModel().select(model.index_of("s4"),
                                 view.selectionModel().SelectionFlag.Select)
    assert widget.selected_session_ids() == ["s2", "s4"]
    # another chat's new reply lays the rows out anew: the picks stay
    s3 = chats()[2]
    widget.upsert(Session(s3.id, s3.title, None, "m", s3.created_at, updated_at=NOW + 60), NOW)
    order = [model.index(r).data(SESSION_ID_ROLE) for r in range(model.rowCount())]
    assert order.index("s3") < order.index("s2")  # it moved up
    assert widget.selected_session_ids() == ["s2", "s4"]
    assert widget.current_session_id() == "s2"
    widget.select("s2")  # the window naming the open chat again changes nothing
    assert widget.selected_session_ids() == ["s2", "s4"]
    assert dragged_chats(view, model.index_of("s4")) == ["s4", "s2"]
    assert dragged_chats(view, model.index_of("s3")) == ["s3"]  # not picked: alone
    assert dragged_chats(view, model.project_index("p1")) == []  # a folder is not a chat
    data = add_chats(QMimeData(), ["s4", "s2"])
    assert read_chats(data) == ["s4", "s2"]
    broken = QMimeData()
    broken.setData(CHATS_MIME, b"{not json")
    assert read_chats(broken) == [] and read_chats(QMimeData()) == []


def test_chats_dropped_on_a_project_go_into_it(qtbot: QtBot) -> None:
    widget = listing(qtbot)
    garden = centre(widget, widget.model.project_index("p2"))
    mime = add_chats(QMimeData(), ["s2", "s3"])
    hints: list[str] = []
    widget.dropHint.connect(hints.append)
    assert drag_over(widget, mime, garden)
    assert widget.delegate.drop_project == "p2"  # the folder is drawn as the target
    assert hints == ["Release to move 2 chats into “Garden”"]  # said once, not every move
    with qtbot.waitSignal(widget.chatsDropped) as dropped:
        event = drop(widget, mime, garden)
    assert dropped.args == [["s2", "s3"], "p2"]
    assert event.isAccepted() and event.dropAction() == Qt.DropAction.MoveAction
    assert widget.delegate.drop_project is None and hints[-1] == ""


def test_a_drop_on_a_chat_in_a_project_joins_it_and_among_the_rest_leaves_it(
    qtbot: QtBot,
) -> None:
    widget = listing(qtbot)
    model = widget.model
    in_kitchen = model.index_of("s1")
    assert in_kitchen.data(SESSION_ID_ROLE) == "s1"
    with qtbot.waitSignal(widget.chatsDropped) as dropped:
        drop(widget, add_chats(QMimeData(), ["s3"]), centre(widget, in_kitchen))
    assert dropped.args == [["s3"], "p1"]
    outside = centre(widget, model.index_of("s4"))
    with qtbot.waitSignal(widget.chatsDropped) as dropped:
        drop(widget, add_chats(QMimeData(), ["s1", "s2"]), outside)
    assert dropped.args == [["s1"], ""]  # s2 is outside already: only s1 moves
    below = QPoint(20, widget.view.viewport().height() - 3)  # the empty space under the rows
    assert widget.view.indexAt(below).isValid() is False
    hints: list[str] = []
    widget.dropHint.connect(hints.append)
    assert drag_over(widget, add_chats(QMimeData(), ["s1"]), below)
    assert widget.delegate.drop_project is None  # out of every project: no folder lit
    assert hints == ["Release to take “Chat 1” out of its project"]


def test_nothing_is_taken_where_nothing_would_change(qtbot: QtBot) -> None:
    widget = listing(qtbot)
    kitchen = centre(widget, widget.model.project_index("p1"))
    assert not drag_over(widget, add_chats(QMimeData(), ["s1"]), kitchen)  # already in it
    assert widget.delegate.drop_project is None
    assert not drag_over(widget, add_chats(QMimeData(), ["gone"]), kitchen)  # unknown chat
    files = QMimeData()
    files.setText("just text")
    assert not drag_over(widget, files, kitchen)
    widget.search.setText("kitchen")
    widget.show_results("kitchen", [(chats()[1], "…")])
    assert widget.model.searching
    assert not drag_over(widget, add_chats(QMimeData(), ["s2"]), QPoint(20, 10))


def test_the_pointer_carries_the_chat_or_how_many(qtbot: QtBot) -> None:
    widget = listing(qtbot)
    one = drag_label(widget.view, ["s2"], "Chat 2")
    several = drag_label(widget.view, ["s2", "s3", "s4"], "Chat 2")
    long = drag_label(widget.view, ["s2"], "A title far longer than any pill should be " * 5)
    assert not one.isNull() and not several.isNull()
    metrics = widget.view.fontMetrics()
    assert one.deviceIndependentSize().width() >= metrics.horizontalAdvance("Chat 2") + 20
    assert several.deviceIndependentSize().width() >= metrics.horizontalAdvance("3 chats") + 20
    assert long.deviceIndependentSize().width() <= 300  # cut with an ellipsis
    centre = one.toImage().pixelColor(one.width() // 2, 2)
    assert centre.alpha() == 255  # filled, in the accent colour
