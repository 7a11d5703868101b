"""Opening the file for the worker: a new file starts at the current schema, what is not ours
or is newer is refused untouched, and a write-ahead log DuckDB cannot replay is set aside."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import pytest

from treechat.store._header import schema_version
from treechat.store.opening import connect, file_identity, set_aside_unreadable_wal
from treechat.store.schema import SCHEMA_VERSION
from treechat.store.store_errors import StoreCorruptError, StoreTooNewError


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_new_file_is_created_at_the_current_schema_and_verified(tmp_path: Path) -> None:
    path = tmp_path / "data" / "store.duckdb"
    con, damage, verified = connect(path)
    try:
        assert damage is None and verified is not None and verified.ok
        assert schema_version(con) == SCHEMA_VERSION
    finally:
        con.close()
    again, damage, _ = connect(path)  # the second open finds it whole and current
    again.close()
    assert damage is None


def test_a_newer_or_foreign_file_is_refused_untouched(tmp_path: Path) -> None:
    newer = tmp_path / "newer.duckdb"
    con = duckdb.connect(str(newer))
    con.execute("CREATE TABLE schema_version (version INTEGER, applied_at DOUBLE)")
    con.execute("INSERT INTO schema_version VALUES (?, 0)", [SCHEMA_VERSION + 1])
    con.close()
    before = digest(newer)
    with pytest.raises(StoreTooNewError, match="written by a newer Treechat"):
        connect(newer)
    assert digest(newer) == before
    foreign = tmp_path / "foreign.duckdb"
    con = duckdb.connect(str(foreign))
    con.execute("CREATE TABLE invoices (n INTEGER)")
    con.close()
    with pytest.raises(StoreCorruptError, match="not a Treechat store"):
        connect(foreign)


def test_an_unreadable_log_is_moved_aside_not_dropped(tmp_path: Path) -> None:
    wal = tmp_path / "store.duckdb.wal"
    wal.write_bytes(b"not a log")
    first = set_aside_unreadable_wal(wal)
    wal.write_bytes(b"again")
    second = set_aside_unreadable_wal(wal)
    assert not wal.exists() and first != second
    assert first.read_bytes() == b"not a log" and second.read_bytes() == b"again"
    assert first.name.startswith("store.duckdb.wal.unreadable-")


def test_a_file_put_in_the_stores_place_is_another_file(tmp_path: Path) -> None:
    path = tmp_path / "store.duckdb"
    assert file_identity(path) is None
    path.write_bytes(b"one")
    first = file_identity(path)
    (tmp_path / "other").write_bytes(b"two")
    (tmp_path / "other").replace(path)
    assert first is not None and file_identity(path) != first
