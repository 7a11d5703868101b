"""The controllers run on the collaborators they are handed, whoever provides them: here a
hand-made open chat and status line instead of the window's, over the real services."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtWidgets import QMenu

from treechat.services.turns.sessions import SessionView
from treechat.store.database import Store
from treechat.ui.controllers.chat_export import ChatExport
from treechat.ui.controllers.mcp import McpController
from treechat.ui.controllers.ports import OpenChat, StatusLine

from ..conftest import Aio, Desk, Seed, chat_session


@dataclass
class HandMadeChat:
    current_view: SessionView | None = None

    @property
    def current_session_id(self) -> str | None:
        return self.current_view.session.id if self.current_view is not None else None


class Said:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, text: str, /) -> None:
        self.lines.append(text)


def one_chat(store: Store) -> None:
    chat_session(store, "a", "Alpha", 1000.0, ["a question for Alpha", "Alpha's answer"])


def test_export_writes_the_chat_it_is_shown_and_says_so_where_it_was_told(
        desk_with: Callable[[Seed | None], Desk], aio: Aio, tmp_path: Path) -> None:
    desk = desk_with(one_chat)
    chat: OpenChat = HandMadeChat(aio.run(desk.services.chat.sessions.view("a")))
    said = Said()
    status: StatusLine = said
    export = ChatExport(desk.window, desk.services.exports, chat=chat,
                        tasks=desk.controller.tasks, status=status, window=desk.window)
    dialog = export.export_chat()
    assert dialog is not None and dialog.parent() is desk.window
    dialog.close()
    target = tmp_path / "alpha.md"
    written = aio.run(export.write_chat("a", str(target), "md", "branch"))
    assert written == str(target)
    assert "Alpha's answer" in target.read_text("utf-8")
    assert said.lines == [f"Exported to {target}"]
    assert desk.window.statusBar().currentMessage() != said.lines[0]


def test_mcp_without_servers_asks_for_an_open_chat_in_the_status_line_it_has(
        desk: Desk) -> None:
    said = Said()
    controller = McpController(None, chat=HandMadeChat(), tasks=desk.controller.tasks,
                               status=said, composer=desk.composer,
                               session_list=desk.window.sessions, window=desk.window)
    controller.expand_prompt("/docs:summary", "topic=cats")
    assert said.lines == ["Open a chat first: MCP prompts belong to a chat's servers"]
    menu = QMenu()
    controller.resource_menu(menu)
    assert [a.text() for a in menu.actions()] == ["No chat open"]
    controller.close()
