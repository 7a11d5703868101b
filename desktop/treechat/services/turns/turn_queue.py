"""Turns wait their turn for the server that answers them. A server on this machine (the
bundled model, llama.cpp, Ollama, LM Studio) answers one request at a time, so requests to it
go one after another in the order they were sent; a hosted provider takes a few at once. What
each chat is doing, waiting (and its place in line) or being answered, is reported to whoever
listens, so the chat list can say "queued" before a reply starts."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from ...providers.deadline import is_local

log = logging.getLogger(__name__)

LOCAL_PARALLEL = 1  # a local server computes one reply at a time; more only queue inside it
HOSTED_PARALLEL = 4  # replies at once to one hosted provider, well inside its rate limits


@dataclass(frozen=True, slots=True)
class TurnActivity:
    """What one chat's turn is doing with its server: `queued` with its `place` in line
    (1: next), or `replying` (its request is out)."""

    session_id: str
    state: Literal["queued", "replying"]
    server: str  # "127.0.0.1:8080", "api.openai.com", "anthropic"
    local: bool
    place: int = 0
    capacity: int = 1  # requests the server is given at once

    @property
    def queued(self) -> bool:
        return self.state == "queued"


ActivityListener = Callable[[Mapping[str, TurnActivity]], None]


@dataclass(eq=False, slots=True)
class _Waiter:
    session_id: str
    granted: asyncio.Future[None]


@dataclass(eq=False, slots=True)
class _Lane:
    server: str
    local: bool
    capacity: int
    active: list[str] = field(default_factory=list)
    waiting: deque[_Waiter] = field(default_factory=deque)


def server_of(api_base: str | None, model: str) -> tuple[str, bool]:
    """The server a request goes to, and whether it is on this machine: the address's host
    and port, else the provider named by the model id (`anthropic/…`)."""
    if api_base:
        return urlsplit(api_base).netloc or api_base, is_local(api_base)
    return (model.split("/", 1)[0] if "/" in model else model), False


class TurnQueue:
    """First come, first served per server. asyncio.Semaphore would bound the requests too,
    but it cannot say who is waiting or in which place, which is what the chat list shows."""

    def __init__(
        self, *, local_parallel: int = LOCAL_PARALLEL, hosted_parallel: int = HOSTED_PARALLEL
    ) -> None:
        if local_parallel < 1 or hosted_parallel < 1:
            raise ValueError("a server takes at least one request at a time")
        self.local_parallel = local_parallel
        self.hosted_parallel = hosted_parallel
        self._lanes: dict[str, _Lane] = {}
        self._listeners: list[ActivityListener] = []

    # --- who is doing what ---------------------------------------------------------

    def activity(self) -> dict[str, TurnActivity]:
        """Every chat that waits for or holds a server, by session id."""
        out: dict[str, TurnActivity] = {}
        for lane in self._lanes.values():
            for session_id in lane.active:
                out[session_id] = TurnActivity(
                    session_id, "replying", lane.server, lane.local, 0, lane.capacity)
            for place, waiter in enumerate(lane.waiting, start=1):
                out[waiter.session_id] = TurnActivity(
                    waiter.session_id, "queued", lane.server, lane.local, place, lane.capacity)
        return out

    def subscribe(self, listener: ActivityListener) -> Callable[[], None]:
        """Call `listener` with the whole activity after every change; returns the call
        that stops it."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return unsubscribe

    # --- taking a turn ---------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def slot(
        self, session_id: str, api_base: str | None, model: str
    ) -> AsyncIterator[TurnActivity]:
        """Hold a place at the server for one request; waits (queued) while the server is
        busy with earlier ones. Cancelling while queued leaves the line."""
        lane = self._lane(api_base, model)
        await self._acquire(lane, session_id)
        try:
            yield TurnActivity(session_id, "replying", lane.server, lane.local, 0,
                               lane.capacity)
        finally:
            self._release(lane, session_id)

    def _lane(self, api_base: str | None, model: str) -> _Lane:
        server, local = server_of(api_base, model)
        lane = self._lanes.get(server)
        if lane is None:
            capacity = self.local_parallel if local else self.hosted_parallel
            lane = self._lanes[server] = _Lane(server, local, capacity)
        return lane

    async def _acquire(self, lane: _Lane, session_id: str) -> None:
        if len(lane.active) < lane.capacity and not lane.waiting:
            lane.active.append(session_id)
            self._notify()
            return
        waiter = _Waiter(session_id, asyncio.get_running_loop().create_future())
        lane.waiting.append(waiter)
        self._notify()
        try:
            await waiter.granted
        except asyncio.CancelledError:
            if waiter.granted.done() and not waiter.granted.cancelled():
                self._release(lane, session_id)  # granted in the same tick it was stopped
            else:
                with contextlib.suppress(ValueError):
                    lane.waiting.remove(waiter)
                self._notify()
            raise

    def _release(self, lane: _Lane, session_id: str) -> None:
        with contextlib.suppress(ValueError):
            lane.active.remove(session_id)
        while len(lane.active) < lane.capacity and lane.waiting:
            waiter = lane.waiting.popleft()
            if waiter.granted.done():
                continue  # left the line already
            lane.active.append(waiter.session_id)
            waiter.granted.set_result(None)
        if not lane.active and not lane.waiting:
            self._lanes.pop(lane.server, None)
        self._notify()

    def _notify(self) -> None:
        snapshot = self.activity()
        for listener in list(self._listeners):
            try:
                listener(snapshot)
            except Exception:  # a view that fails must not hold up the line
                log.exception("turn activity listener failed")
