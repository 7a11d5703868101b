"""Opening the DuckDB store and refusing what cannot be opened, with real files (what the
repository writes and reads is in test_repository.py)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from treechat.core.model import Session
from treechat.store.database import (
    Store,
    StoreCorruptError,
    StoreLockedError,
    StoreTooNewError,
)
from treechat.store.schema import SCHEMA_VERSION


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "t.duckdb")
    s.call(lambda r: r.create_session(Session("s1", "First", None, "m", 1.0, updated_at=1.0)))
    yield s
    s.close()


def test_new_store_is_at_current_schema(store: Store) -> None:
    assert store.call(lambda r: r.schema_version()) == SCHEMA_VERSION


def test_the_file_itself_refuses_predecessor_and_caller_together(store: Store) -> None:
    with pytest.raises(duckdb.ConstraintException):
        store.call(
            lambda r: r.con.execute(
                "INSERT INTO nodes (id, seq, created_at, session_id, role, predecessor, caller) "
                "VALUES ('x', 99, 0, 's1', 'tool', 'a', 'b')"
            )
        )


def test_newer_schema_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "new.duckdb"
    Store.open(path).close()
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO schema_version VALUES (?, 0)", [SCHEMA_VERSION + 1])
    con.close()
    before = digest(path)
    with pytest.raises(StoreTooNewError, match="newer Treechat"):
        Store.open(path)
    assert digest(path) == before


@pytest.mark.parametrize("content", [b"", b"not a database at all" * 100, None])
def test_corrupt_file_is_reported_with_its_path_and_left_untouched(
    tmp_path: Path, content: bytes | None
) -> None:
    path = tmp_path / "bad.duckdb"
    if content is None:  # a real store whose blocks were damaged after the header
        Store.open(path).close()
        raw = bytearray(path.read_bytes())
        raw[4096:] = b"\xff" * (len(raw) - 4096)
        path.write_bytes(bytes(raw))
    else:
        path.write_bytes(content)
    before = digest(path)
    with pytest.raises(StoreCorruptError) as info:
        Store.open(path)
    assert str(path) in str(info.value)
    assert digest(path) == before


def test_a_foreign_duckdb_file_is_not_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "other.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE accounts (x INTEGER)")
    con.close()
    before = digest(path)
    with pytest.raises(StoreCorruptError, match="not a Treechat store"):
        Store.open(path)
    assert digest(path) == before


def test_second_process_gets_a_clear_error_naming_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "held.duckdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys
            from treechat.store.database import Store
            s = Store.open(__import__("pathlib").Path({str(path)!r}))
            print("ready", flush=True)
            sys.stdin.readline()
            s.close()
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreLockedError) as info:
            Store.open(path)
        assert f"process {holder.pid}" in str(info.value)
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=30)
        holder.stdin.close()
        holder.stdout.close()  # type: ignore[union-attr]
    Store.open(path).close()  # usable again once the holder is gone


def test_the_write_ahead_log_is_private_whatever_the_umask(tmp_path: Path) -> None:
    """DuckDB creates `.wal` itself, with the process's umask; it is 0600 all the same."""
    import os
    import stat

    previous = os.umask(0o022)
    try:
        s = Store.open(tmp_path / "w.duckdb")
        try:
            s.call(lambda r: r.create_session(Session("s1", "A", None, "m", 1.0, updated_at=1.0)))
            wal = tmp_path / "w.duckdb.wal"
            assert wal.exists()
            assert stat.S_IMODE(wal.stat().st_mode) == 0o600
        finally:
            s.close()
    finally:
        os.umask(previous)


def test_a_store_held_to_a_memory_limit_keeps_it_across_a_backup_and_a_release(
    tmp_path: Path,
) -> None:
    def limit(store: Store) -> str:
        return str(store.call(
            lambda r: r.con.execute("SELECT current_setting('memory_limit')").fetchone())[0])

    held = Store.open(tmp_path / "held.duckdb", memory_limit="96MB")
    try:
        assert limit(held) == "91.5 MiB"
        assert held.backup("test").path.exists()  # written with DuckDB's own limit
        assert limit(held) == "91.5 MiB"
        held.release()
        held.reopen()
        assert limit(held) == "91.5 MiB"
    finally:
        held.close()
    with Store.open(tmp_path / "free.duckdb") as free:
        assert limit(free) != "91.5 MiB"
