"""When the window backs the store up on its own: at start when the newest backup is a day
old (or there is none), and within a minute of the first change of a day that has no
backup yet. A backup that fails is logged and tried at the next change; it never stops the
app."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Awaitable, Callable

from ...core.clock import Clock
from .backups import Backup, BackupService

log = logging.getLogger(__name__)

CHECK_EVERY_S = 30.0  # a change is backed up within two checks: under a minute


def same_local_day(a: float, b: float) -> bool:
    return dt.date.fromtimestamp(a) == dt.date.fromtimestamp(b)


class BackupSchedule:
    """Runs beside the window (`start`/`stop`); `paused` while a restore swaps the file."""

    def __init__(
        self,
        service: BackupService,
        clock: Clock,
        *,
        check_every: float = CHECK_EVERY_S,
        on_made: Callable[[Backup], None] | None = None,
    ) -> None:
        self.service = service
        self.clock = clock
        self.check_every = check_every
        self.on_made = on_made
        self.paused = False
        self._task: asyncio.Task[None] | None = None
        self._seen_writes = 0
        self._last_made_at: float | None = None  # on this clock, by this run

    def note_made(self, backup: Backup) -> None:
        """A backup was made now (by this schedule or by Back up now)."""
        self._last_made_at = self.clock.now()
        if self.on_made is not None:
            self.on_made(backup)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if not self.running:
            self._task = asyncio.ensure_future(self.run())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def run(self) -> None:
        self._seen_writes = self.service.writes
        await self._make(self.service.backup_if_due("start"))
        while True:
            await self.clock.sleep(self.check_every)
            await self.check()

    async def check(self) -> Backup | None:
        """One look: a backup when the store changed since the last look and today has none."""
        writes = self.service.writes
        if self.paused or writes == self._seen_writes or self.service.released:
            return None
        self._seen_writes = writes
        if await self._backed_up_today():
            return None
        return await self._make(self.service.create("daily"))

    async def _backed_up_today(self) -> bool:
        if self._last_made_at is not None:
            return same_local_day(self._last_made_at, self.clock.now())
        try:
            found = await self.service.list()
        except OSError:
            return False
        return bool(found) and same_local_day(found[0].created_at, self.clock.now())

    async def _make(self, making: Awaitable[Backup | None]) -> Backup | None:
        try:
            made = await making
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a missed backup is said in the log, never a crash
            log.warning("the automatic backup of %s was not made: %s", self.service.store_path, exc)
            return None
        if made is not None:
            self.note_made(made)
        return made
