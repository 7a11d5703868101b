"""The text of a reply in flight, flushed to the store about once a second so a crash loses at
most the last second; promoted to a node when the reply ends."""

from __future__ import annotations

import asyncio
import math
from typing import Any

from ..core.reply import with_reasoning
from ..store.database import Store
from ..store.repository import Draft
from .clock import SYSTEM_CLOCK, Clock

FLUSH_INTERVAL_S = 1.0


class DraftWriter:
    """Accumulates streamed text; `add` is cheap, the store write happens at most every
    `interval` seconds on the store's worker, never blocking the caller's loop."""

    def __init__(
        self,
        store: Store,
        *,
        draft_id: str,
        session_id: str,
        parent_id: str | None,
        model: str,
        interval: float = FLUSH_INTERVAL_S,
        clock: Clock = SYSTEM_CLOCK,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.store = store
        self.draft_id = draft_id
        self.session_id = session_id
        self.parent_id = parent_id
        self.model = model
        self.interval = interval
        self.clock = clock
        self.metadata = dict(metadata or {})
        self.started_at = clock.now()
        self._parts: list[str] = []
        self._reasoning: list[str] = []
        self._flushed_len = -1
        self._flushed_reasoning = 0
        self._last_flush = -math.inf
        self._pending: asyncio.Future[None] | None = None

    @property
    def text(self) -> str:
        return "".join(self._parts)

    async def start(self) -> None:
        """Write the empty draft at once: a crash before the first token still leaves a
        recoverable (interrupted, empty) reply."""
        await self.flush()

    @property
    def reasoning(self) -> str:
        return "".join(self._reasoning)

    def add_reasoning(self, delta: str) -> None:
        """Reasoning streamed beside the reply: written with the draft (in its metadata,
        apart from the text), so a crash recovers it as the reply's reasoning."""
        self._reasoning.append(delta)
        self._schedule()

    def add(self, delta: str) -> None:
        self._parts.append(delta)
        self._schedule()

    def _schedule(self) -> None:
        now = self.clock.monotonic()
        if now - self._last_flush >= self.interval and (
            self._pending is None or self._pending.done()
        ):
            self._last_flush = now
            self._pending = asyncio.ensure_future(self.flush())

    async def flush(self) -> None:
        text = self.text
        reasoning = len(self._reasoning)
        if len(text) == self._flushed_len and reasoning == self._flushed_reasoning:
            return
        draft = Draft(
            id=self.draft_id,
            session_id=self.session_id,
            parent_id=self.parent_id,
            model=self.model,
            text=text,
            started_at=self.started_at,
            updated_at=self.clock.now(),
            metadata=with_reasoning(self.metadata, self.reasoning),
        )
        await self.store.run(lambda r: r.write_draft(draft))
        self._flushed_len = len(text)
        self._flushed_reasoning = reasoning

    async def settle(self) -> None:
        """Wait for an in-flight flush so the draft row is not rewritten after promotion."""
        if self._pending is not None:
            await asyncio.shield(self._pending)
