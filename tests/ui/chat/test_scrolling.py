"""The list keeps still while the chat changes under it: at the end it follows new messages;
scrolled up, the message at the top stays where it is when the chat grows or the window
is resized, or when the rows above a long chat's end come in."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from treechat.services.turns.sessions import SessionView
from treechat.ui.chat.view import ChatView

from ..session_views import chain, session_view, shown_chat


def view_of(n: int) -> SessionView:
    return session_view(chain(n, repeat=25))


def shown(qtbot: QtBot) -> ChatView:
    return shown_chat(qtbot, view_of(30), (600, 420))


def test_at_the_end_the_list_follows_new_messages(qtbot: QtBot) -> None:
    chat = shown(qtbot)
    qtbot.waitUntil(chat.at_bottom, timeout=3000)
    chat.set_view(view_of(32))
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
    chat.set_view(view_of(34))
    assert not chat.at_bottom()
    assert abs(chat.row_rect(key).top() - before) <= 1
    chat.resize(640, 420)
    qtbot.waitUntil(lambda: chat.list.viewport().width() > 560, timeout=3000)
    assert chat.list.indexAt(chat.list.viewport().rect().topLeft()).row() == top.row()
    assert chat.list.verticalScrollBar().value() > 0


def test_scrolled_near_the_top_of_a_long_chat_the_rows_above_come_in_under_a_still_screen(
    qtbot: QtBot,
) -> None:
    chat = shown_chat(qtbot, view_of(1_000), (600, 420))
    qtbot.waitUntil(chat.at_bottom, timeout=3000)
    held = len(chat.model.rows)
    assert held < 1_000 and chat.model.has_earlier()
    bar = chat.list.verticalScrollBar()
    first = chat.model.rows[0].key
    ahead = chat.model.earlier_rows()
    # left idle, the list measures the rows above what it holds too
    qtbot.waitUntil(lambda: all(chat.delegate.is_known(r) for r in ahead), timeout=10_000)
    bar.setValue(bar.minimum() + 20)  # up to the top of what the list holds
    assert all(chat.delegate.is_measured(r) for r in ahead)  # in with their heights
    assert len(chat.model.rows) > held and chat.model.rows[0].key != first
    # the message that was at the top is still on screen: the rows came in above it
    assert chat.list.viewport().rect().intersects(chat.row_rect(first).toRect())
    assert bar.value() > 0  # ... to scroll on to
    top = chat.list.indexAt(chat.list.viewport().rect().topLeft())
    key = chat.model.row_at(top.row()).key
    before = chat.row_rect(key).top()
    chat.set_view(view_of(1_002))  # the chat grows at its end meanwhile
    assert abs(chat.row_rect(key).top() - before) <= 1


def test_a_long_chat_read_whole_after_its_end_keeps_the_screen_still(qtbot: QtBot) -> None:
    nodes = chain(1_000, repeat=25)
    chat = shown_chat(qtbot, session_view(nodes[-59:]), (600, 420))  # its end, read alone
    qtbot.waitUntil(chat.at_bottom, timeout=3000)
    bar = chat.list.verticalScrollBar()
    bar.setValue(bar.maximum() // 2)  # scrolled up while the rest is read
    top = chat.list.indexAt(chat.list.viewport().rect().topLeft())
    key = chat.model.row_at(top.row()).key
    before = chat.row_rect(key).top()
    chat.set_view(session_view(nodes))
    assert chat.model.rows[0].key == "n940"  # a row came in above
    assert abs(chat.row_rect(key).top() - before) <= 1
