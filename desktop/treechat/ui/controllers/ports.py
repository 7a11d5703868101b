"""What the send, attachment, MCP, compare and chat-control controllers are handed instead
of the whole conversation controller: each asks only for the few typed collaborators it
uses (the window builds them and passes them in), and talks to its siblings through
signals."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol

from ...core.model import Node
from ...services.attachments import PreparedFile
from ...services.models.catalog import ModelChoice
from ...services.turns.chat_service import Attachment
from ...services.turns.events import TurnError, TurnEvent
from ...services.turns.sessions import SessionView

EventSink = Callable[[TurnEvent], None]
# Where a send takes what goes with its message (each registered with the turn controller):
# the staged attachments of a chat (the attach chips),
AttachmentSource = Callable[[str], Sequence[Attachment]]
# the files staged for a chat's next message, taken (and cleared) by its send,
FileSource = Callable[[str], list[PreparedFile]]
# the check before a message is sent (text, model): False keeps it unsent (it says why),
Preflight = Callable[[str, str | None], Coroutine[Any, Any, bool]]
# and a send to several models: (session, text, models, attaches, files, sink) -> its run.
SeveralRun = Callable[[str, str, Sequence[str], Sequence[Attachment], Sequence[PreparedFile],
                       EventSink], Coroutine[Any, Any, Node | None]]


class Spawner(Protocol):
    """Runs a coroutine on the window's loop and keeps it until it ends."""

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str | None = None
              ) -> asyncio.Task[Any]: ...


class StatusLine(Protocol):
    """The status bar's one line of news."""

    def __call__(self, text: str, /) -> None: ...


class OpenChat(Protocol):
    """The chat the window shows right now (None: a new chat, not yet sent)."""

    @property
    def current_view(self) -> SessionView | None: ...

    @property
    def current_session_id(self) -> str | None: ...


class RedrawnChat(OpenChat, Protocol):
    """The open chat, redrawn from a newer view of the same session."""

    def redraw(self, view: SessionView) -> None: ...


class ShownChat(RedrawnChat, Protocol):
    """The open chat as a turn runs, and what the window keeps of each chat."""

    last_errors: dict[str, TurnError]  # the failure each session last showed
    drafts: dict[str, str]  # session -> unsent composer text

    def show(self, view: SessionView | None) -> None: ...

    def forget_view(self, session_id: str) -> None: ...


class ChatOpener(OpenChat, Protocol):
    """The open chat, and opening another one."""

    async def load_session(self, session_id: str) -> None: ...


class ModelPicker(Protocol):
    """The composer's model picker as the controllers read it: the choice and its names."""

    @property
    def choices(self) -> Sequence[ModelChoice]: ...

    def selected(self) -> str | None: ...

    async def chosen(self) -> str | None: ...

    def set_model(self, model: str) -> None: ...

    def label_for(self, model: str) -> str: ...

    def is_local(self, model: str | None) -> bool: ...

    def selected_label(self) -> str: ...


class SessionRows(Protocol):
    """The chat list: read again whole, or one chat's row."""

    async def reload(self) -> None: ...

    async def refresh_session(self, session_id: str) -> object: ...


class OccupancyRefresh(Protocol):
    """The ring and the Context tab, re-estimated for the open chat."""

    async def refresh(self) -> None: ...


class TurnRunner(Protocol):
    """Runs a turn started elsewhere like a send (streamed, failing into the banner)."""

    def run_external(self, make: Callable[[EventSink], Coroutine[Any, Any, Any]],
                     heading: str = "") -> bool: ...


__all__ = [
    "AttachmentSource",
    "ChatOpener",
    "EventSink",
    "FileSource",
    "ModelPicker",
    "OccupancyRefresh",
    "OpenChat",
    "Preflight",
    "RedrawnChat",
    "SessionRows",
    "SeveralRun",
    "ShownChat",
    "Spawner",
    "StatusLine",
    "TurnRunner",
]
