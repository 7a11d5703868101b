"""The reply streaming in: its text is buffered and painted a few times a second (never per
token), typing dots show until the first text, a new reply drops what the last one still
had buffered, and every stream on screen is painted on one shared frame."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from treechat.core.model import Node
from treechat.ui.chat.compare_view import Column, CompareView
from treechat.ui.chat.streaming import frame_clock
from treechat.ui.chat.view import ChatView

from ..session_views import session_view, shown_chat


def make(qtbot: QtBot) -> ChatView:
    return shown_chat(qtbot, session_view([Node("u", 0, 1.0, "s", "user",
                                                output="Tell me a story")]))


def test_text_is_painted_in_few_flushes_and_dots_show_until_it_starts(qtbot: QtBot) -> None:
    chat = make(qtbot)
    chat.begin_stream("u", "Loopback")
    assert chat.row_keys()[-1] == "stream"
    phase = chat.delegate.typing_phase
    qtbot.waitUntil(lambda: chat.delegate.typing_phase > phase, timeout=3000)  # the dots move
    for i in range(200):
        chat.append_stream_text(f"w{i} ")
    assert chat.model.stream_text() == ""  # buffered, not painted per token
    chat.stream.flush()
    assert chat.model.stream_text() == "".join(f"w{i} " for i in range(200))
    assert chat.repaint_count == 1
    chat.append_stream_text("The end.")
    qtbot.waitUntil(lambda: chat.model.stream_text().endswith("The end."), timeout=3000)
    assert chat.repaint_count == 2
    chat.end_stream()
    assert not chat.model.streaming


def test_a_new_reply_drops_what_the_last_one_still_had_buffered(qtbot: QtBot) -> None:
    chat = make(qtbot)
    chat.begin_stream("u", "Loopback")
    chat.append_stream_text("from the reply that was stopped")
    chat.begin_stream("u", "Loopback")
    chat.stream.flush()
    assert chat.model.stream_text() == ""
    assert chat.repaint_count == 0


def test_a_hidden_chat_lays_nothing_out_and_shows_every_piece_in_order_once_seen(
    qtbot: QtBot,
) -> None:
    chat = make(qtbot)
    chat.begin_stream("u", "Loopback")
    chat.list.hide()  # the replies side by side are shown in its place
    for i in range(50):
        chat.append_stream_text(f"w{i} ")
    qtbot.wait(400)  # several paint intervals go by
    assert chat.repaint_count == 0 and chat.model.stream_text() == ""
    chat.list.show()
    expected = "".join(f"w{i} " for i in range(50))
    qtbot.waitUntil(lambda: chat.model.stream_text() == expected, timeout=3000)
    assert chat.repaint_count == 1


def test_a_reply_that_ends_while_hidden_keeps_all_its_text(qtbot: QtBot) -> None:
    chat = make(qtbot)
    chat.begin_stream("u", "Loopback")
    chat.list.hide()
    chat.append_stream_text("all of ")
    chat.append_stream_text("it")
    chat.stream.flush()  # what end_stream, a redraw or an error asks for: painted at once
    assert chat.model.stream_text() == "all of it"


def test_every_stream_on_screen_is_painted_in_one_pass_a_frame(qtbot: QtBot) -> None:
    """The chat's reply and three columns side by side streaming at once: what each got
    shows after one frame of the shared clock, not one timer (and one repaint) each."""
    chat = make(qtbot)
    chat.begin_stream("u", "Loopback")
    compare = CompareView()
    qtbot.addWidget(compare)
    compare.show_columns([Column("", name, state="streaming") for name in ("A", "B", "C")])
    clock = frame_clock()
    qtbot.waitUntil(lambda: not clock.waiting(), timeout=3000)
    before = clock.frames
    for i in range(20):
        chat.append_stream_text(f"w{i} ")
        for column in range(3):
            compare.append(column, f"c{column}.{i} ")
    qtbot.waitUntil(lambda: chat.model.stream_text().endswith("w19 "), timeout=3000)
    assert [c.body.toPlainText() for c in compare.columns] == [
        "".join(f"c{column}.{i} " for i in range(20)) for column in range(3)]
    assert clock.frames == before + 1 and chat.repaint_count == 1


def test_a_view_closed_before_its_frame_paints_nothing(qtbot: QtBot) -> None:
    compare = CompareView()
    compare.show_columns([Column("", "A", state="streaming")])
    compare.append(0, "late")
    frames = frame_clock().frames
    compare.deleteLater()
    qtbot.waitUntil(lambda: frame_clock().frames > frames, timeout=3000)
