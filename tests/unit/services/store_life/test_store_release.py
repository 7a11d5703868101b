"""A network wait that writes nothing (a model's summary, an MCP call over HTTP) lets go of the
store and takes it back after: on a real DuckDB file, held meanwhile by a real other process.
A store still held when the wait ends, or replaced meanwhile, ends the turn with a clear
error, never with work waiting on a file this process no longer holds."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import pytest_asyncio
from tests.unit.services.store_life.test_drafts import HOLD_STORE, other_process_lists_sessions

from treechat.core.summarize import SummaryRequest
from treechat.services.store_life.drafts import StoreRelease
from treechat.services.store_life.store_release import (
    StoreFreeSummarizer,
    StoreNotBackError,
    store_let_go,
)
from treechat.services.turns.sessions import SessionService
from treechat.store.database import Store


@pytest_asyncio.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    store = Store.open(tmp_path / "d.duckdb")
    yield store
    store.close()


async def a_session(store: Store) -> str:
    sessions = SessionService(store)
    session = await sessions.create("Waiting")
    await sessions.append_message(session.id, "question")
    return session.id


@contextmanager
def held_elsewhere(path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the store until the block ends."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD_STORE, str(path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdin is not None and holder.stdout is not None
    try:
        assert holder.stdout.readline() == "held\n"
        yield holder
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
        holder.stdout.close()


@pytest.mark.asyncio
async def test_the_store_opens_elsewhere_during_the_wait_and_is_back_after(store: Store) -> None:
    session_id = await a_session(store)
    async with store_let_go(store, StoreRelease(), session_id=session_id, what="the summary"):
        let_go = store.released
        assert await asyncio.to_thread(other_process_lists_sessions, store.path) == 1
    assert let_go and not store.released
    assert [s.id for s in await store.run(lambda r: r.list_sessions())] == [session_id]


@pytest.mark.asyncio
async def test_a_store_held_past_the_wait_is_a_clear_error_and_stays_let_go(
    store: Store,
) -> None:
    session_id = await a_session(store)
    heard: list[str] = []
    policy = StoreRelease(notify=heard.append, wait_s=0.6, poll_s=0.1)
    holding = held_elsewhere(store.path)
    try:
        with pytest.raises(StoreNotBackError) as lost:
            async with store_let_go(store, policy, session_id=session_id, what="the summary"):
                pid = (await asyncio.to_thread(holding.__enter__)).pid
        message = str(lost.value)
        assert f"still in use by process {pid}" in message
        assert f"session {session_id[:12]}" in message and "after the summary" in message
        assert len(heard) == 1 and "waiting up to 1 s to go on after the summary" in heard[0]
        assert store.released  # nothing can be handed to a file it does not hold
    finally:
        holding.__exit__(None, None, None)
    store.reopen()  # once the other process is done, the same store is whole
    assert len(await store.run(lambda r: r.list_sessions())) == 1


async def stopped(store: Store, session_id: str, *, wait_on_stop: bool) -> None:
    """Cancel a wait once another process holds the store it let go of; what comes out."""
    released = asyncio.Event()

    async def body() -> None:
        async with store_let_go(store, StoreRelease(wait_s=0.5, poll_s=0.1),
                                session_id=session_id, what="the tool's answer",
                                wait_on_stop=wait_on_stop):
            released.set()
            await asyncio.Event().wait()

    task = asyncio.ensure_future(body())
    await asyncio.wait_for(released.wait(), timeout=30)
    holding = held_elsewhere(store.path)
    await asyncio.to_thread(holding.__enter__)
    try:
        task.cancel()
        await asyncio.wait_for(task, timeout=30)
    finally:
        holding.__exit__(None, None, None)


@pytest.mark.asyncio
async def test_a_stop_takes_one_try_at_the_store_unless_its_turn_writes_when_stopped(
    store: Store,
) -> None:
    session_id = await a_session(store)
    with pytest.raises(asyncio.CancelledError):  # a summary: nothing to write, no wait
        await stopped(store, session_id, wait_on_stop=False)
    assert store.released
    store.reopen()
    # A tool call's node is written when stopped: the store is waited for, and when it
    # stays held the stop says so rather than leave the node to wait forever.
    with pytest.raises(StoreNotBackError, match="after the tool's answer"):
        await stopped(store, session_id, wait_on_stop=True)
    assert store.released
    store.reopen()
    assert len(await store.run(lambda r: r.list_sessions())) == 1


@pytest.mark.asyncio
async def test_a_store_replaced_meanwhile_without_the_chat_ends_the_turn(store: Store) -> None:
    session_id = await a_session(store)
    with pytest.raises(StoreNotBackError, match="was replaced"):
        async with store_let_go(store, StoreRelease(), session_id=session_id,
                                what="the summary"):
            other = Store.open(store.path.with_name("other.duckdb"))
            other.close()
            os.replace(other.path, store.path)
    assert not store.released and await store.run(lambda r: r.list_sessions()) == ()


class Remote:
    """A summarizer whose request checks, as it runs, whether another process can open
    the store."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen = -1

    async def summarize(self, request: SummaryRequest) -> str:
        self.seen = await asyncio.to_thread(other_process_lists_sessions, self.path)
        return "A short summary."


@pytest.mark.asyncio
async def test_a_summary_is_awaited_with_the_store_let_go_of(store: Store) -> None:
    session_id = await a_session(store)
    remote = Remote(store.path)
    summarizer = StoreFreeSummarizer(remote, store, StoreRelease(), session_id)
    assert await summarizer.summarize(SummaryRequest((), 100)) == "A short summary."
    assert remote.seen == 1  # another process read the store while the summary was awaited
    assert not store.released
