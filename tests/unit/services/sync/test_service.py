"""The sync service: one target at a time with its passphrase in the keychain, a status that
says when it last ran, and a background sync on start and after changes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.support.clock import FakeClock
from tests.support.sync_devices import PASSPHRASE, connect, make_device, start_target

from treechat.services.sync.service import SyncError, TargetConfig
from treechat.services.sync.targets import FolderTarget


async def until(predicate: object, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():  # type: ignore[operator]
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)


@pytest.mark.asyncio
async def test_adding_checks_the_target_and_keeps_only_the_passphrase_in_the_keychain(
    tmp_path: Path,
) -> None:
    (tmp_path / "target").mkdir()
    device = make_device(tmp_path, "laptop", FolderTarget(tmp_path / "target"), FakeClock())
    try:
        with pytest.raises(SyncError, match="is not a folder"):
            await device.sync.add(TargetConfig("folder", str(tmp_path / "nowhere")),
                                  PASSPHRASE)
        with pytest.raises(SyncError, match="a passphrase is needed"):
            await device.sync.add(TargetConfig("folder", str(tmp_path / "target")), "")
        assert (await device.sync.status()).target is None
        start_target(FolderTarget(tmp_path / "target"))
        await connect(device, str(tmp_path / "target"))
        status = await device.sync.status()
        assert status.target == TargetConfig("folder", str((tmp_path / "target").resolve()))
        assert status.last is None
        assert device.keyring.passwords == {("treechat", "sync-passphrase"): PASSPHRASE}
        stored = device.store.call(lambda r: r.con.execute(
            "SELECT value FROM settings").fetchall())
        assert PASSPHRASE not in repr(stored)
        report = await device.sync.sync_now()
        assert (await device.sync.status()).last == report
        assert await device.sync.remove() is True
        assert device.keyring.passwords == {}
        assert (await device.sync.status()).target is None
        with pytest.raises(SyncError, match="no sync target is set"):
            await device.sync.sync_now()
    finally:
        device.close()


@pytest.mark.asyncio
async def test_the_background_sync_runs_on_start_and_after_a_change(tmp_path: Path) -> None:
    (tmp_path / "target").mkdir()
    target = FolderTarget(tmp_path / "target")
    start_target(target)
    clock = FakeClock()
    a = make_device(tmp_path, "laptop", target, clock)
    b = make_device(tmp_path, "desktop", target, clock)
    a.sync.quiet = 0.05
    reports: list[object] = []
    a.sync.listeners.append(lambda report, error: reports.append(report))
    try:
        await connect(a, str(tmp_path / "target"))
        await connect(b, str(tmp_path / "target"))
        a.sync.start()
        await until(lambda: len(reports) == 1)  # on start
        chat = await a.sessions.create(title="Written here")
        await a.sessions.append_message(chat.id, "goes out by itself")
        a.sync.changed()
        await until(lambda: len(reports) == 2)
        assert getattr(reports[1], "sent_nodes", 0) == 1
        got = await b.sync.sync_now()
        assert got.new_chats == ("Written here",)
    finally:
        await a.sync.stop()
        a.close()
        b.close()
