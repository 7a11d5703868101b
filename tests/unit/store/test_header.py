"""What the store's modules share about the file: a file that is not DuckDB is refused before
DuckDB touches it, the schema version is read, a lock names its holder, and the folder and
file are this user's only."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import duckdb
import pytest

from treechat.store._header import (
    check_header,
    classify_open_error,
    is_open_here,
    make_private_dir,
    make_private_file,
    mark_closed,
    mark_open,
    schema_version,
)
from treechat.store.store_errors import StoreCorruptError, StoreLockedError


def test_a_file_that_is_not_duckdb_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    for content in (b"", b"SQLite format 3\x00" + b"\x00" * 100):
        path = tmp_path / "store.duckdb"
        path.write_bytes(content)
        with pytest.raises(StoreCorruptError, match="is not a DuckDB database"):
            check_header(path)
        assert path.read_bytes() == content
    with pytest.raises(StoreCorruptError, match="cannot be read"):
        check_header(tmp_path / "missing.duckdb")


def test_a_pipe_or_a_device_in_the_stores_place_is_refused_at_once(tmp_path: Path) -> None:
    from treechat.store.database import Store

    pipe = tmp_path / "pipe" / "treechat.duckdb"
    pipe.parent.mkdir()
    os.mkfifo(pipe)  # opening it to read would wait for a writer that never comes
    device = tmp_path / "device" / "treechat.duckdb"
    device.parent.mkdir()
    device.symlink_to("/dev/zero")
    for path in (pipe, device):
        with pytest.raises(StoreCorruptError, match="is not a file"):
            check_header(path)
        with pytest.raises(StoreCorruptError, match="is not a file"):
            Store.open(path)
    assert stat.S_ISFIFO(os.lstat(pipe).st_mode)  # left as it was


def test_a_duckdb_file_passes_and_its_schema_version_is_read(tmp_path: Path) -> None:
    path = tmp_path / "store.duckdb"
    con = duckdb.connect(str(path))
    try:
        assert schema_version(con) == 0
        con.execute("CREATE TABLE schema_version (version INTEGER, applied_at DOUBLE)")
        con.execute("INSERT INTO schema_version VALUES (2, 0), (5, 0)")
        assert schema_version(con) == 5
    finally:
        con.close()
    check_header(path)


def test_a_lock_names_the_process_that_holds_it() -> None:
    locked = classify_open_error(
        Path("/d/t.duckdb"), OSError('Could not set lock on file: Conflicting lock (PID 4242)'))
    assert isinstance(locked, StoreLockedError) and locked.holder == "process 4242"
    assert "Close the other Treechat window" in str(locked)
    other = classify_open_error(Path("/d/t.duckdb"), OSError("bad things"))
    assert type(other) is StoreCorruptError and "left untouched: bad things" in str(other)


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
def test_the_folder_and_the_file_are_private(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "b"
    make_private_dir(folder)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    folder.chmod(0o755)
    make_private_dir(folder)  # an existing folder is tightened
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    file = folder / "f"
    file.write_text("x")
    file.chmod(0o644)
    make_private_file(file)
    assert stat.S_IMODE(file.stat().st_mode) == 0o600


def test_this_process_knows_which_stores_it_has_open(tmp_path: Path) -> None:
    path = tmp_path / "store.duckdb"
    assert not is_open_here(path)
    mark_open(tmp_path / "." / "store.duckdb")
    assert is_open_here(path)
    mark_closed(path)
    assert not is_open_here(path)
