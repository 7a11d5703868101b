"""A clock that moves only when the test moves it.

`FakeClock` satisfies `treechat.core.clock.Clock`. Wall time and monotonic time advance
together by `advance(seconds)`, which also wakes every `sleep` whose time has come, in order,
so a retry wait, a flush interval or a watch loop runs in no real time at all and a test can
place "now" a minute before midnight without waiting for midnight.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import heapq
import itertools

# 2027-01-15 08:00 UTC: a fixed day, far from any daylight-saving change.
DEFAULT_START = 1_800_000_000.0


class FakeClock:
    def __init__(self, start: float = DEFAULT_START, *, monotonic_start: float = 1000.0) -> None:
        self._wall = start
        self._mono = monotonic_start
        self._order = itertools.count()
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []

    @classmethod
    def at_local(cls, year: int, month: int, day: int, hour: int = 12, minute: int = 0,
                 second: int = 0) -> FakeClock:
        """A clock that starts at that moment of the machine's local time (the time the day
        grouping of the session list is in)."""
        return cls(dt.datetime(year, month, day, hour, minute, second).timestamp())

    def now(self) -> float:
        return self._wall

    def monotonic(self) -> float:
        return self._mono

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._mono + seconds, next(self._order), waiter))
        await waiter

    @property
    def sleepers(self) -> int:
        """How many `sleep` calls are waiting on this clock now."""
        return sum(1 for _, _, waiter in self._sleepers if not waiter.done())

    def advance(self, seconds: float) -> None:
        """Move time forward and wake the sleepers that are due (they run at the loop's next
        turn: `await settle()` to let them)."""
        if seconds < 0:
            raise ValueError("a clock does not go back")
        self._wall += seconds
        self._mono += seconds
        while self._sleepers and self._sleepers[0][0] <= self._mono:
            _, _, waiter = heapq.heappop(self._sleepers)
            if not waiter.done():
                waiter.set_result(None)

    async def settle(self, turns: int = 5) -> None:
        """Give woken tasks a few turns of the event loop to run up to their next wait."""
        for _ in range(turns):
            await asyncio.sleep(0)
