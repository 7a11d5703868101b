"""The approval prompt in the window, on a real MCP server over stdio and the loopback
provider asking for its tool: Allow once runs it, Deny does not, Always is not asked again in
the chat, and stopping the turn closes the prompt."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from tests.support.loopback_server import Reply
from tests.support.mcp_fixtures import stdio_config

from treechat.ui.dialogs.tool_approval import ToolApprovalDialog

from ..conftest import Aio, Desk

SHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"


def prompt(desk: Desk) -> ToolApprovalDialog | None:
    pending = desk.controller.mcp.pending
    return pending[0] if pending else None


def carried(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


def send(desk: Desk, text: str) -> None:
    desk.composer.input.setFocus()
    desk.composer.set_text(text)
    QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)


async def ask_for_secret(desk: Desk, aio: Aio, text: str) -> ToolApprovalDialog:
    desk.provider.reply_with_tool_calls([{"name": "alpha__secret_value", "arguments": {}}])
    desk.provider.queue(Reply(text="done"))
    before = desk.requests()
    send(desk, text)
    await aio.until(lambda: prompt(desk) is not None, what="the approval prompt")
    dialog = prompt(desk)
    assert dialog is not None
    await aio.settle(0.3)
    assert desk.requests() == before + 1  # nothing more went out while it is open
    return dialog


async def turn_done(desk: Desk, aio: Aio, requests: int) -> None:
    await aio.until(lambda: desk.requests() >= requests
                    and not desk.controller.turns.is_running(), what="turn end")
    await desk.controller.tasks.idle()


def shoot(desk: Desk, dialog: ToolApprovalDialog) -> None:
    if os.environ.get("TREECHAT_SCREENSHOTS") != "1":
        return
    for mode in ("light", "dark"):
        desk.theme.set_mode(mode)
        for _ in range(5):
            QApplication.processEvents()
        dialog.grab().save(str(SHOTS / f"mcp-approval-{mode}.png"))
    desk.theme.set_mode("light")


def test_allow_deny_and_always_in_the_window(desk: Desk, aio: Aio) -> None:
    mcp = desk.services.mcp
    assert mcp is not None

    async def scenario() -> None:
        await mcp.add(stdio_config("alpha", "alpha-knows-4410"))
        dialog = await ask_for_secret(desk, aio, "What is alpha's secret?")
        assert "secret_value" in dialog.heading.text() and "alpha" in dialog.heading.text()
        assert "only the alpha server knows" in dialog.description.text()
        assert dialog.arguments.toPlainText() == "{}"
        assert dialog.isVisible() and not dialog.isModal()
        shoot(desk, dialog)
        dialog.deny_button.click()
        await turn_done(desk, aio, 2)
        denied = carried(desk.provider.requests[-1].body)
        assert "denied" in denied and "alpha-knows-4410" not in denied

        dialog = await ask_for_secret(desk, aio, "Now allow it once")
        dialog.allow_once_button.click()
        await turn_done(desk, aio, 4)
        assert "alpha-knows-4410" in carried(desk.provider.requests[-1].body)
        assert prompt(desk) is None  # answered prompts close

        dialog = await ask_for_secret(desk, aio, "And always")
        dialog.always_button.click()
        await turn_done(desk, aio, 6)
        assert "alpha-knows-4410" in carried(desk.provider.requests[-1].body)

        desk.provider.reply_with_tool_calls([{"name": "alpha__secret_value", "arguments": {}}])
        desk.provider.queue(Reply(text="again"))
        send(desk, "Once more")
        await turn_done(desk, aio, 8)
        assert prompt(desk) is None  # not asked again in this chat
        assert "alpha-knows-4410" in carried(desk.provider.requests[-1].body)

    aio.run(scenario(), timeout=120)


def test_stopping_the_turn_closes_the_prompt(desk: Desk, aio: Aio) -> None:
    mcp = desk.services.mcp
    assert mcp is not None

    async def scenario() -> None:
        await mcp.add(stdio_config("alpha", "alpha-knows-4410"))
        dialog = await ask_for_secret(desk, aio, "secret?")
        desk.controller.turns.stop()
        await aio.until(lambda: not desk.controller.turns.is_running(), what="stopped")
        await aio.until(lambda: prompt(desk) is None, what="prompt closed")
        assert dialog.answered
        assert "alpha-knows-4410" not in json.dumps(
            [r.body for r in desk.provider.requests], ensure_ascii=False)

    aio.run(scenario(), timeout=120)


def test_a_server_turned_off_in_one_chat_from_its_menu(desk: Desk, aio: Aio) -> None:
    from PySide6.QtWidgets import QMenu

    mcp = desk.services.mcp
    assert mcp is not None

    async def scenario() -> None:
        await mcp.add(stdio_config("alpha", "alpha-knows-4410"))
        session = await desk.services.chat.sessions.create(title="No tools here")
        await desk.controller.session_list.reload()
        menu = QMenu()
        desk.window.sessions.menuRequested.emit(session.id, menu)
        (sub,) = [a.menu() for a in menu.actions() if a.text() == "Tools in this chat"]
        assert isinstance(sub, QMenu)
        (alpha,) = sub.actions()
        assert alpha.text() == "alpha" and alpha.isChecked()
        alpha.setChecked(False)
        await desk.controller.tasks.idle()
        assert mcp.enabled_in(session.id) == []
        other = await desk.services.chat.sessions.create(title="Tools here")
        await mcp.load_chat(other.id)
        assert [c.name for c in mcp.enabled_in(other.id)] == ["alpha"]

    aio.run(scenario(), timeout=60)


def test_the_prompt_never_takes_the_keyboard_from_the_message_box(desk: Desk, aio: Aio) -> None:
    """Typing goes on while the prompt appears: it is not activated, has no default button,
    and keys that reach it before the person turns to it (as when a window manager gives a new
    window the keyboard) land in the message box; Enter and Space answer nothing."""
    mcp = desk.services.mcp
    assert mcp is not None

    async def scenario() -> None:
        await mcp.add(stdio_config("alpha", "alpha-knows-4410"))
        dialog = await ask_for_secret(desk, aio, "What is alpha's secret?")
        requests = desk.requests()
        box = desk.composer.input
        assert QApplication.activeWindow() is not dialog
        assert QApplication.focusWidget() is box
        buttons = (dialog.allow_once_button, dialog.always_button, dialog.deny_button)
        assert not any(b.isDefault() or b.autoDefault() for b in buttons)
        status = desk.window.statusBar().currentMessage()
        assert "waits for your answer" in status and "(alpha)" in status
        assert "alpha__" not in status  # the tool and its server, not the name called

        dialog.activateWindow()
        await aio.settle(0.1)
        for target in (dialog, dialog.allow_once_button, dialog.arguments):
            QTest.keyClick(target, Qt.Key.Key_Return)
        QTest.keyClicks(dialog.allow_once_button, "and then")
        QTest.keyClick(dialog.allow_once_button, Qt.Key.Key_Space)
        QTest.keyClicks(dialog.always_button, "more")
        await aio.settle(0.3)
        assert not dialog.answered and prompt(desk) is dialog
        assert desk.requests() == requests  # the tool did not run
        assert desk.composer.text().endswith("and then more")
        assert QApplication.focusWidget() is box

        QTest.mouseClick(dialog.deny_button, Qt.MouseButton.LeftButton)  # a deliberate answer
        await turn_done(desk, aio, requests + 1)
        assert "alpha-knows-4410" not in carried(desk.provider.requests[-1].body)

    aio.run(scenario(), timeout=120)


def test_tab_turns_to_the_prompt_and_space_answers_it(desk: Desk, aio: Aio) -> None:
    mcp = desk.services.mcp
    assert mcp is not None

    async def scenario() -> None:
        await mcp.add(stdio_config("alpha", "alpha-knows-4410"))
        dialog = await ask_for_secret(desk, aio, "What is alpha's secret?")
        requests = desk.requests()
        dialog.activateWindow()  # the person switches to it (Alt+Tab)…
        await aio.settle(0.1)
        assert QApplication.activeWindow() is dialog
        QTest.keyClick(dialog.arguments, Qt.Key.Key_Tab)  # …and walks its buttons
        assert dialog.engaged
        focused = dialog.focusWidget()
        assert focused in (dialog.allow_once_button, dialog.always_button, dialog.deny_button)
        while focused is not dialog.allow_once_button:
            QTest.keyClick(focused, Qt.Key.Key_Tab)
            focused = dialog.focusWidget()
        QTest.keyClick(focused, Qt.Key.Key_Space)
        assert dialog.answered
        await turn_done(desk, aio, requests + 1)
        assert "alpha-knows-4410" in carried(desk.provider.requests[-1].body)

    aio.run(scenario(), timeout=120)


def test_ctrl_r_after_a_denied_call_asks_again(desk: Desk, aio: Aio) -> None:
    mcp = desk.services.mcp
    assert mcp is not None

    async def scenario() -> None:
        await mcp.add(stdio_config("alpha", "alpha-knows-4410"))
        dialog = await ask_for_secret(desk, aio, "What is alpha's secret?")
        QTest.mouseClick(dialog.deny_button, Qt.MouseButton.LeftButton)
        await turn_done(desk, aio, 2)
        desk.provider.reply_with_tool_calls([{"name": "alpha__secret_value", "arguments": {}}])
        desk.provider.queue(Reply(text="now with it"))
        desk.window.retry_action.trigger()  # Ctrl+R on the reply written after the denial
        await aio.until(lambda: prompt(desk) is not None, what="the prompt again")
        again = prompt(desk)
        assert again is not None and again is not dialog
        QTest.mouseClick(again.allow_once_button, Qt.MouseButton.LeftButton)
        await turn_done(desk, aio, 4)
        assert "alpha-knows-4410" in carried(desk.provider.requests[-1].body)

    aio.run(scenario(), timeout=120)
