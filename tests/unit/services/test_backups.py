"""The backup service the window calls: list, make, check and restore off the event loop."""

from __future__ import annotations

from pathlib import Path

import pytest

from treechat.core.model import Session
from treechat.services.backups import BackupError, BackupService
from treechat.store.database import Store


@pytest.mark.asyncio
async def test_make_list_verify_and_restore(tmp_path: Path) -> None:
    path = tmp_path / "treechat.duckdb"
    service = BackupService(path)
    store = Store.open(path)
    try:
        await store.run(lambda r: r.create_session(Session("s1", "Kept", None, "m", 1.0)))
        made = await service.create(store)
        assert await service.backup_if_due(store) is None  # one made today already
        await store.run(lambda r: r.create_session(Session("s2", "Later", None, "m", 2.0)))
        (listed,) = await service.list()
        assert listed.path == made.path
        assert (await service.verify(listed)).ok
        with pytest.raises(BackupError, match="open in this process"):
            await service.restore(listed)
    finally:
        store.close()
    aside = await service.restore("latest")
    assert aside is not None and aside.exists()
    with Store.open(path) as reopened:
        assert [s.title for s in reopened.call(lambda r: r.list_sessions())] == ["Kept"]
