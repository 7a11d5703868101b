"""The list keeps still while the chat changes under it: at the end it follows new messages;
scrolled up, the message at the top stays where it is when the chat grows or the window
is resized."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from treechat.core import dag
from treechat.core.model import Node, Session
from treechat.services.sessions import SessionView
from treechat.ui.chat.view import ChatView


def nodes_of(n: int) -> list[Node]:
    return [Node(f"n{i}", i, float(i), "s", "user" if i % 2 == 0 else "assistant",
                 output=f"message {i} " * 25, predecessor=f"n{i - 1}" if i else None)
            for i in range(n)]


def view_of(nodes: list[Node]) -> SessionView:
    graph = dag.Graph(tuple(nodes))
    session = Session("s", "Long", nodes[-1].id, "m", 1.0, updated_at=1.0)
    return SessionView(session, graph, tuple(nodes), frozenset(), frozenset())


def shown(qtbot: QtBot) -> ChatView:
    chat = ChatView()
    qtbot.addWidget(chat)
    chat.resize(600, 420)
    chat.show()
    chat.set_view(view_of(nodes_of(30)))
    return chat


def test_at_the_end_the_list_follows_new_messages(qtbot: QtBot) -> None:
    chat = shown(qtbot)
    qtbot.waitUntil(chat.at_bottom, timeout=3000)
    chat.set_view(view_of(nodes_of(32)))
    qtbot.waitUntil(chat.at_bottom, timeout=3000)
    assert chat.list.viewport().rect().intersects(chat.row_rect("n31").toRect())


def test_scrolled_up_the_top_message_stays_put(qtbot: QtBot) -> None:
    chat = shown(qtbot)
    chat.list.scrollTo(chat.model.index(chat.model.index_of("n10")),
                       chat.list.ScrollHint.PositionAtTop)
    qtbot.waitUntil(lambda: not chat.at_bottom(), timeout=3000)
    top = chat.list.indexAt(chat.list.viewport().rect().topLeft())
    key = chat.model.row_at(top.row()).key
    before = chat.row_rect(key).top()
    chat.set_view(view_of(nodes_of(34)))
    assert not chat.at_bottom()
    assert abs(chat.row_rect(key).top() - before) <= 1
    chat.resize(640, 420)
    qtbot.waitUntil(lambda: chat.list.viewport().width() > 560, timeout=3000)
    assert chat.list.indexAt(chat.list.viewport().rect().topLeft()).row() == top.row()
    assert chat.list.verticalScrollBar().value() > 0
