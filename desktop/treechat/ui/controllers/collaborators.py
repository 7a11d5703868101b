"""The narrow parts of the window a controller is handed in place of the whole conversation
controller: a status line, a task spawner, the chats on show, the model picker. Each is a
small protocol the conversation controller's own parts satisfy (and a test can stand in for)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol

from ...services.models.catalog import ModelChoice
from ...services.turns.sessions import SessionView

StatusLine = Callable[[str], None]
"""Says one line in the window's status bar."""


class Spawner(Protocol):
    """Runs a coroutine as a background task the window keeps (and cancels on close)."""

    def __call__(
        self, coro: Coroutine[Any, Any, Any], name: str | None = None
    ) -> asyncio.Task[Any]: ...


class Reloads(Protocol):
    async def reload(self) -> None: ...


class Refreshes(Protocol):
    async def refresh(self) -> None: ...


class StopsAll(Protocol):
    async def stop_all(self) -> None: ...


class CancelsAll(Protocol):
    async def cancel_all(self) -> None: ...


class Clears(Protocol):
    def clear(self) -> None: ...


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


class ListsSessions(Protocol):
    async def list(self, include_hidden: bool = False) -> Sequence[_HasId]: ...


class ShownChats(Protocol):
    """The chats the window shows: which one is open, the list beside it, and reading a chat
    afresh once something else has changed it."""

    @property
    def current_session_id(self) -> str | None: ...

    @property
    def session_list(self) -> Reloads: ...

    def forget_view(self, session_id: str) -> None: ...

    async def load_session(
        self, session_id: str, *, unless: Callable[[], bool] | None = None
    ) -> None: ...


class RestoreHost(ShownChats, Protocol):
    """What a restore in place needs of the window: its work stopped, the unsent text kept,
    and the window started again on the restored chats."""

    @property
    def turns(self) -> StopsAll: ...

    @property
    def tasks(self) -> CancelsAll: ...

    @property
    def drafts(self) -> dict[str, str]: ...

    @property
    def sessions(self) -> ListsSessions: ...

    @property
    def last_errors(self) -> Clears: ...

    def stash_composer(self) -> None: ...

    def show(self, view: SessionView | None) -> None: ...

    async def start(self, open_session: str | None = None) -> None: ...


class ModelPicker(Protocol):
    """The window's model picker: what it offers, its default, and the model a new chat
    starts on."""

    choices: list[ModelChoice]
    next_model: str | None

    def default_model(self) -> str | None: ...

    def set_model(self, model: str) -> None: ...

    async def refresh(self) -> None: ...
