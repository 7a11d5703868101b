"""The window's own backups on a real store: one at start when due, none while today has one,
and one within a minute of the first change of a new day."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.support.clock import FakeClock

from treechat.core.model import Session
from treechat.services.store_life.backup_schedule import CHECK_EVERY_S, BackupSchedule
from treechat.services.store_life.backups import BackupService
from treechat.store.database import Store


async def listed(service: BackupService) -> list[str]:
    return [b.reason for b in await service.list()]


async def tick(clock: FakeClock, seconds: float) -> None:
    clock.advance(seconds)
    await clock.settle()
    for _ in range(50):  # the backup itself runs on a thread
        await asyncio.sleep(0.02)
        if clock.sleepers:
            return


@pytest.mark.asyncio
async def test_backs_up_at_start_and_after_the_first_change_of_a_day(tmp_path: Path) -> None:
    path = tmp_path / "treechat.duckdb"
    clock = FakeClock.at_local(2027, 1, 15, 12)
    store = Store.open(path)
    service = BackupService(store, clock=clock)
    made: list[str] = []
    schedule = BackupSchedule(service, clock, on_made=lambda b: made.append(b.reason))
    try:
        await store.run(lambda r: r.create_session(Session("s1", "First", None, "m", 1.0)))
        schedule.start()
        await tick(clock, 0)
        assert await listed(service) == ["start"]  # there was none: made at once

        await store.run(lambda r: r.create_session(Session("s2", "Same day", None, "m", 2.0)))
        await tick(clock, CHECK_EVERY_S)
        await tick(clock, CHECK_EVERY_S)
        assert await listed(service) == ["start"]  # today has one

        await tick(clock, 86400.0)  # the next day, nothing changed yet: nothing to back up
        await tick(clock, CHECK_EVERY_S)
        assert await listed(service) == ["start"]

        await store.run(lambda r: r.create_session(Session("s3", "Next day", None, "m", 3.0)))
        await tick(clock, CHECK_EVERY_S)
        await tick(clock, CHECK_EVERY_S)  # within a minute of the change
        assert sorted(await listed(service)) == ["daily", "start"]
        assert made == ["start", "daily"]
    finally:
        await schedule.stop()
        store.close()
    assert not schedule.running


@pytest.mark.asyncio
async def test_no_backup_at_start_when_the_newest_is_recent(tmp_path: Path) -> None:
    path = tmp_path / "treechat.duckdb"
    clock = FakeClock.at_local(2027, 1, 15, 12)
    store = Store.open(path)
    service = BackupService(store, clock=clock)
    schedule = BackupSchedule(service, clock)
    try:
        await service.create("manual")
        schedule.start()
        await tick(clock, 0)
        await tick(clock, CHECK_EVERY_S)
        assert await listed(service) == ["manual"]
    finally:
        await schedule.stop()
        store.close()
