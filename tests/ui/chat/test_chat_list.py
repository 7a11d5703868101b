"""The chat's list: arriving by keyboard lands on the newest message, moving with the arrow
keys brings the message into view, and it scrolls by lines, not whole messages."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from treechat.core import dag
from treechat.core.model import Node, Session
from treechat.services.sessions import SessionView
from treechat.ui.chat.view import ChatView


def long_chat(qtbot: QtBot, n: int = 40) -> ChatView:
    nodes = [Node(f"n{i}", i, float(i), "s", "user" if i % 2 == 0 else "assistant",
                  output=f"message {i} " * 20, predecessor=f"n{i - 1}" if i else None)
             for i in range(n)]
    graph = dag.Graph(tuple(nodes))
    session = Session("s", "Long", nodes[-1].id, "m", 1.0, updated_at=1.0)
    chat = ChatView()
    qtbot.addWidget(chat)
    chat.resize(600, 400)
    chat.show()
    chat.set_view(SessionView(session, graph, tuple(nodes), frozenset(), frozenset()))
    return chat


def test_the_keyboard_lands_on_the_newest_message_and_walks_into_view(qtbot: QtBot) -> None:
    chat = long_chat(qtbot)
    chat.list.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.waitUntil(lambda: chat.list.currentIndex().isValid(), timeout=3000)
    assert chat.list.currentIndex().row() == chat.model.rowCount() - 1
    for _ in range(12):
        QTest.keyClick(chat.list, Qt.Key.Key_Up)
    current = chat.list.currentIndex()
    assert current.row() == chat.model.rowCount() - 13
    assert chat.list.viewport().rect().intersects(chat.list.visualRect(current))


def test_it_scrolls_by_lines(qtbot: QtBot) -> None:
    chat = long_chat(qtbot)
    bar = chat.list.verticalScrollBar()
    assert bar.singleStep() == 36
    assert bar.pageStep() == max(36, chat.list.viewport().height() - 48)
