"""How long an event loop's thread goes between the ticks of a 5 ms timer, and why: its own
work (the thread's CPU time, `time.thread_time`), waiting for a core while runnable (the
kernel's run-queue time for the thread, Linux's /proc/thread-self/schedstat; 0 elsewhere), or
blocked (the rest: the GIL or a lock held by another thread of the process).

A window's stall on a loaded machine is mostly the scheduler's; only the first part is work
the window's thread did, and the third is work its process did on other threads."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")
TICK = 0.005


@dataclass(frozen=True, slots=True)
class Gap:
    """One tick: how much longer than the timer's 5 ms it took (ms), and of the whole tick
    the loop thread's CPU time and its time runnable without a core."""

    stall_ms: float
    busy_ms: float
    waiting_ms: float

    @property
    def blocked_ms(self) -> float:
        # the tick's own 5 ms are spent asleep in the loop's poll, neither busy nor waiting
        return max(0.0, self.stall_ms - self.busy_ms - self.waiting_ms)


class _RunQueueClock:
    """Seconds the calling thread has spent runnable, waiting for a core (0 if unknown)."""

    def __init__(self) -> None:
        try:
            self._fd: int | None = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        except OSError:
            self._fd = None

    def __call__(self) -> float:
        if self._fd is None:
            return 0.0
        return int(os.pread(self._fd, 128, 0).split()[1]) / 1e9

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)


async def _tick_until(done: Callable[[], bool]) -> list[Gap]:
    waited = _RunQueueClock()
    gaps: list[Gap] = []
    try:
        while not done():
            t, c, w = time.perf_counter(), time.thread_time(), waited()
            await asyncio.sleep(TICK)
            gaps.append(Gap((time.perf_counter() - t - TICK) * 1000,
                            (time.thread_time() - c) * 1000, (waited() - w) * 1000))
    finally:
        waited.close()
    return gaps


async def idle_gaps(seconds: float) -> list[Gap]:
    """The ticks with nothing else running on the loop: the machine's own share."""
    end = time.perf_counter() + seconds
    return await _tick_until(lambda: time.perf_counter() >= end)


async def ticking(work: Callable[[], Awaitable[T]]) -> tuple[T, float, list[Gap]]:
    """(what `work` returns, its seconds, the loop's ticks meanwhile)."""
    finished = asyncio.Event()
    ticker = asyncio.ensure_future(_tick_until(finished.is_set))
    started = time.perf_counter()
    try:
        out = await work()
    finally:
        finished.set()
    seconds = time.perf_counter() - started
    return out, seconds, await ticker


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def gap_figures(gaps: list[Gap], suffix: str = "") -> dict[str, float]:
    """gui_stall_max_ms (the worst stall) with what it was made of (gui_busy_max_ms: the loop
    thread's own CPU time in it; gui_waiting_max_ms: runnable without a core;
    gui_blocked_max_ms: the rest), gui_stall_p99_ms, and over every tick the most the loop
    thread worked (gui_busy_tick_max_ms) and was blocked (gui_blocked_tick_max_ms); each name
    ends with `suffix`."""
    worst = max(gaps, key=lambda g: g.stall_ms)
    figures = {"gui_stall_max_ms": worst.stall_ms, "gui_busy_max_ms": worst.busy_ms,
               "gui_waiting_max_ms": worst.waiting_ms, "gui_blocked_max_ms": worst.blocked_ms,
               "gui_stall_p99_ms": p99([g.stall_ms for g in gaps]),
               "gui_busy_tick_max_ms": max(g.busy_ms for g in gaps),
               "gui_blocked_tick_max_ms": max(g.blocked_ms for g in gaps)}
    return {name + suffix: value for name, value in figures.items()}
