"""What is under the pointer on a chat row, and whether it can be used now: a row's buttons
and a code block's copy button are found where they are drawn; edit and retry are
locked while a reply runs, a rate-limited retry until its wait is over; copied marks fade."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF
from pytestqt.qtbot import QtBot

from treechat.core.model import Node
from treechat.ui.chat.hit_testing import COPIED_FOR_S, RowInteraction, button_of, hit
from treechat.ui.chat.row_layout import Button
from treechat.ui.chat.view import ChatView

from ..session_views import session_view, shown_chat

BOX = QRectF(0, 0, 20, 20)
REPLY = "See [the docs](https://example.org/).\n\n```python\nprint(1)\n```"


def chat_view(qtbot: QtBot) -> ChatView:
    ask = Node("u", 0, 1.0, "s", "user", output="How do I print?")
    answer = Node("a", 1, 2.0, "s", "assistant", output=REPLY, predecessor="u")
    return shown_chat(qtbot, session_view([ask, answer]), (700, 600))


def test_buttons_and_code_blocks_are_found_where_they_are_drawn(qtbot: QtBot) -> None:
    chat = chat_view(qtbot)
    row = chat.model.row_at(chat.model.index_of("a"))
    layout = chat.delegate.layout(row)
    retry = button_of(layout, "retry")
    assert retry is not None and hit(layout, retry.rect.center()) == "retry"
    body = layout.body
    assert body is not None
    copy = body.code_blocks[0].copy_rect.center() + layout.body_origin
    assert hit(layout, copy) == "code:0"
    assert hit(layout, QPointF(-100, -100)) == ""
    assert button_of(layout, "no-such-action") is None


def test_edit_and_retry_are_locked_while_a_reply_runs() -> None:
    now = [100.0]
    state = RowInteraction(lambda: now[0])
    retry = Button("retry", BOX, "Retry the reply")
    copy = Button("copy", BOX, "Copy")
    assert state.button_enabled(retry)
    state.busy = True
    assert not state.button_enabled(retry) and state.button_enabled(copy)
    state.busy = False
    wait = Button("error:wait", BOX, "Retry")
    state.wait_until = 130.0
    assert not state.button_enabled(wait) and state.wait_left() == 31
    now[0] = 131.0
    assert state.button_enabled(wait)


def test_a_copied_mark_shows_for_a_moment(qtbot: QtBot) -> None:
    now = [0.0]
    state = RowInteraction(lambda: now[0])
    state.mark_copied("a", "code:1")
    assert state.is_copied("a", "code:1") and state.copied_code("a") == 1
    now[0] = COPIED_FOR_S + 0.1
    assert not state.is_copied("a", "code:1") and state.copied_code("a") is None

