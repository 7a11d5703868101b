"""The backup service the window calls: list, make, check and restore off the event loop."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from treechat.core.model import Session
from treechat.services.store_life.backups import BackupError, BackupService
from treechat.store.database import Store


@pytest.mark.asyncio
async def test_make_list_verify_and_restore(tmp_path: Path) -> None:
    path = tmp_path / "treechat.duckdb"
    store = Store.open(path)
    service = BackupService(store)
    try:
        await store.run(lambda r: r.create_session(Session("s1", "Kept", None, "m", 1.0)))
        made = await service.create()
        assert await service.backup_if_due() is None  # one made today already
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


HOLD_JOURNAL = (
    "import sys\n"
    "from pathlib import Path\n"
    "from treechat.services.store_life.drafts import ReplyJournal\n"
    "journal = ReplyJournal(Path(sys.argv[1]), 'd1')\n"
    "assert journal.claim()\n"
    "print('claimed', flush=True)\n"
    "sys.stdin.read()\n"
)


@pytest.mark.asyncio
async def test_restore_in_place_reopens_the_same_store_and_waits_for_a_live_send(
    tmp_path: Path,
) -> None:
    """The window's restore: the same Store reads the backup afterwards; while a command is
    streaming with the store released, the restore is refused and nothing changes."""
    path = tmp_path / "treechat.duckdb"
    store = Store.open(path)
    service = BackupService(store)
    try:
        await store.run(lambda r: r.create_session(Session("s1", "Kept", None, "m", 1.0)))
        made = await service.create()
        await store.run(lambda r: r.create_session(Session("s2", "Later", None, "m", 2.0)))
        sender = subprocess.Popen([sys.executable, "-c", HOLD_JOURNAL, str(path)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert sender.stdout is not None and sender.stdout.readline() == "claimed\n"
            with pytest.raises(BackupError, match="waiting for a reply"):
                await service.restore_in_place(made)
            assert len(await store.run(lambda r: r.list_sessions())) == 2
        finally:
            assert sender.stdin is not None and sender.stdout is not None
            sender.stdin.close()
            sender.wait(timeout=60)
            sender.stdout.close()
        kept = await service.restore_in_place(made)
        assert kept is not None and kept.exists()
        assert [s.title for s in await store.run(lambda r: r.list_sessions())] == ["Kept"]
        await store.run(lambda r: r.create_session(Session("s3", "After", None, "m", 3.0)))
    finally:
        store.close()
    with Store.open(path) as reopened:
        titles = {s.title for s in reopened.call(lambda r: r.list_sessions())}
    assert titles == {"Kept", "After"}


@pytest.mark.asyncio
async def test_after_a_restore_the_connections_are_the_restored_stores(tmp_path: Path) -> None:
    from treechat.providers.connections import Connection
    from treechat.services.models.connections import SETTINGS_CONNECTIONS, ConnectionService

    def saved(*names: str) -> list[dict[str, object]]:
        return [Connection(id=n, kind="openai-compatible", base_url=f"http://127.0.0.1:9/{n}",
                           models=()).to_record() for n in names]

    path = tmp_path / "treechat.duckdb"
    store = Store.open(path)
    service = BackupService(store)
    try:
        await store.run(lambda r: r.set_setting(SETTINGS_CONNECTIONS, saved("lab")))
        made = await service.create()
        await store.run(lambda r: r.set_setting(SETTINGS_CONNECTIONS, saved("lab", "later")))
        connections = ConnectionService(store)
        heard: list[bool] = []
        connections.add_listener(lambda: heard.append(True))
        assert [c.id for c in connections.saved()] == ["lab", "later"]
        await service.restore_in_place(made)
        await connections.reload()
        assert [c.id for c in connections.saved()] == ["lab"]
        assert connections.find("later") is None and heard
    finally:
        store.close()
