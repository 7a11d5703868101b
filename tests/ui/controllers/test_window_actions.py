"""The window's menus reach the controllers that carry them out: a new chat, the context
breakdown, compacting, the versions; Stop and Retry follow whether a reply runs."""

from __future__ import annotations

from collections.abc import Callable

from treechat.store.database import Store

from ..conftest import Aio, Desk, Seed, chat_session


def one_chat(store: Store) -> None:
    chat_session(store, "c1", "Cats", 2_000.0, ["Tell me about cats", "They purr."])


def test_the_menus_reach_their_controllers(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(one_chat)
    window, controller = desk.window, desk.controller
    assert window.ready

    async def scenario() -> None:
        await controller.load_session("c1")
        window.context_action.trigger()
        await controller.tasks.idle()
        dialog = controller.occupancy.context_dialog
        assert dialog is not None and dialog.isVisible()
        dialog.close()
        window.new_chat_action.trigger()
        assert controller.current_view is None
        assert window.title.text() == "New chat"

    aio.run(scenario())


def test_stop_and_retry_follow_a_running_reply(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(one_chat)
    window, controller = desk.window, desk.controller
    controller.busyChanged.emit(True)
    assert window.stop_action.isEnabled() and not window.retry_action.isEnabled()
    controller.busyChanged.emit(False)
    assert not window.stop_action.isEnabled() and window.retry_action.isEnabled()
    assert controller.backups is not None and controller.beam is not None
