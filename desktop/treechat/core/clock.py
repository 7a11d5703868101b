"""What a clock offers, as a protocol: code that needs the time is handed one (the system's
in the application, a fake in tests) and never reads the time itself. The composition root
hands `SYSTEM_CLOCK` to every service that needs the time."""

from __future__ import annotations

import time
from typing import Final, Protocol

__all__ = ["SYSTEM_CLOCK", "Clock", "SystemClock"]


class Clock(Protocol):
    def now(self) -> float:
        """Wall-clock seconds since the epoch: what is stored, compared across runs and shown."""
        ...

    def monotonic(self) -> float:
        """Seconds that only move forward, from an arbitrary origin: for intervals and
        deadlines within one run."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait `seconds` (of this clock's time) without blocking the event loop."""
        ...


class SystemClock:
    """`time.time`, `time.monotonic` and `asyncio.sleep` behind the `Clock` protocol."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        import asyncio  # loaded when first waited on, not by every importer of a clock

        await asyncio.sleep(seconds)


SYSTEM_CLOCK: Final[Clock] = SystemClock()
