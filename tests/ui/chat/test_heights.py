"""Row heights: a row not measured yet gets a quick estimate, measuring gives its real
height (and says whether that moved it), heights measured in the background wait until
applied, and a row being edited takes its editor's height."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from treechat.core.model import Node
from treechat.ui.chat.heights import RowHeights
from treechat.ui.chat.view import ChatView

from ..session_views import session_view, shown_chat

LONG = "A sentence that goes on for a while about the weather. " * 30


def heights_of(qtbot: QtBot) -> tuple[RowHeights, ChatView]:
    ask = Node("u", 0, 1.0, "s", "user", output="Tell me about the weather")
    answer = Node("a", 1, 2.0, "s", "assistant", output=LONG, predecessor="u")
    chat = shown_chat(qtbot, session_view([ask, answer]), visible=False)
    return chat.delegate.heights, chat


def test_an_estimate_until_measured_then_the_real_height(qtbot: QtBot) -> None:
    heights, chat = heights_of(qtbot)
    heights.width = 600
    reply = chat.model.row_at(chat.model.index_of("a"))
    heights.forget(fonts_changed=True)
    assert not heights.is_measured(reply)
    guess = heights.row_height(reply)
    real, _moved = heights.measure(reply)
    assert heights.is_measured(reply) and heights.row_height(reply) == real
    assert 0.5 * real <= guess <= 2 * real
    assert heights.measure(reply) == (real, False)  # measured again: nothing moves
    heights.width = 300
    narrower, _ = heights.measure(reply)
    assert narrower > real  # the same text wraps into more lines


def test_background_heights_wait_until_applied(qtbot: QtBot) -> None:
    heights, chat = heights_of(qtbot)
    heights.width = 500
    heights.forget(fonts_changed=True)
    reply = chat.model.row_at(chat.model.index_of("a"))
    guess = heights.row_height(reply)
    real, moved = heights.measure(reply, defer=True)
    assert not moved and heights.has_pending() and heights.is_known(reply)
    assert heights.row_height(reply) == guess  # not in use yet
    assert heights.apply_pending() == (real != guess)
    assert heights.row_height(reply) == real and not heights.has_pending()


def test_a_row_being_edited_takes_its_editors_height(qtbot: QtBot) -> None:
    heights, chat = heights_of(qtbot)
    ask = chat.model.row_at(chat.model.index_of("u"))
    heights.set_editing("u", 240)
    assert heights.row_height(ask) == 240 and heights.is_measured(ask)
    heights.stop_editing("u")
    assert heights.row_height(ask) != 240
