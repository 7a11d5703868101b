"""The chat list (real store, full-text index and services): renaming, deleting with undo,
and opening a search hit: the chat opens at the matching message, on its branch, with the
match selected."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from PySide6.QtCore import QRectF, Qt
from PySide6.QtTest import QTest
from tests.support.loopback_server import Reply

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.store.database import Store
from treechat.ui.sessions.roles import SESSION_ID_ROLE

from ..conftest import MODEL, Aio, Desk, Seed, chat_session

NOW = time.time()


def birds(store: Store) -> None:
    """"Birds" has two branches after its first answer; HEAD is on the penguin one, and only
    the other one (long, so its match is far above its end) says "pelican"."""
    chat_session(store, "other", "Other chat", NOW - 50, ["hello", "hi"])
    store.call(lambda r: r.create_session(Session("birds", "Birds", None, MODEL, NOW - 40,
                                                   updated_at=NOW - 40)))
    u1 = Node("u1", 0, NOW, "birds", "user", output="Name a seabird that dives for fish.")
    a1 = Node("a1", 0, NOW, "birds", "assistant",
              output="The gannet dives from thirty metres.", predecessor="u1")
    u2 = Node("u2", 0, NOW, "birds", "user", output="Which one has a pouch under its beak?",
              predecessor="a1")
    hit = Node("hit", 0, NOW, "birds", "assistant",
               output="That is the brown pelican: its pouch holds eleven litres.",
               predecessor="u2")
    nodes = [u1, a1, u2, hit]
    previous = "hit"
    for i in range(12):  # the pelican branch goes on well past a screen
        for role, text in (("user", f"Tell me more, part {i}."),
                           ("assistant", f"Part {i}: " + "Seabirds nest on cliffs. " * 12)):
            node = Node(f"p{i}-{role}", 0, NOW, "birds", role, output=text,  # type: ignore[arg-type]
                        predecessor=previous)
            nodes.append(node)
            previous = node.id
    store.call(lambda r: r.apply_change("birds", Change(tuple(nodes), previous), NOW - 40))
    u3 = Node("u3", 0, NOW, "birds", "user", output="And one that walks on the ice?",
              predecessor="a1")
    a3 = Node("a3", 0, NOW, "birds", "assistant",
              output="Penguins walk and slide on the ice.", predecessor="u3")
    store.call(lambda r: r.apply_change("birds", Change((u3, a3), "a3"), NOW - 30))


def search(desk: Desk, aio: Aio, word: str) -> Callable[[], object]:
    sessions = desk.window.sessions
    sessions.focus_search()
    sessions.search.clear()
    QTest.keyClicks(sessions.search, word)
    sessions.flush_search()
    return lambda: [sessions.model.index(r).data(Qt.ItemDataRole.DisplayRole)
                    for r in range(sessions.model.rowCount())] == ["Birds"]


def on_screen(desk: Desk, key: str) -> bool:
    chat = desk.chat
    rect = chat.row_rect(key)
    viewport = QRectF(chat.list.viewport().rect())
    return not rect.isEmpty() and viewport.intersects(rect)


def test_a_hit_on_another_branch_opens_that_branch_at_the_match(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(birds)
    sessions = desk.window.sessions

    async def scenario() -> None:
        await aio.until(search(desk, aio, "pelican"), what="the pelican hit")
        QTest.keyClick(sessions.search, Qt.Key.Key_Return)  # into the results: opens it
        await aio.until(lambda: "hit" in desk.chat.row_keys(), what="the hit's branch shown")
        await aio.until(lambda: desk.chat.selector.selected_text() == "pelican",
                        what="the match selected")
        await aio.settle(0.3)  # rows measured in the background must not move it away

    requests = desk.requests()
    aio.run(scenario())
    chat = desk.chat
    assert desk.controller.current_session_id == "birds"
    assert on_screen(desk, "hit")
    assert not on_screen(desk, "p11-assistant")  # the branch's end is further down
    assert chat.list.currentIndex().row() == chat.model.index_of("hit")
    # the branch is checked out (display only: HEAD moved to its newest message, nothing ran)
    stored = desk.services.store.call(lambda r: r.get_session("birds"))
    assert stored is not None and stored.head == "p11-assistant"
    assert desk.requests() == requests
    assert "a3" not in chat.row_keys()


def test_a_hit_on_the_open_branch_scrolls_to_it_without_moving_head(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(birds)
    sessions = desk.window.sessions

    async def scenario() -> None:
        desk.controller.open_session("birds")
        await aio.until(lambda: "a3" in desk.chat.row_keys(), what="birds open")
        await aio.until(search(desk, aio, "gannet"), what="the gannet hit")
        # the open chat stays the current row of the results: a click opens the hit
        index = sessions.model.index(0)
        rect = sessions.view.visualRect(index)
        QTest.mouseClick(sessions.view.viewport(), Qt.MouseButton.LeftButton,
                         Qt.KeyboardModifier.NoModifier, rect.center())
        await aio.until(lambda: desk.chat.selector.selected_text() == "gannet",
                        what="the match selected")
        # the search cleared: the match it selected is no longer marked
        sessions.search.clear()
        sessions.flush_search()
        await aio.until(lambda: not desk.chat.selector.has_selection(),
                        what="the match let go")

    aio.run(scenario())
    stored = desk.services.store.call(lambda r: r.get_session("birds"))
    assert stored is not None and stored.head == "a3"
    assert on_screen(desk, "a1")


def test_a_hit_off_the_branch_a_reply_is_being_written_on_leaves_head_alone(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(birds)
    sessions = desk.window.sessions
    release = threading.Event()
    desk.provider.queue(Reply(text="Emperor penguins huddle through the winter.", hold=release))

    async def scenario() -> None:
        desk.controller.open_session("birds")
        await aio.until(lambda: "a3" in desk.chat.row_keys(), what="birds open")
        desk.composer.input.setFocus()
        desk.composer.set_text("Which penguin is the largest?")
        QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)
        await aio.until(desk.controller.turns.is_running, what="the reply running")
        await aio.until(search(desk, aio, "pelican"), what="the pelican hit")
        said: list[str] = []  # every status line, so a later one cannot hide it
        desk.window.statusBar().messageChanged.connect(said.append)
        QTest.keyClick(sessions.search, Qt.Key.Key_Return)
        await aio.until(lambda: any("another branch" in m for m in said),
                        what="the hit's branch waits for the reply")
        assert "hit" not in desk.chat.row_keys()
        release.set()
        await aio.until(lambda: not desk.controller.turns.is_running(), what="the reply done")
        await desk.controller.tasks.idle()

    try:
        aio.run(scenario())
    finally:
        release.set()
    stored = desk.services.store.call(lambda r: r.get_session("birds"))
    view = aio.run(desk.services.chat.sessions.view("birds"))
    assert stored is not None and view.path[-1].text.startswith("Emperor penguins")
    assert "a3" in [n.id for n in view.path]  # the reply went on the branch it was sent on


def two_chats(store: Store) -> None:
    chat_session(store, "c1", "Cats", 2_000.0, ["Tell me about cats", "They purr."])
    chat_session(store, "c2", "Dogs", 1_000.0, ["Tell me about dogs", "They bark."])


def listed(desk: Desk) -> list[str]:
    """The chats' titles in the list (its date headings left out)."""
    model = desk.window.sessions.model
    rows = (model.index(r) for r in range(model.rowCount()))
    return [str(i.data(Qt.ItemDataRole.DisplayRole)) for i in rows
            if i.data(SESSION_ID_ROLE) is not None]


