"""The chat controls put into the window: where their menu items sit, and that they follow
the open chat (nothing to export or instruct before a chat exists)."""

from __future__ import annotations

from tests.support.loopback_server import Reply

from treechat.ui.controllers.chat_controls import find_menu

from ..conftest import Aio, Desk
from .controls_desk import controls, send, turn_done


def titles(desk: Desk, menu: str) -> list[str]:
    return [a.text() or "—" for a in find_menu(desk.window, menu).actions()]


def test_the_file_view_and_chat_menus_carry_the_controls_in_order(desk: Desk) -> None:
    file_items = titles(desk, "File")
    start = file_items.index("New chat from preset")
    assert file_items[start:start + 7] == [
        "New chat from preset", "Export chat…", "Export all chats…", "Export presets…",
        "Import presets…", "—", desk.window.import_action.text()]
    assert file_items.index("Global instructions…") + 1 == file_items.index(
        desk.window.settings_action.text())
    assert "Usage…" in titles(desk, "View")
    chat_items = titles(desk, "Chat")
    at = chat_items.index("Instructions…")
    assert chat_items[at - 1:at + 3] == ["—", "Instructions…", "Parameters…", "Continue reply"]


def test_the_controls_wait_for_a_chat_and_follow_it(desk: Desk, aio: Aio) -> None:
    c = controls(desk)
    assert not c.instructions.instructions_button.isEnabled()
    assert not c.instructions.parameters_button.isEnabled()
    assert not c.export_action.isEnabled() and not c.instructions_action.isEnabled()
    assert not c.continue_action.isEnabled()
    desk.provider.queue(Reply(text="An answer that ended well."))
    shown: list[str] = []
    c.costsShown.connect(shown.append)

    async def scenario() -> None:
        send(desk, "Hello")
        await turn_done(desk, aio, 1)
        await aio.until(lambda: bool(shown), what="the chat's costs")

    aio.run(scenario())
    assert c.instructions.instructions_button.isEnabled()
    assert c.export_action.isEnabled() and c.parameters_action.isEnabled()
    assert not c.continue_action.isEnabled()  # the reply was not cut short
    assert shown[-1] == desk.controller.current_session_id
    assert c.costs.cost_label.text() != ""
    desk.controller.new_chat()
    assert not c.export_action.isEnabled() and c.costs.cost_label.text() == ""
