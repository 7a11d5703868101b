"""Letting go of the store across a network wait of a command-line turn that writes nothing
while it waits: a model's summary of folded history, a call to an MCP server over HTTP. (The
reply's own wait journals its draft meanwhile: `drafts.store_released`.)

The store is released only around the remote request, never while a store transaction is
open: the compaction that asks for a summary has read what it needs and writes its commits
after the summaries are in; a tool call is asked about (and its approval stored) before, and
its node written after. Work handed to the store meanwhile waits until it is open again."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from ...core.summarize import AsyncSummarizer, SummaryRequest
from ...store.database import Store, StoreError, StoreLockedError
from .drafts import StoreRelease, reopen_within


class StoreNotBackError(StoreError):
    """The store could not be opened again after a network wait; nothing of the turn after
    the committed message was written, and the message says so."""


@contextlib.asynccontextmanager
async def store_let_go(
    store: Store, policy: StoreRelease, *, session_id: str, what: str, wait_on_stop: bool = False
) -> AsyncIterator[None]:
    """Release `store` for the body and open it again after, waiting up to `policy.wait_s`
    for a store another process holds (said once through `policy.notify`). Raises
    `StoreNotBackError` when it stays held, or when the chat is no longer in it (the file was
    replaced meanwhile, by a restored backup): the turn cannot go on, and says why.
    `wait_on_stop`: a stopped body (cancelled) waits for the store too, for what its turn
    writes when stopped (a tool call's node); else one try, and it may stay released."""
    await store.arelease()
    try:
        yield
    except (asyncio.CancelledError, KeyboardInterrupt):
        if wait_on_stop:
            await _reopen(store, policy, session_id, what)
        else:  # nothing waits to be written, so the store is not waited for
            with contextlib.suppress(StoreError):
                await store.areopen()
        raise
    except BaseException:
        await _reopen(store, policy, session_id, what)
        raise
    await _reopen(store, policy, session_id, what)
    if await store.run(lambda r: r.get_session(session_id)) is None:
        raise StoreNotBackError(
            f"the conversation store {store.path} was replaced while {what} was awaited (a "
            f"backup restored?) and no longer holds session {session_id[:12]}; nothing more "
            "was written to it"
        )


async def _reopen(store: Store, policy: StoreRelease, session_id: str, what: str) -> None:
    try:
        await reopen_within(store, policy, f"go on after {what}")
    except StoreLockedError as exc:
        raise StoreNotBackError(
            f"the conversation store {store.path} is still in use by {exc.holder}, so "
            f"the reply was not asked for after {what}. Your message is kept in "
            f"session {session_id[:12]}; ask for its reply again once the store is "
            "free (Retry on it in the window)"
        ) from None


class StoreFreeSummarizer:
    """A model summarizer whose request (and its offline fallback) runs with the store let go
    of; the store is open again before the summary is returned to the compaction."""

    def __init__(
        self, inner: AsyncSummarizer, store: Store, policy: StoreRelease, session_id: str
    ) -> None:
        self._inner = inner
        self._store = store
        self._policy = policy
        self._session_id = session_id

    async def summarize(self, request: SummaryRequest) -> str:
        async with store_let_go(self._store, self._policy, session_id=self._session_id,
                                what="the summary of older messages"):
            return await self._inner.summarize(request)