def test_a_renamed_chat_is_renamed_in_the_list_the_header_and_the_store(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(two_chats)
    controller = desk.controller

    async def scenario() -> None:
        await controller.load_session("c1")
        controller.session_list.rename("c1", "House cats")
        await aio.until(lambda: "House cats" in listed(desk), what="the new title listed")
        await controller.tasks.idle()

    aio.run(scenario())
    assert desk.window.title.text() == "House cats"
    stored = desk.services.store.call(lambda r: r.get_session("c1"))
    assert stored is not None and stored.title == "House cats"


def test_deleting_the_open_chat_starts_a_new_one_and_undo_brings_it_back(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(two_chats)
    controller = desk.controller
    banner = desk.window.banner

    async def scenario() -> None:
        await controller.load_session("c1")
        controller.session_list.delete("c1")
        await aio.until(lambda: listed(desk) == ["Dogs"], what="the chat gone from the list")
        await controller.tasks.idle()
        assert controller.current_view is None  # a new chat in its place
        assert banner.title.text() == "Chat deleted" and banner.action_keys() == ["undo"]
        assert "“Cats” was removed" in banner.message.text()
        banner.actionTriggered.emit("undo")
        await aio.until(lambda: controller.current_session_id == "c1", what="the chat back")
        await controller.tasks.idle()

    aio.run(scenario())
    assert set(listed(desk)) == {"Cats", "Dogs"}
    assert [r.key for r in desk.chat.model.rows if r.node_id][:2] == ["c1-0", "c1-1"]


def three_chats(store: Store) -> None:
    two_chats(store)
    chat_session(store, "c3", "Birds", 500.0, ["Tell me about birds", "They sing."])


def test_delete_removes_every_picked_chat_and_undo_brings_them_all_back(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(three_chats)
    controller = desk.controller
    banner = desk.window.banner
    view = desk.window.sessions.view
    model = desk.window.sessions.model

    async def scenario() -> None:
        QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                         Qt.KeyboardModifier.NoModifier,
                         view.visualRect(model.index_of("c1")).center())
        await aio.until(lambda: controller.current_session_id == "c1", what="c1 open")
        await controller.tasks.idle()
        QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                         Qt.KeyboardModifier.ControlModifier,
                         view.visualRect(model.index_of("c3")).center())
        await aio.until(lambda: controller.current_session_id == "c3", what="c3 open")
        await controller.tasks.idle()
        assert desk.window.sessions.selected_session_ids() == ["c1", "c3"]
        view.setFocus()
        QTest.keyClick(view, Qt.Key.Key_Delete)
        await aio.until(lambda: listed(desk) == ["Dogs"], what="both gone")
        await controller.tasks.idle()
        assert banner.title.text() == "2 chats deleted" and banner.action_keys() == ["undo"]
        assert banner.message.text() == "“Cats”, “Birds” were removed from the list."
        banner.actionTriggered.emit("undo")
        await aio.until(lambda: set(listed(desk)) == {"Cats", "Dogs", "Birds"},
                        what="both back")
        await controller.tasks.idle()

    aio.run(scenario())
    stored = desk.services.store.call(lambda r: r.get_session("c3"))
    assert stored is not None and not stored.hidden
