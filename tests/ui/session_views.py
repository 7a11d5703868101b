"""Sessions as the window shows them, made in memory for widget tests: a graph of nodes, its
HEAD and the path to it, and a chat view showing one."""

from __future__ import annotations

from collections.abc import Sequence

from pytestqt.qtbot import QtBot

from treechat.core import dag
from treechat.core.model import Node, Session
from treechat.services.turns.sessions import SessionView
from treechat.ui.chat.view import ChatView


def session_view(nodes: Sequence[Node], head: str | None = None, *, session: str = "s",
                 hidden: frozenset[str] = frozenset(),
                 pinned: frozenset[str] = frozenset()) -> SessionView:
    """`nodes` as one session with HEAD on `head` (the last node when None)."""
    graph = dag.Graph(tuple(nodes))
    head = head if head is not None else nodes[-1].id
    row = Session(session, "Chat", head, "m", 1.0, updated_at=1.0)
    return SessionView(row, graph, dag.active_path(graph, head), hidden, pinned)


def chain(n: int, words: str = "message", repeat: int = 1) -> list[Node]:
    """`n` messages, a question and a reply in turn, each answering the one before."""
    return [Node(f"n{i}", i, float(i), "s", "user" if i % 2 == 0 else "assistant",
                 output=f"{words} {i} " * repeat, predecessor=f"n{i - 1}" if i else None)
            for i in range(n)]


def shown_chat(qtbot: QtBot, view: SessionView, size: tuple[int, int] = (640, 480), *,
               visible: bool = True) -> ChatView:
    """A chat view of `size` showing `view`."""
    chat = ChatView()
    qtbot.addWidget(chat)
    chat.resize(*size)
    if visible:
        chat.show()
    chat.set_view(view)
    return chat
