"""Selecting part of a message in the chat view with the mouse, on a real session (a DuckDB
file in tmp_path through SessionService), driven with real presses, drags and clicks."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
import shiboken6
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QColor, QGuiApplication, QMouseEvent, QPalette, QTextCursor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from treechat.services.turns.sessions import SessionService, SessionView
from treechat.store.database import Store
from treechat.ui.chat.view import ChatView

MODEL = "openai/gpt-4o"
QUESTION = "Where does the cache keep its files, and how big may they get?"
REPLY = """The cache keeps its files under `~/.cache/app`, one file per content hash.

Each file is capped at 64 MB; older entries are evicted first when the folder grows \
past its limit.

```python
from app.cache import Cache

cache = Cache(limit_mb=512)
```

See [the cache notes](https://example.org/cache) for the eviction order."""
FIRST_PARAGRAPH = "The cache keeps its files under ~/.cache/app, one file per content hash."
SECOND_PARAGRAPH = ("Each file is capped at 64 MB; older entries are evicted first when the "
                    "folder grows past its limit.")


class Chat:
    session: str
    question: str
    reply: str


@pytest.fixture
def runner() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as loop:
        yield loop


@pytest.fixture(autouse=True)
def collect_on_the_gui_thread() -> Iterator[None]:
    yield
    gc.collect()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[SessionService]:
    store = Store.open(tmp_path / "chat.duckdb")
    try:
        yield SessionService(store)
    finally:
        store.close()


@pytest.fixture
def chat(qtbot: QtBot) -> Iterator[ChatView]:
    view = ChatView()
    view.resize(900, 900)
    view.show()
    qtbot.waitExposed(view)
    yield view
    view.close()
    shiboken6.delete(view)


async def write_chat(service: SessionService) -> Chat:
    ids = Chat()
    session = await service.create("Cache files", MODEL)
    ids.session = session.id
    ids.question = (await service.append_message(session.id, QUESTION)).id
    ids.reply = (await service.append_message(session.id, REPLY, role="assistant",
                                              metadata={"model": MODEL})).id
    return ids


@pytest.fixture
def shown(runner: asyncio.Runner, service: SessionService, chat: ChatView) -> Chat:
    ids = runner.run(write_chat(service))
    view: SessionView = runner.run(service.view(ids.session))
    chat.set_view(view)
    QApplication.processEvents()
    return ids


def point_at(chat: ChatView, key: str, needle: str, offset: int = 0) -> QPoint:
    """Viewport point in the middle of the line, at character `offset` of the first place the
    message's text holds `needle`."""
    row = chat.model.row_at(chat.model.index_of(key))
    layout = chat.delegate.layout(row)
    body = layout.body
    assert body is not None
    found = body.document.find(needle)
    assert not found.isNull(), needle
    position = found.selectionStart() + offset
    cursor = QTextCursor(body.document)
    cursor.setPosition(position)
    block = cursor.block()
    text_layout = block.layout()
    line = text_layout.lineForTextPosition(position - block.position())
    x = cast(tuple[float, int], line.cursorToX(position - block.position()))[0]
    y = text_layout.position().y() + line.y() + line.height() / 2
    local = layout.body_origin + QPointF(x + 1, y + body.top)
    return (chat.row_rect(key).topLeft() + local).toPoint()


def drag(chat: ChatView, start: QPoint, end: QPoint) -> None:
    viewport = chat.list.viewport()
    QTest.mouseMove(viewport, start)
    QTest.mousePress(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    # QTest.mouseMove sends no buttons; a drag is a move with the button held
    for step in range(1, 5):
        at = QPointF(start) + (QPointF(end) - QPointF(start)) * (step / 4)
        move = QMouseEvent(QMouseEvent.Type.MouseMove, at, viewport.mapToGlobal(at),
                           Qt.MouseButton.NoButton, Qt.MouseButton.LeftButton,
                           Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(viewport, move)
    QTest.mouseRelease(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                       end)


def copy(chat: ChatView) -> str:
    QGuiApplication.clipboard().clear()
    QTest.keyClick(chat.list, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    return QGuiApplication.clipboard().text()


def test_dragging_over_a_reply_selects_part_of_it_and_ctrl_c_copies_that_part(
    chat: ChatView, shown: Chat
) -> None:
    start = point_at(chat, shown.reply, "keeps its files")
    end = point_at(chat, shown.reply, "one file per", offset=len("one file"))
    drag(chat, start, end)
    assert chat.list.hasFocus()
    assert chat.selector.selected_text() == "keeps its files under ~/.cache/app, one file"
    QTest.keyPress(chat.list, Qt.Key.Key_Control)  # on its way to Ctrl+C
    QTest.keyRelease(chat.list, Qt.Key.Key_Control)
    assert copy(chat) == "keeps its files under ~/.cache/app, one file"
    assert not chat.delegate.keyboard_focus  # no focus ring around the message for it
    # the part's Markdown travels with it
    markdown = bytes(QGuiApplication.clipboard().mimeData().data("text/markdown").data())
    assert b"`~/.cache/app`" in markdown


def test_a_drag_across_paragraphs_copies_them_on_lines_of_their_own(
    chat: ChatView, shown: Chat
) -> None:
    start = point_at(chat, shown.reply, "The cache keeps")
    end = point_at(chat, shown.reply, "older entries", offset=len("older"))
    drag(chat, start, end)
    assert copy(chat) == FIRST_PARAGRAPH + "\nEach file is capped at 64 MB; older"


def test_double_click_selects_a_word_and_triple_click_its_paragraph(
    chat: ChatView, shown: Chat
) -> None:
    viewport = chat.list.viewport()
    point = point_at(chat, shown.reply, "evicted", offset=2)
    QTest.mouseMove(viewport, point)
    QTest.mouseDClick(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                      point)
    assert chat._reader is None  # a double click on text selects; it opens nothing
    assert copy(chat) == "evicted"
    QTest.mousePress(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     point)
    QTest.mouseRelease(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                       point)
    assert copy(chat) == SECOND_PARAGRAPH


def test_the_users_bubble_is_selectable_too(chat: ChatView, shown: Chat) -> None:
    drag(chat, point_at(chat, shown.question, "cache"),
         point_at(chat, shown.question, "cache keep", offset=len("cache keep")))
    assert copy(chat) == "cache keep"


def test_a_click_elsewhere_clears_and_ctrl_c_copies_the_message_again(
    chat: ChatView, shown: Chat
) -> None:
    drag(chat, point_at(chat, shown.reply, "capped"),
         point_at(chat, shown.reply, "capped at", offset=len("capped at")))
    assert chat.selector.selected_text() == "capped at"
    viewport = chat.list.viewport()
    blank = QPoint(8, int(chat.row_rect(shown.reply).center().y()))  # left of the column
    QTest.mouseClick(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     blank)
    assert chat.selector.selected_text() == ""
    chat.list.setCurrentIndex(chat.model.index(chat.model.index_of(shown.reply)))
    assert copy(chat) == REPLY  # nothing selected: the whole message, as written


def test_selection_is_painted_in_the_palettes_highlight_in_light_and_dark(
    chat: ChatView, shown: Chat
) -> None:
    for base, text, highlight in (("#ffffff", "#1f2328", "#0969da"),
                                  ("#0d1117", "#e6edf3", "#2f81f7")):
        palette = QPalette(chat.palette())
        palette.setColor(QPalette.ColorRole.Base, QColor(base))
        palette.setColor(QPalette.ColorRole.Window, QColor(base))
        palette.setColor(QPalette.ColorRole.Text, QColor(text))
        palette.setColor(QPalette.ColorRole.Highlight, QColor(highlight))
        palette.setColor(QPalette.ColorRole.HighlightedText, QColor("#ffffff"))
        chat.setPalette(palette)
        chat.selector.clear()
        QApplication.processEvents()
        start = point_at(chat, shown.reply, "Each file")
        end = point_at(chat, shown.reply, "Each file is capped", offset=len("Each file is"))
        probe = point_at(chat, shown.reply, "file is", offset=4)  # the space after "file"

        def colour_at(point: QPoint) -> QColor:
            return chat.list.viewport().grab().toImage().pixelColor(point)

        assert colour_at(probe) != QColor(highlight)
        drag(chat, start, end)
        assert colour_at(probe) == QColor(highlight)


def test_links_and_code_copy_buttons_keep_their_clicks(chat: ChatView, shown: Chat) -> None:
    viewport = chat.list.viewport()
    copy_button = chat.button_rect(shown.reply, "code:0").center().toPoint()
    drag(chat, copy_button, copy_button + QPoint(-200, 0))
    assert chat.selector.selected_text() == ""
    QGuiApplication.clipboard().clear()
    QTest.mouseMove(viewport, copy_button)
    QTest.mouseClick(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     copy_button)
    assert QGuiApplication.clipboard().text() == (
        "from app.cache import Cache\n\ncache = Cache(limit_mb=512)")
    link = point_at(chat, shown.reply, "the cache notes", offset=3)
    QTest.mouseMove(viewport, link)
    assert viewport.cursor().shape() == Qt.CursorShape.PointingHandCursor
    assert chat.delegate.hover == (shown.reply, "link:https://example.org/cache")


def test_the_pointer_is_an_i_beam_over_text_only(chat: ChatView, shown: Chat) -> None:
    viewport = chat.list.viewport()
    QTest.mouseMove(viewport, point_at(chat, shown.reply, "content hash"))
    assert viewport.cursor().shape() == Qt.CursorShape.IBeamCursor
    QTest.mouseMove(viewport, QPoint(8, int(chat.row_rect(shown.reply).center().y())))
    assert viewport.cursor().shape() == Qt.CursorShape.ArrowCursor


def test_the_context_menu_copies_the_selection_first(chat: ChatView, shown: Chat) -> None:
    drag(chat, point_at(chat, shown.reply, "64 MB"),
         point_at(chat, shown.reply, "64 MB", offset=len("64 MB")))
    menu = chat.context_menu(shown.reply)
    labels = [a.text() for a in menu.actions()]
    assert labels[0] == "Copy" and "Copy message" in labels
    QGuiApplication.clipboard().clear()
    menu.actions()[0].trigger()
    assert QGuiApplication.clipboard().text() == "64 MB"
    menu.close()


def test_shift_click_extends_a_selection(chat: ChatView, shown: Chat) -> None:
    viewport = chat.list.viewport()
    drag(chat, point_at(chat, shown.reply, "Each file"),
         point_at(chat, shown.reply, "Each file", offset=len("Each")))
    end = point_at(chat, shown.reply, "64 MB", offset=len("64 MB"))
    QTest.mouseClick(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.ShiftModifier,
                     end)
    assert copy(chat) == "Each file is capped at 64 MB"


def test_a_drag_runs_on_from_one_message_into_the_next(chat: ChatView, shown: Chat) -> None:
    drag(chat, point_at(chat, shown.question, "how big"),
         point_at(chat, shown.reply, "keeps its", offset=len("keeps")))
    assert copy(chat) == "how big may they get?\n\nThe cache keeps"
    markdown = bytes(QGuiApplication.clipboard().mimeData().data("text/markdown").data())
    assert markdown.decode().startswith("how big may they get?\n\nThe cache keeps")
    # both messages show their part selected
    highlight = chat.palette().color(QPalette.ColorRole.Highlight)
    image = chat.list.viewport().grab().toImage()
    for key, needle in ((shown.question, "may they"), (shown.reply, "cache keeps")):
        space = point_at(chat, key, needle, offset=needle.index(" ")) + QPoint(1, 0)
        assert image.pixelColor(space) == highlight, key
    # past the end of the list: to the last message's last character
    bottom = QPoint(int(chat.row_rect(shown.reply).center().x()),
                    chat.list.viewport().height() - 2)
    drag(chat, point_at(chat, shown.reply, "the eviction order"), bottom)
    assert copy(chat) == "the eviction order."
