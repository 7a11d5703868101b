"""The system clock behind the `Clock` protocol: the wall time is the machine's, the monotonic
time never goes back, and a sleep yields to the event loop; the tests' fake clock offers the
same three."""

from __future__ import annotations

import asyncio
import time

import pytest
from tests.support.clock import FakeClock

from treechat.core.clock import SYSTEM_CLOCK, Clock, SystemClock


def test_the_system_clock_reads_the_machines_time() -> None:
    before = time.time()
    now = SYSTEM_CLOCK.now()
    assert before <= now <= time.time()
    first = SYSTEM_CLOCK.monotonic()
    assert SYSTEM_CLOCK.monotonic() >= first
    assert isinstance(SYSTEM_CLOCK, SystemClock)


@pytest.mark.asyncio
async def test_a_sleep_of_nothing_lets_other_tasks_run() -> None:
    ran: list[str] = []

    async def other() -> None:
        ran.append("other")

    task = asyncio.ensure_future(other())
    await SYSTEM_CLOCK.sleep(0)
    assert ran == ["other"] and task.done()


@pytest.mark.asyncio
async def test_the_fake_clock_is_a_clock_that_moves_when_told() -> None:
    clock: Clock = FakeClock()
    fake = clock
    assert isinstance(fake, FakeClock)
    start = clock.monotonic()
    waiting = asyncio.ensure_future(clock.sleep(5.0))
    await fake.settle()
    assert not waiting.done()
    fake.advance(5.0)
    await waiting
    assert clock.monotonic() - start == 5.0
