"""The reply streaming in: its text is buffered and painted a few times a second (never per
token), typing dots show until the first text, a new reply drops what the last one still
had buffered, and every stream on screen is painted on one shared frame."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtGui import QColor, QPalette
from pytestqt.qtbot import QtBot

from treechat.core.model import Node
from treechat.ui.chat.compare_view import Column, CompareView
from treechat.ui.chat.streaming import frame_clock
from treechat.ui.chat.view import ChatView
from treechat.ui.richtext.markdown import render_markdown

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


def test_every_stream_on_screen_is_painted_on_one_frame(qtbot: QtBot) -> None:
    """The chat's reply and three columns side by side streaming at once: what each got
    shows after one frame of the shared clock, not one timer (and one repaint) each; the
    columns add their text one after the other within that frame."""
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
    expected = ["".join(f"c{column}.{i} " for i in range(20)) for column in range(3)]
    qtbot.waitUntil(lambda: chat.model.stream_text().endswith("w19 ") and [
        c.body.toPlainText() for c in compare.columns] == expected, timeout=3000)
    assert clock.frames == before + 1 and chat.repaint_count == 1


def test_a_view_closed_before_its_frame_paints_nothing(qtbot: QtBot) -> None:
    compare = CompareView()
    compare.show_columns([Column("", "A", state="streaming")])
    compare.append(0, "late")
    frames = frame_clock().frames
    compare.deleteLater()
    qtbot.waitUntil(lambda: frame_clock().frames > frames, timeout=3000)


MARKDOWN_REPLY = """## Choosing a wood

Maple is **hard** and pale; birch is cheaper. See [the guide](https://example.org/wood).

- measure the shelf
- cut the boards

```python
def cut(board, length):
    return board[:length]
```

| Wood | Hardness |
|---|---|
| maple | high |

> Quotes stay quotes.

Last words, still being written"""


@pytest.mark.parametrize("dark", [False, True])
def test_a_markdown_reply_streams_in_laid_out_as_the_whole_text_is(
    qtbot: QtBot, dark: bool
) -> None:
    """Streamed in small pieces, each painted: the reply on screen is the text so far laid
    out as Markdown, the same document a whole parse gives (headings, code, table, quote)."""
    chat = make(qtbot)
    chat.resize(720, 900)
    if dark:
        palette = QPalette(chat.palette())
        palette.setColor(QPalette.ColorRole.Base, QColor("#18181b"))
        palette.setColor(QPalette.ColorRole.Window, QColor("#1f1f22"))
        palette.setColor(QPalette.ColorRole.Text, QColor("#e6e6e6"))
        chat.setPalette(palette)
    chat.begin_stream("u", "Loopback")
    for at in range(0, len(MARKDOWN_REPLY), 17):
        chat.append_stream_text(MARKDOWN_REPLY[at:at + 17])
        chat.stream.flush()
    row = chat.model.row_at(chat.model.index_of("stream"))
    body = chat.delegate.layout(row).body
    assert body is not None
    whole = render_markdown(MARKDOWN_REPLY, body.width, chat.delegate.theme)
    assert body.document.toPlainText() == whole.document.toPlainText()
    assert body.height == pytest.approx(whole.height, abs=0.5)
    assert [b.text for b in body.code_blocks] == [
        "def cut(board, length):\n    return board[:length]"]
    shot = Path(__file__).resolve().parents[3] / "build" / "screenshots"
    shot.mkdir(parents=True, exist_ok=True)
    assert chat.grab().save(str(shot / f"streaming-markdown-{'dark' if dark else 'light'}.png"))
