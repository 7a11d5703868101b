"""Opening a released store again while another process holds it, on a fake clock: the wait
is measured on the clock handed in (no real seconds pass), the holder is named once, and the
store opens as soon as the file is free."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.clock import FakeClock
from tests.unit.services.store_life.test_drafts import HOLD_STORE

from treechat.core.model import Session
from treechat.services.store_life.reopen import reopen_waiting
from treechat.store.database import Store, StoreLockedError


@pytest.fixture
def released(tmp_path: Path) -> Iterator[Store]:
    store = Store.open(tmp_path / "treechat.duckdb")
    store.call(lambda r: r.create_session(Session("s1", "Kept", None, "m", 1.0)))
    store.release()
    yield store
    store.close()


def hold(path: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen([sys.executable, "-c", HOLD_STORE, str(path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def let_go(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None and holder.stdout is not None
    holder.stdin.close()
    holder.wait(timeout=60)
    holder.stdout.close()


async def asleep_on(clock: FakeClock, task: asyncio.Task[None]) -> None:
    """Until the reopen waits on the clock between tries (each try is real work on a thread)."""
    for _ in range(6000):
        if clock.sleepers or task.done():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the reopen never waited on the clock")


@pytest.mark.asyncio
async def test_a_held_store_is_waited_for_on_the_clock_then_refused_naming_the_holder(
    released: Store,
) -> None:
    clock = FakeClock()
    heard: list[StoreLockedError] = []
    holder = hold(released.path)
    try:
        task = asyncio.ensure_future(reopen_waiting(
            released, clock=clock, wait_s=10.0, poll_s=1.0, on_held=heard.append))
        await asleep_on(clock, task)
        for _ in range(3):  # tries again every poll while the deadline is ahead
            clock.advance(1.0)
            await clock.settle()
            await asleep_on(clock, task)
        assert not task.done()
        assert len(heard) == 1 and f"process {holder.pid}" in heard[0].holder
        clock.advance(10.0)  # past the deadline: the next refusal is the last
        with pytest.raises(StoreLockedError):
            await task
        assert len(heard) == 1 and released.released
    finally:
        let_go(holder)


@pytest.mark.asyncio
async def test_the_store_opens_once_the_other_process_lets_go(released: Store) -> None:
    clock = FakeClock()
    holder = hold(released.path)
    task = asyncio.ensure_future(reopen_waiting(released, clock=clock, wait_s=20.0, poll_s=0.25))
    try:
        await asleep_on(clock, task)
    finally:
        let_go(holder)
    clock.advance(0.25)
    await task
    assert not released.released
    assert [s.title for s in await released.run(lambda r: r.list_sessions())] == ["Kept"]


@pytest.mark.asyncio
async def test_a_free_store_opens_at_once_without_touching_the_clock(released: Store) -> None:
    clock = FakeClock()
    before = clock.monotonic()
    await reopen_waiting(released, clock=clock, wait_s=0.0, poll_s=1.0,
                         on_held=lambda exc: pytest.fail(f"waited on {exc.holder}"))
    assert not released.released and clock.monotonic() == before and clock.sleepers == 0
