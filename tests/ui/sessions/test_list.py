"""The session list on a real store: newest first under day headers, keyboard navigation that
opens chats, rename, delete with undo, search over every branch, and 5,000 sessions."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QLineEdit

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.store.database import Store
from treechat.ui.sessions.list import SessionList
from treechat.ui.sessions.model import KIND_ROLE, SESSION_ID_ROLE, day_label

from ..conftest import MODEL, Aio, Desk, NoonClock, Seed, chat_session

# The desk's wall clock reads midday of one fixed day, so "today" never crosses a midnight.
NOW = NoonClock().start
HOUR = 3600.0
DAY = 86_400.0
MORNING = NOW - 2 * HOUR
LATEST = NOW - 60.0


def listed(widget: SessionList) -> list[str]:
    """What the list shows, top to bottom: headers in capitals, then session titles."""
    model = widget.model
    out = []
    for row in range(model.rowCount()):
        index = model.index(row)
        text = str(index.data())
        out.append(text.upper() if index.data(KIND_ROLE) == "header" else text)
    return out


def three_days(store: Store) -> None:
    chat_session(store, "old", "Last week's plan", NOW - 9 * DAY, ["plan?", "a plan"])
    chat_session(store, "y", "Yesterday's question", NOW - DAY - HOUR, ["why?", "because"])
    chat_session(store, "t1", "Morning chat", MORNING, ["hello", "hi"])
    chat_session(store, "t2", "Latest chat", LATEST, ["latest", "reply"])


def test_newest_first_grouped_by_day(desk_with: Callable[[Seed | None], Desk]) -> None:
    desk = desk_with(three_days, NoonClock())
    rows = listed(desk.window.sessions)
    assert rows[:3] == ["TODAY", "Latest chat", "Morning chat"]
    assert rows[3] == day_label(NOW - DAY - HOUR, NOW).upper()
    assert rows[4] == "Yesterday's question"
    assert rows[-1] == "Last week's plan"
    assert len([r for r in rows if r.isupper()]) == 3


def test_keyboard_moves_over_headers_and_opens_chats(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(three_days, NoonClock())
    view = desk.window.sessions.view

    async def scenario() -> None:
        QTest.keyClick(desk.window, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
        assert desk.window.sessions.search.hasFocus()
        QTest.keyClick(desk.window.sessions.search, Qt.Key.Key_Down)
        assert view.hasFocus()
        await aio.until(lambda: desk.controller.current_session_id == "t2")
        QTest.keyClick(view, Qt.Key.Key_Down)
        await aio.until(lambda: desk.controller.current_session_id == "t1")
        QTest.keyClick(view, Qt.Key.Key_Down)  # steps over the next day's header
        await aio.until(lambda: desk.controller.current_session_id == "y")
        await desk.controller.tasks.idle()
        assert [r.text for r in desk.chat.model.rows] == ["why?", "because"]
        QTest.keyClick(view, Qt.Key.Key_Return)
        assert desk.composer.input.hasFocus()

    aio.run(scenario())
    assert view.currentIndex().data(SESSION_ID_ROLE) == "y"


def test_rename_with_f2_is_saved(desk_with: Callable[[Seed | None], Desk], aio: Aio) -> None:
    desk = desk_with(three_days, NoonClock())
    sessions = desk.window.sessions

    async def scenario() -> None:
        sessions.select("t1")
        sessions.view.setFocus()
        QTest.keyClick(sessions.view, Qt.Key.Key_F2)
        editor = QApplication.focusWidget()
        assert isinstance(editor, QLineEdit)
        editor.selectAll()
        QTest.keyClicks(editor, "Renamed chat")
        QTest.keyClick(editor, Qt.Key.Key_Return)
        await desk.controller.tasks.idle()

    aio.run(scenario())
    stored = desk.services.store.call(lambda r: r.get_session("t1"))
    assert stored is not None and stored.title == "Renamed chat"
    assert "Renamed chat" in listed(sessions)


def test_delete_hides_and_undo_brings_back(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(three_days, NoonClock())
    sessions = desk.window.sessions

    async def scenario() -> None:
        sessions.select("y")
        await desk.controller.load_session("y")
        sessions.view.setFocus()
        QTest.keyClick(sessions.view, Qt.Key.Key_Delete)
        await desk.controller.tasks.idle()
        assert "Yesterday's question" not in listed(sessions)
        stored = desk.services.store.call(lambda r: r.get_session("y"))
        assert stored is not None and stored.hidden
        assert desk.controller.current_view is None  # the deleted chat is no longer shown
        assert desk.window.banner.isVisible() and "undo" in desk.window.banner.action_keys()
        desk.window.banner.button("undo").click()
        await desk.controller.tasks.idle()

    aio.run(scenario())
    assert "Yesterday's question" in listed(sessions)
    assert desk.controller.current_session_id == "y"
    stored = desk.services.store.call(lambda r: r.get_session("y"))
    assert stored is not None and not stored.hidden


def branched(store: Store) -> None:
    three_days(store)
    # a retried reply: the first answer is on a branch that HEAD no longer shows
    store.call(lambda r: r.create_session(Session("b", "Soup", None, MODEL, NOW - 30,
                                                   updated_at=NOW - 30)))
    q = Node("b-q", 0, NOW, "b", "user", output="What soup tonight?")
    a1 = Node("b-a1", 0, NOW, "b", "assistant", output="Try a saffron bouillabaisse.",
              predecessor="b-q")
    a2 = Node("b-a2", 0, NOW, "b", "assistant", output="Minestrone.", predecessor="b-q")
    store.call(lambda r: r.apply_change("b", Change((q, a1, a2), "b-a2"), NOW - 30))


def test_search_finds_text_on_any_branch(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(branched, NoonClock())
    sessions = desk.window.sessions

    async def scenario() -> None:
        sessions.focus_search()
        QTest.keyClicks(sessions.search, "saffron")
        await aio.until(lambda: listed(sessions) == ["Soup"], what="search results")
        snippet = sessions.model.index(0).data(Qt.ItemDataRole.AccessibleTextRole)
        assert "saffron bouillabaisse" in snippet
        QTest.keyClick(sessions.search, Qt.Key.Key_Return)  # into the results
        await aio.until(lambda: desk.controller.current_session_id == "b")
        QTest.keyClick(sessions.search, Qt.Key.Key_Escape)
        sessions.flush_search()
        await aio.until(lambda: "TODAY" in listed(sessions))

    aio.run(scenario())
    assert sessions.current_session_id() == "b"  # the open chat stays selected


def many(store: Store) -> None:
    sessions = [
        Session(f"s{i:05d}", f"Chat number {i}", None, MODEL, NOW - i * 900,
                updated_at=NOW - i * 900)
        for i in range(5000)
    ]
    store.call(lambda r: r.create_sessions(sessions))


def test_five_thousand_sessions(desk_with: Callable[[Seed | None], Desk], aio: Aio) -> None:
    desk = desk_with(many, NoonClock())
    sessions = desk.window.sessions
    assert sessions.model.session_count() == 5000
    rows = listed(sessions)
    assert rows[1] == "Chat number 0" and rows[-1] == "Chat number 4999"
    # one row height for the whole list: the view never measures 5,000 rows
    assert sessions.view.uniformItemSizes()

    async def scenario() -> None:
        sessions.view.setFocus()
        sessions.select("s02500")
        QTest.keyClick(sessions.view, Qt.Key.Key_End)
        await aio.until(lambda: desk.controller.current_session_id == "s04999")
        QTest.keyClick(sessions.view, Qt.Key.Key_Home)
        await aio.until(lambda: desk.controller.current_session_id == "s00000")

    aio.run(scenario())
