"""A reply in flight reaches the store at most once per interval of the clock it is given,
and a crash leaves what was flushed: on a real DuckDB file, with a clock the test moves."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.clock import FakeClock

from treechat.services.store_life.drafts import (
    DraftWriter,
    ReplyJournal,
    ReplyKeptError,
    StoreRelease,
    store_released,
)
from treechat.services.store_life.recovery import recover_drafts
from treechat.services.turns.sessions import SessionService
from treechat.store.database import Store


@pytest_asyncio.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    store = Store.open(tmp_path / "d.duckdb")
    yield store
    store.close()


async def writer(store: Store, clock: FakeClock, interval: float = 1.0) -> DraftWriter:
    sessions = SessionService(store, clock=clock)
    session = await sessions.create("Draft")
    user = await sessions.append_message(session.id, "question")
    return DraftWriter(store, draft_id="d1", session_id=session.id, parent_id=user.id,
                       model="openai/test", interval=interval, clock=clock)


def stored_text(store: Store) -> str:
    (draft,) = store.call(lambda r: r.drafts())
    return draft.text


@pytest.mark.asyncio
async def test_streamed_text_is_flushed_once_per_interval_of_the_clock(store: Store) -> None:
    clock = FakeClock()
    draft = await writer(store, clock)
    await draft.start()
    assert stored_text(store) == ""

    draft.add("one ")  # the first delta is written at once
    await draft.settle()
    assert stored_text(store) == "one "
    draft.add("two ")
    clock.advance(0.5)
    draft.add("three ")  # half an interval later: held back
    await draft.settle()
    assert stored_text(store) == "one "
    clock.advance(0.5)
    draft.add("four")  # a full interval since the last write: all of it goes
    await draft.settle()
    assert stored_text(store) == "one two three four"
    assert draft.text == "one two three four"


@pytest.mark.asyncio
async def test_the_draft_carries_the_clocks_wall_time(store: Store) -> None:
    clock = FakeClock.at_local(2027, 3, 1, 9, 30)
    draft = await writer(store, clock)
    await draft.start()
    clock.advance(42)
    draft.add("text")
    await draft.settle()
    (row,) = store.call(lambda r: r.drafts())
    assert row.started_at == FakeClock.at_local(2027, 3, 1, 9, 30).now()
    assert row.updated_at == row.started_at + 42


@pytest.mark.asyncio
async def test_what_was_flushed_survives_as_an_interrupted_reply(store: Store) -> None:
    clock = FakeClock()
    draft = await writer(store, clock)
    await draft.start()
    draft.add("half an ans")
    await draft.settle()
    draft.add("wer never flushed")  # within the interval, then the process dies
    clock.advance(60)
    (reply,) = recover_drafts(store, clock=clock, make_id=lambda: "recovered")
    assert reply.role == "assistant" and reply.interrupted
    assert reply.output == "half an ans"
    assert reply.created_at == FakeClock().now()  # when its text was last written
    (session,) = store.call(lambda r: r.list_sessions())
    assert session.head == reply.id and session.updated_at == clock.now()
    assert store.call(lambda r: r.drafts()) == ()


@pytest.mark.asyncio
async def test_streamed_reasoning_survives_a_crash_apart_from_the_answer(store: Store) -> None:
    from treechat.core.reply import reasoning_of

    clock = FakeClock()
    draft = await writer(store, clock)
    await draft.start()
    draft.add_reasoning("First, the units. ")  # reasoning alone reaches the store too
    await draft.settle()
    clock.advance(1)
    draft.add_reasoning("Then the sum.")
    draft.add("The answer is")
    await draft.settle()
    (reply,) = recover_drafts(store, clock=clock, make_id=lambda: "recovered")
    assert reply.output == "The answer is" and reply.interrupted
    assert reasoning_of(reply) == "First, the units. Then the sum."


# --- a turn that lets go of the store while the provider is awaited ----------------------

HOLD_STORE = (
    "import sys\n"
    "from pathlib import Path\n"
    "from treechat.store.database import Store\n"
    "store = Store.open(Path(sys.argv[1]))\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
    "store.close()\n"
)


def other_process_lists_sessions(path: Path) -> int:
    """Open the store in another process (as `treechat sessions` would) and count sessions."""
    code = (
        "import sys\nfrom pathlib import Path\nfrom treechat.store.database import Store\n"
        "with Store.open(Path(sys.argv[1])) as s:\n"
        "    print(len(s.call(lambda r: r.list_sessions())))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


@pytest.mark.asyncio
async def test_released_store_opens_elsewhere_and_the_draft_comes_back_whole(
    store: Store,
) -> None:
    clock = FakeClock()
    draft = await writer(store, clock)
    await draft.start()
    draft.add("before ")
    journal = ReplyJournal(store.path, draft.draft_id)
    async with store_released(draft, StoreRelease()):
        let_go = store.released
        assert let_go
        assert await asyncio.to_thread(other_process_lists_sessions, store.path) == 1
        clock.advance(2)
        draft.add("while released")
        await draft.settle()
        journaled = journal.read()
        assert journaled is not None and journaled.text == "before while released"
    assert not store.released
    assert stored_text(store) == "before while released"
    assert not journal.path.exists() and not journal.lock_path.exists()


@pytest.mark.asyncio
async def test_a_store_held_too_long_keeps_the_reply_for_the_next_open(store: Store) -> None:
    clock = FakeClock()
    draft = await writer(store, clock)
    await draft.start()
    heard: list[str] = []
    holder: subprocess.Popen[str] | None = None
    with pytest.raises(ReplyKeptError) as kept:
        async with store_released(draft, StoreRelease(notify=heard.append, wait_s=0.6)):
            draft.add("the whole answer")
            draft.mark_complete("stop")  # the stream ended whole; only the write is missing
            holder = subprocess.Popen([sys.executable, "-c", HOLD_STORE, str(store.path)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            assert holder.stdout is not None
            assert await asyncio.to_thread(holder.stdout.readline) == "held\n"
    assert holder is not None and holder.stdin is not None and holder.stdout is not None
    assert heard and f"in use by process {holder.pid}" in heard[0]
    assert "the reply (16 characters)" in str(kept.value)
    assert "treechat sessions" in str(kept.value)
    assert kept.value.journal.exists()
    holder.stdin.close()
    holder.wait(timeout=60)
    holder.stdout.close()
    store.close()

    again = Store.open(store.path)
    try:
        (reply,) = recover_drafts(again, clock=clock, make_id=lambda: "r1")
        assert reply.output == "the whole answer" and not reply.interrupted
        assert reply.metadata["recovered"] and reply.metadata["finish_reason"] == "stop"
        assert again.call(lambda r: r.drafts()) == ()
        assert not kept.value.journal.exists()
    finally:
        again.close()


@pytest.mark.asyncio
async def test_a_store_replaced_meanwhile_is_not_written_an_orphan_reply(store: Store) -> None:
    """A backup restored while the reply was awaited, no longer holding the question: the
    reply is not hung on a missing message; it stays in its journal."""
    clock = FakeClock()
    draft = await writer(store, clock)
    await draft.start()
    with pytest.raises(ReplyKeptError, match="was replaced") as kept:
        async with store_released(draft, StoreRelease()):
            draft.add("an answer to a question that is gone")
            other = Store.open(store.path.with_name("other.duckdb"))
            other.close()
            os.replace(other.path, store.path)
    assert kept.value.journal.exists()
    assert store.call(lambda r: r.drafts()) == ()
    assert store.call(lambda r: r.list_sessions()) == ()


@pytest.mark.asyncio
async def test_a_store_found_damaged_on_reopen_keeps_the_reply_in_its_journal(
    store: Store,
) -> None:
    """The file cut short while the reply was awaited: the store is not written, and the
    reply is neither written nor lost; it stays in its journal, which says how it comes back."""
    clock = FakeClock()
    draft = await writer(store, clock)
    await draft.start()
    with pytest.raises(ReplyKeptError, match="damaged") as kept:
        async with store_released(draft, StoreRelease()):
            draft.add("an answer the store cannot take")
            draft.mark_complete("stop")
            os.truncate(store.path, store.path.stat().st_size // 2)
    journaled = ReplyJournal(store.path, draft.draft_id).read()
    assert journaled is not None and journaled.text == "an answer the store cannot take"
    assert kept.value.journal.exists()
