"""A controller needs only the collaborators its protocol names: handed a plain object that
says which chat is on screen and a list for the status line, it works as it does in the
window (no conversation controller, no window, no services behind it)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from treechat.core import dag
from treechat.core.artifacts import split_claude_markup
from treechat.core.model import Node, Session
from treechat.services.turns.sessions import SessionView
from treechat.ui.controllers.artifacts import ArtifactsController
from treechat.ui.controllers.sync import SyncController
from treechat.ui.controllers.wiring import ChatScreen, ShownChat, Spawner

from ..conftest import Aio


@dataclass
class Screen:
    """The chat on screen and what was redrawn, as a controller's protocol sees it."""

    current_view: SessionView | None = None
    shown: list[SessionView] = field(default_factory=list)

    @property
    def current_session_id(self) -> str | None:
        return self.current_view.session.id if self.current_view is not None else None

    def redraw(self, view: SessionView) -> None:
        self.current_view = view
        self.shown.append(view)

    def show_updated(self, view: SessionView) -> None:
        self.redraw(view)

    def update_header(self, view: SessionView) -> None:
        self.current_view = view

    def forget_view(self, session_id: str) -> None:
        pass


class Tasks:
    def __init__(self) -> None:
        self.started: list[str | None] = []

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str | None = None
              ) -> asyncio.Task[Any]:
        self.started.append(name)
        return asyncio.ensure_future(coro)


def with_artifact() -> SessionView:
    split = split_claude_markup(
        '<antArtifact identifier="note" type="text/markdown" title="Note">\n# Hi\n'
        "</antArtifact>")
    reply = Node("r", 1, 1.0, "s", "assistant", output=split.text,
                 metadata={"artifacts": [a.as_dict() for a in split.artifacts]})
    graph = dag.Graph((reply,))
    session = Session("s", "Chat", "r", "m", 1.0, updated_at=1.0)
    return SessionView(session, graph, (reply,), frozenset(), frozenset())


def test_the_protocols_are_met_by_plain_objects() -> None:
    screen: ChatScreen = Screen()
    shown: ShownChat = screen
    tasks: Spawner = Tasks()
    assert shown.current_session_id is None and tasks is not None


def test_artifacts_need_only_the_chat_on_screen_and_a_status_line(
    qtbot: QtBot, tmp_path: Path
) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    status: list[str] = []
    screen = Screen()
    artifacts = ArtifactsController(screen, window=window, status=status.append)
    assert artifacts.artifacts("r") == ()  # nothing on screen yet
    screen.current_view = with_artifact()
    (note,) = artifacts.artifacts("r")
    assert artifacts.write(note, tmp_path / "note.md") == tmp_path / "note.md"
    assert (tmp_path / "note.md").read_text("utf-8").strip() == "# Hi"
    assert status[-1] == f"Saved “Note” to {tmp_path / 'note.md'}"
    assert artifacts.write(note, tmp_path / "missing" / "note.md") is None
    assert status[-1].startswith("“Note” was not saved: ")


def test_without_a_sync_target_nothing_is_ever_started(aio: Aio) -> None:
    parent = QObject()
    tasks = Tasks()
    status: list[str] = []

    async def reload_list() -> None:
        raise AssertionError("nothing came in: the list is not read again")

    sync = SyncController(None, parent=parent, chat=Screen(), sessions=None,  # unread
                          is_running=lambda _sid: False, reload_list=reload_list,
                          status=status.append, tasks=tasks)

    async def scenario() -> None:
        sync.start()
        sync.changed("s")
        sync.sync_soon()  # asked for directly: still nothing to sync with
        await asyncio.sleep(0)
        await sync.close()

    aio.run(scenario())
    assert status == []
    assert tasks.started == ["sync-background"]  # ran, found no target and ended
