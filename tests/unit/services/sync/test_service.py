"""The sync service: one target at a time with its passphrase in the keychain, and a status
that says when it last ran (the window's background syncs: tests/ui/controllers/test_sync.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.clock import FakeClock
from tests.support.sync_devices import PASSPHRASE, connect, make_device, start_target

from treechat.services.sync.service import SyncError, TargetConfig
from treechat.services.sync.targets import FolderTarget


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
