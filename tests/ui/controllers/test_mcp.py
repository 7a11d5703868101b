"""MCP prompts as `/server:prompt` commands in the composer and a server's resources put
into the message, on a real MCP server over stdio."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from tests.support.loopback_server import Reply
from tests.support.mcp_fixtures import stdio_config

from treechat.ui.controllers.mcp import prompt_arguments

from ..conftest import Aio, Desk


def type_and_enter(desk: Desk, text: str) -> None:
    desk.composer.input.setFocus()
    desk.composer.set_text(text)
    QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)


def test_prompt_arguments_are_key_value_words() -> None:
    assert prompt_arguments('topic="prompt caching" depth=2') == {
        "topic": "prompt caching", "depth": "2"}
    assert prompt_arguments("") == {}


def test_a_prompt_command_fills_the_message_box_and_sends_nothing(desk: Desk, aio: Aio) -> None:
    mcp = desk.services.mcp
    assert mcp is not None

    async def scenario() -> None:
        await mcp.add(stdio_config("alpha", "a-secret"))
        desk.provider.queue(Reply(text="hello back"))
        type_and_enter(desk, "hello")
        await aio.until(lambda: desk.requests() == 1
                        and not desk.controller.turns.is_running(), what="first turn")
        await desk.controller.tasks.idle()

        type_and_enter(desk, '/alpha:review topic="prompt caching"')
        await aio.until(lambda: "Please review" in desk.composer.text(), what="expanded")
        assert desk.composer.text() == "Please review prompt caching carefully (alpha)."
        assert desk.requests() == 1  # a command, not a message

        desk.window.statusBar().clearMessage()
        type_and_enter(desk, "/alpha:review")
        await aio.until(lambda: "topic" in desk.window.statusBar().currentMessage(),
                        what="missing argument said")
        assert desk.composer.text() == "/alpha:review"  # kept to fix

        desk.window.statusBar().clearMessage()
        type_and_enter(desk, "/nobody:nothing")
        await aio.until(lambda: "nobody" in desk.window.statusBar().currentMessage(),
                        what="unknown server said")
        assert desk.requests() == 1

        desk.composer.set_text("Look at this:")
        menu = desk.window.resource_menu
        desk.controller.mcp.resource_menu(menu)
        (action,) = [a for a in menu.actions() if a.text() == "alpha: readme"]
        action.trigger()
        await aio.until(lambda: "readme" in desk.composer.text(), what="resource inserted")
        text = desk.composer.text()
        assert text.startswith("Look at this:\n\n[Resource alpha: readme (note://readme)")
        assert "The alpha server's readme." in text and text.rstrip().endswith("```")

    aio.run(scenario(), timeout=120)
