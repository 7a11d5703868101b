"""The clock the application runs on: the system's. The composition root builds one and hands
it to every service that needs the time; tests hand in a fake instead."""

from __future__ import annotations

import asyncio
import time
from typing import Final

from ..core.clock import Clock

__all__ = ["SYSTEM_CLOCK", "Clock", "SystemClock"]


class SystemClock:
    """`time.time`, `time.monotonic` and `asyncio.sleep` behind the `Clock` protocol."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


SYSTEM_CLOCK: Final[Clock] = SystemClock()
