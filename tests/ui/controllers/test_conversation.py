"""The open session: unsent text stays with its chat (across switching and restarts), a chat
seen before shows at once and then catches up with the store, and the window's menus reach
the controllers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QApplication
from tests.support.loopback_server import LoopbackProvider

from treechat.providers import llm
from treechat.store.database import Store, default_store_path

from ..conftest import Aio, Desk, Seed, chat_session, close_desk, open_desk


def two_chats(store: Store) -> None:
    chat_session(store, "a", "Alpha", 1000.0, ["first question", "first answer"])
    chat_session(store, "b", "Beta", 2000.0, ["second question", "second answer"])


def texts(desk: Desk) -> list[str]:
    return [row.text for row in desk.window.ensure_chat_view().model.rows]


def test_unsent_text_stays_with_its_chat_and_comes_back_after_a_restart(
    qapp: QApplication, aio: Aio, tmp_path: Path, loopback: LoopbackProvider
) -> None:
    aio.run(llm.ensure_loaded(), timeout=300)
    data_dir = tmp_path / "data"
    store = Store.open(default_store_path(data_dir))
    try:
        two_chats(store)
    finally:
        store.close()

    desk = open_desk(qapp, aio, data_dir, loopback)
    try:
        async def first_run() -> None:
            c = desk.controller
            c.open_session("a")
            await aio.until(lambda: c.current_session_id == "a")
            desk.composer.set_text("half a thought for Alpha")
            c.open_session("b")
            await aio.until(lambda: c.current_session_id == "b")
            assert desk.composer.text() == ""
            c.open_session("a")
            await aio.until(lambda: c.current_session_id == "a")
            assert desk.composer.text() == "half a thought for Alpha"
            c.new_chat()
            assert desk.composer.text() == ""
            desk.composer.set_text("for a chat not started yet")
            await c.tasks.idle()

        aio.run(first_run())
    finally:
        close_desk(desk)

    desk = open_desk(qapp, aio, data_dir, loopback)
    try:
        async def second_run() -> None:
            c = desk.controller
            c.open_session("a")
            await aio.until(lambda: c.current_session_id == "a")
            assert desk.composer.text() == "half a thought for Alpha"
            c.new_chat()
            assert desk.composer.text() == "for a chat not started yet"

        aio.run(second_run())
    finally:
        close_desk(desk)


def test_a_chat_seen_before_shows_at_once_then_catches_up_with_the_store(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(two_chats)

    async def scenario() -> None:
        c = desk.controller
        await c.load_session("a")
        assert texts(desk) == ["first question", "first answer"]
        await c.load_session("b")
        # written behind the window's back (another turn, the command line)
        await c.sessions.append_message("a", "a note added elsewhere")
        opened = aio.loop.create_task(c.load_session("a"))
        await asyncio.sleep(0)  # the task runs up to its first wait on the store
        assert c.current_session_id == "a"
        assert texts(desk) == ["first question", "first answer"]  # from memory, at once
        await opened
        assert texts(desk) == ["first question", "first answer", "a note added elsewhere"]

    aio.run(scenario())


def test_the_menus_reach_the_controllers(desk: Desk, aio: Aio) -> None:
    window = desk.window
    assert window.ready
    window.context_action.trigger()
    dialog = desk.controller.occupancy.context_dialog
    assert dialog is not None and dialog.isVisible()
    dialog.close()
    window.settings_action.trigger()
    settings = desk.controller.dialogs.settings_dialog
    assert settings is not None and settings.isVisible()
    settings.reject()
    # Stop is only offered while a turn runs
    assert not window.stop_action.isEnabled()
    desk.controller.busyChanged.emit(True)
    assert window.stop_action.isEnabled() and not window.retry_action.isEnabled()
    desk.controller.busyChanged.emit(False)
    aio.run(desk.controller.tasks.idle())
