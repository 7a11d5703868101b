"""The system clock behind the `Clock` protocol: the wall time is the machine's, the monotonic
time never goes back, and a sleep yields to the event loop; the tests' fake clock offers the
same three."""

from __future__ import annotations

import asyncio
import inspect
import struct
import time
from pathlib import Path

import pytest
from tests.support.clock import DEFAULT_START, FakeClock
from tests.unit.providers.test_gguf_header import _header, _string

from treechat.core.clock import SYSTEM_CLOCK, Clock, SystemClock
from treechat.providers.model_library import ModelLibrary


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


def test_a_clock_is_now_monotonic_and_an_awaitable_sleep() -> None:
    members = {name for name, _ in inspect.getmembers(Clock, inspect.isfunction)}
    assert {"now", "monotonic", "sleep"} <= members
    assert inspect.iscoroutinefunction(Clock.sleep)
    assert not inspect.iscoroutinefunction(Clock.now)


def test_what_is_stored_is_stamped_with_the_clock_it_was_handed(tmp_path: Path) -> None:
    model = tmp_path / "tiny.gguf"
    model.write_bytes(_header([("general.architecture", 8, _string("llama")),
                               ("llama.context_length", 4, struct.pack("<I", 2048))]))
    clock: Clock = FakeClock()
    library = ModelLibrary(tmp_path / "models", clock=clock)
    assert library.add_file(model).added_at == DEFAULT_START
    assert isinstance(clock, FakeClock)
    clock.advance(90.0)
    assert library.add_file(model).added_at == DEFAULT_START + 90.0
    assert [m.added_at for m in library.installed()] == [DEFAULT_START + 90.0]
