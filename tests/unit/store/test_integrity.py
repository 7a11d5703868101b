"""A damaged store is found out before anything writes to it: truncated to 50% or 90%, or with
data blocks overwritten, it opens read-only, every write is refused with a message that says
what to do, and the file stays byte for byte what it was."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.store import integrity
from treechat.store.database import Store, StoreDamagedError, StoreError

BLOCK = 262_144
HEADERS = 3 * 4096


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_store(path: Path, messages: int = 4000) -> None:
    store = Store.open(path)
    store.call(lambda r: r.create_session(Session("s1", "First", None, "m", 1.0, updated_at=1.0)))
    nodes = []
    prev = None
    for i in range(messages):
        nid = f"n{i}"
        nodes.append(
            Node(
                id=nid, seq=0, created_at=1.0, session_id="s1",
                role="user" if i % 2 == 0 else "assistant",
                output=f"message {i} " + os.urandom(300).hex(), predecessor=prev,
            )
        )
        prev = nid
    store.call(lambda r: r.apply_change("s1", Change(tuple(nodes), prev), 2.0))
    store.close()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pristine") / "treechat.duckdb"
    build_store(path)
    return path


def copy_of(pristine: Path, tmp_path: Path) -> Path:
    path = tmp_path / "treechat.duckdb"
    path.write_bytes(pristine.read_bytes())
    return path


def truncate_to(fraction: float) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        os.truncate(path, int(path.stat().st_size * fraction))

    return damage


def overwrite_message_blocks(path: Path) -> None:
    """Random bytes over the middle of two blocks that hold message text (found through
    DuckDB's storage info, so the damage lands in data, not in free space)."""
    con = duckdb.connect(str(path), read_only=True)
    blocks = [
        int(r[0])
        for r in con.execute(
            "SELECT DISTINCT block_id FROM pragma_storage_info('nodes') "
            "WHERE column_name = 'output' AND block_id >= 0 ORDER BY block_id"
        ).fetchall()
    ]
    con.close()
    assert len(blocks) >= 2
    with path.open("r+b") as fh:
        for block in (blocks[len(blocks) // 2], blocks[-1]):
            fh.seek(HEADERS + block * BLOCK + BLOCK // 2)
            fh.write(os.urandom(4096))


def _reads_every_table(path: Path) -> bool:
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        return False
    try:
        return all(
            integrity._check_table(con, table).ok
            for (table,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
        )
    finally:
        con.close()


def _key_lookup_fails(path: Path) -> bool:
    con = duckdb.connect(str(path), read_only=True)
    try:
        con.execute("SELECT rowid FROM nodes WHERE id = 'n2000'").fetchall()
    except duckdb.Error:
        return True
    finally:
        con.close()
    return False


def overwrite_index_block(path: Path) -> None:
    """Random bytes over a block of the messages' key index: one that every table reads back
    through, but a lookup by key (as each write makes) does not. Found by trying each block
    that holds no table data on a copy."""
    con = duckdb.connect(str(path), read_only=True)
    total = int(con.execute("SELECT total_blocks FROM pragma_database_size()").fetchone()[0])
    data = {
        int(r[0])
        for (table,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
        for r in con.execute(
            f"SELECT DISTINCT block_id FROM pragma_storage_info('{table}') WHERE block_id >= 0"
        ).fetchall()
    }
    con.close()
    original = path.read_bytes()
    trial = path.with_name("trial.duckdb")
    try:
        for block in (b for b in range(total) if b not in data):
            start = HEADERS + block * BLOCK + BLOCK // 2
            damaged = original[:start] + os.urandom(4096) + original[start + 4096:]
            trial.write_bytes(damaged)
            if _reads_every_table(trial) and _key_lookup_fails(trial):
                path.write_bytes(damaged)
                return
    finally:
        trial.unlink(missing_ok=True)
    raise AssertionError("no block of the key index was found")


DAMAGES = {
    "truncated to 50%": truncate_to(0.5),
    "truncated to 90%": truncate_to(0.9),
    "data blocks overwritten": overwrite_message_blocks,
    # every table reads back, but the key a write looks up first cannot be found
    "an index block overwritten": overwrite_index_block,
}


@pytest.mark.parametrize("damage", DAMAGES.values(), ids=DAMAGES.keys())
def test_a_damaged_store_is_never_written(
    damage: Callable[[Path], None], pristine: Path, tmp_path: Path
) -> None:
    path = copy_of(pristine, tmp_path)
    damage(path)
    before = digest(path)

    store = Store.open(path)
    try:
        report = store.integrity(timeout=60)
        assert report is not None and not report.ok
        assert store.damage is not None
        with pytest.raises(StoreDamagedError) as refused:
            store.call(
                lambda r: r.create_session(Session("s2", "New", None, "m", 3.0, updated_at=3.0))
            )
        message = str(refused.value)
        assert "damaged" in message and "will not write" in message
        assert "treechat backup restore" in message and "treechat export" in message
        # A read that reaches the damage says the same in words, never a DuckDB traceback.
        try:
            store.call(lambda r: r.session_nodes("s1"))
        except StoreError as exc:
            assert "damaged" in str(exc)
    finally:
        store.close()
    assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["treechat.duckdb"]


def test_truncation_is_found_at_open_in_milliseconds(pristine: Path, tmp_path: Path) -> None:
    path = copy_of(pristine, tmp_path)
    truncate_to(0.9)(path)
    store = Store.open(path)
    try:
        # Known before any check thread runs: the file is opened read-only from the start.
        assert store.read_only
        assert store.damage is not None and "truncated" in store.damage.problem
        assert "90%" in store.damage.problem
    finally:
        store.close()


def test_what_can_be_read_stays_readable(pristine: Path, tmp_path: Path) -> None:
    path = copy_of(pristine, tmp_path)
    overwrite_message_blocks(path)
    store = Store.open(path)
    try:
        (session,) = store.call(lambda r: r.list_sessions())
        assert session.title == "First"
        assert store.call(lambda r: r.get_setting("anything", "default")) == "default"
    finally:
        store.close()


def test_full_check_names_the_damaged_table(pristine: Path, tmp_path: Path) -> None:
    path = copy_of(pristine, tmp_path)
    overwrite_message_blocks(path)
    con = duckdb.connect(str(path), read_only=True)
    try:
        report = integrity.full_check(con, path)
    finally:
        con.close()
    assert not report.ok and report.complete
    assert report.damaged_tables == ("nodes",)
    assert "sessions" in report.readable_tables
    assert "checksum" in report.problem.lower()


def test_a_whole_store_passes_and_takes_writes(pristine: Path, tmp_path: Path) -> None:
    path = copy_of(pristine, tmp_path)
    store = Store.open(path)
    try:
        report = store.integrity(timeout=60)
        assert report is not None and report.ok
        store.call(lambda r: r.create_session(Session("s2", "New", None, "m", 3.0, updated_at=3.0)))
        assert len(store.call(lambda r: r.list_sessions())) == 2
    finally:
        store.close()


def test_a_garbage_wal_is_moved_aside_and_logged(
    pristine: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = copy_of(pristine, tmp_path)
    wal = path.with_name(path.name + ".wal")
    garbage = os.urandom(5000)
    wal.write_bytes(garbage)
    with caplog.at_level("WARNING", logger="treechat.store.database"):
        store = Store.open(path)
        store.close()
    (kept,) = tmp_path.glob("treechat.duckdb.wal.unreadable-*")
    assert kept.read_bytes() == garbage
    assert any("could not be read" in r.getMessage() for r in caplog.records)


def test_a_real_wal_is_replayed_not_moved(tmp_path: Path) -> None:
    path = tmp_path / "treechat.duckdb"
    child = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from treechat.store.database import Store\n"
        "from treechat.core.model import Session\n"
        "s = Store.open(Path(sys.argv[1]))\n"
        "kept = Session('s9', 'Kept', None, 'm', 1.0, updated_at=1.0)\n"
        "s.call(lambda r: r.create_session(kept))\n"
        "os._exit(0)\n"  # no checkpoint: the session lives only in the WAL
    )
    subprocess.run([sys.executable, "-c", child, str(path)], check=True, timeout=120)
    assert path.with_name(path.name + ".wal").exists()
    store = Store.open(path)
    try:
        assert [s.title for s in store.call(lambda r: r.list_sessions())] == ["Kept"]
    finally:
        store.close()
    assert not list(tmp_path.glob("*.unreadable-*"))


@pytest.mark.skipif(os.name == "nt", reason="POSIX permissions")
def test_store_and_folder_are_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        data = tmp_path / "data"
        Store.open(data / "treechat.duckdb").close()
    finally:
        os.umask(old)
    assert (data.stat().st_mode & 0o777) == 0o700
    assert ((data / "treechat.duckdb").stat().st_mode & 0o777) == 0o600


def test_a_healthy_store_shorter_than_all_its_blocks_is_not_called_truncated(
        tmp_path: Path) -> None:
    # Four imports leave free blocks that DuckDB still counts after a checkpoint shortened
    # the file (seen: 20 blocks counted, 12 used, the file holding 18): that is whole.
    import asyncio

    from treechat.services.transfer.importing import import_file

    data = Path(__file__).resolve().parents[2] / "data" / "imports"
    path = tmp_path / "store.duckdb"
    for name in ("aistudio-prompt-branch.json", "aistudio-prompt.json",
                 "chatgpt-export-browsing.json", "chatgpt-reasoning-tools.json"):
        store = Store.open(path)
        try:
            asyncio.run(import_file(store, data / name))
        finally:
            store.close()
    con = duckdb.connect(str(path), read_only=True)
    try:
        total, used = con.execute(
            "SELECT total_blocks, used_blocks FROM pragma_database_size()").fetchone() or (0, 0)
        assert HEADERS + total * BLOCK > path.stat().st_size  # the case: fewer bytes than blocks
        assert integrity.quick_check(con, path).ok
        assert integrity.full_check(con, path).ok
    finally:
        con.close()
    assert HEADERS + used * BLOCK <= path.stat().st_size
    store = Store.open(path)  # and it takes writes
    store.close()
