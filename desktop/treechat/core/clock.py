"""What a clock offers, as a protocol: code that needs the time is handed one (the system's
in the application, a fake in tests) and never reads the time itself."""

from __future__ import annotations

from typing import Protocol


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
