"""A turn's last event held back until what the turn changed is read back whole (the
session's row as the turn left it, the usage rows it recorded), so a view redraws from that
event alone instead of reading the session again."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import replace
from typing import TypeVar

from ...store.database import Store
from .changes import read_back
from .events import EventSink, TurnEvent, TurnFailed, TurnFinished

log = logging.getLogger(__name__)

T = TypeVar("T")


class LastEvent:
    """Stands between a turn and its sink: every event passes at once, except a last one
    (`TurnFinished`, or `TurnFailed` with changes), which waits for `deliver`. An event
    after a held one means the held one was not the last: it goes first, as it came."""

    def __init__(self, sink: EventSink) -> None:
        self._sink = sink
        self._held: TurnFinished | TurnFailed | None = None

    def __call__(self, event: TurnEvent) -> None:
        self.release()
        if isinstance(event, (TurnFinished, TurnFailed)) and event.changes is not None:
            self._held = event
            return
        self._sink(event)

    def release(self) -> None:
        """Pass on a held event as it is (the turn ended before it could be completed)."""
        held, self._held = self._held, None
        if held is not None:
            self._sink(held)

    async def deliver(self, store: Store) -> None:
        """Complete the held event's changes from the store and pass it on; a read that
        fails passes it on as it came (a view then reads the session itself)."""
        held = self._held
        if held is None or held.changes is None:
            return
        changes = held.changes
        try:
            completed = await asyncio.shield(store.run(lambda r: read_back(r, changes)))
        except asyncio.CancelledError:
            self.release()
            raise
        except Exception:
            log.warning("what the turn changed could not be read back", exc_info=True)
            completed = changes
        if self._held is held:
            self._held = None
            self._sink(replace(held, changes=completed))


async def delivered(run: Awaitable[T], last: LastEvent, store: Store) -> T:
    """`run` (a turn whose sink is `last`), then its last event, completed."""
    try:
        result = await run
        await last.deliver(store)
        return result
    finally:
        last.release()
