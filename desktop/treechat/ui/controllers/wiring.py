"""What the chat-list, model, occupancy, graph, sync and note controllers are handed instead
of the whole conversation controller: each asks only for the few typed collaborators it
uses, the conversation controller builds them and passes them in, and siblings talk through
signals or the callables it hands over."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from ...services.turns.events import TurnEvent
from ...services.turns.sessions import SessionView

StatusLine = Callable[[str], None]  # the status bar's one line of news
Refresh = Callable[[], Coroutine[Any, Any, None]]  # read something again and show it
EventSink = Callable[[TurnEvent], None]


class TurnStarter(Protocol):
    """Runs a turn started elsewhere like a send (streamed, failing into the banner); False
    when one is already running in the chat. A `heading` marks a reply to several."""

    def __call__(self, make: Callable[[EventSink], Coroutine[Any, Any, Any]],
                 heading: str = "") -> bool: ...


class Spawner(Protocol):
    """Runs a coroutine on the window's loop and keeps it until it ends."""

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str | None = None
              ) -> asyncio.Task[Any]: ...


class ShownChat(Protocol):
    """The chat the window shows right now (None: a new chat, not yet sent)."""

    @property
    def current_view(self) -> SessionView | None: ...

    @property
    def current_session_id(self) -> str | None: ...


class ChatScreen(ShownChat, Protocol):
    """The open chat, redrawn from what a service returned."""

    def redraw(self, view: SessionView) -> None: ...

    def show_updated(self, view: SessionView) -> None: ...

    def update_header(self, view: SessionView) -> None: ...

    def forget_view(self, session_id: str) -> None: ...


class ChatNavigator(ChatScreen, Protocol):
    """The open chat, and going to another one (or to a new chat)."""

    def open_session(self, session_id: str) -> None: ...

    async def load_session(self, session_id: str, *,
                           unless: Callable[[], bool] | None = None) -> None: ...

    def new_chat(self) -> None: ...


class OccupancyRefresh(Protocol):
    """The ring and the Context tab, re-estimated for the open chat."""

    async def refresh(self) -> None: ...


class PickedModel(Protocol):
    """The composer's model picker as the occupancy reads it."""

    def selected(self) -> str | None: ...

    def selected_label(self) -> str: ...

    async def context_label(self) -> str: ...


__all__ = [
    "ChatNavigator",
    "ChatScreen",
    "EventSink",
    "OccupancyRefresh",
    "PickedModel",
    "Refresh",
    "ShownChat",
    "Spawner",
    "StatusLine",
    "TurnStarter",
]
