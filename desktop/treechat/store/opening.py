"""Opening the store's file for the worker: refusing a file that is not ours, newer, locked or
damaged before writing to it, setting aside a write-ahead log DuckDB cannot replay, and
migrating an older file forward after a backup of it."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path

import duckdb

from . import integrity
from ._header import (
    check_header,
    classify_open_error,
    keep_new_files_private,
    make_private_dir,
    make_private_file,
    schema_version,
)
from .backup import create_backup
from .integrity import IntegrityReport
from .schema import MIGRATIONS, SCHEMA_VERSION
from .store_errors import (
    StoreCorruptError,
    StoreDamagedError,
    StoreError,
    StoreLockedError,
    StoreTooNewError,
    damaged_message,
)

log = logging.getLogger(__name__)

# DuckDB answers a filter on an indexed column by fetching each matching row through the
# index when up to 2,048 rows match, one row at a time: reading a 2,000-message session that
# way takes tens of milliseconds, a scan of the whole table a few. The index stays for
# look-ups of a single node or session.
INDEX_SCAN_MAX_ROWS = 8


def file_identity(path: Path) -> tuple[int, int] | None:
    """The file's device and inode: a restored backup put in its place is another file."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


COMMAND_MEMORY_LIMIT = "96MB"
"""DuckDB's memory in a `treechat` command. DuckDB keeps every block it reads cached up to
its limit, 80% of the machine's memory by default: the integrity check reads the whole
store, so a `send` on a 330 MB store peaked at 506 MB. Held to this it peaks at 296 MB
(litellm included); reads beyond it come from the file again, and sorts and joins spill to a
temporary file. A backup is written without the limit (`Store.backup`): DuckDB holds the
copy in memory until it commits, and one that runs out fails the database."""


def connect(
    path: Path, memory_limit: str | None = None,
) -> tuple[duckdb.DuckDBPyConnection, IntegrityReport | None, IntegrityReport | None]:
    """Open the file for the worker: (connection, damage, verified). A newer, corrupt or
    locked file raises a `StoreError`; a damaged one opens read-only with its damage.
    `memory_limit` (a DuckDB size, "128MB") holds DuckDB's memory to it; None keeps
    DuckDB's own (80% of the machine's memory)."""
    path = Path(path)
    make_private_dir(path.parent)
    keep_new_files_private()
    existed = path.exists()
    if existed:
        check_header(path)
        quick = _probe(path)
        if not quick.ok:
            log.error("store %s failed its integrity check: %s", path, quick.problem)
            return _open_damaged(path, quick)
    try:
        con = duckdb.connect(str(path))
    except duckdb.Error as exc:
        raise classify_open_error(path, exc) from None
    make_private_file(path)
    verified: IntegrityReport | None = None
    try:
        _tune(con)
        version = schema_version(con) if existed else 0
        if version > SCHEMA_VERSION:
            raise StoreTooNewError(
                f"The conversation store {path} was written by a newer Treechat "
                f"(schema {version}; this build knows {SCHEMA_VERSION}). "
                "It was not changed. Update Treechat to open it."
            )
        if existed and version == 0 and not _is_empty(con):
            raise StoreCorruptError(
                f"The file {path} is a DuckDB database but not a Treechat store "
                "(no schema_version table). It was left untouched."
            )
        if existed and version < SCHEMA_VERSION:
            # A migration rewrites the file: check all of it, and keep a copy, first.
            verified = integrity.full_check(con, path)
            if not verified.ok:
                con.close()
                log.error("store %s failed its integrity check: %s", path, verified.problem)
                return _open_damaged(path, verified)
            create_backup(con, path, reason=f"before-migration-{version}-to-{SCHEMA_VERSION}")
        _migrate(con, version)
        if memory_limit is not None:  # after a migration's check and backup, as before
            hold_memory(con, memory_limit)
        if not existed:
            verified = IntegrityReport(path, complete=True)
    except StoreError:
        con.close()
        raise
    except duckdb.Error as exc:
        con.close()
        raise StoreCorruptError(
            f"The conversation store {path} is damaged and was left untouched: {exc}"
        ) from None
    return con, None, verified


def _open_damaged(
    path: Path, report: IntegrityReport
) -> tuple[duckdb.DuckDBPyConnection, IntegrityReport | None, IntegrityReport | None]:
    """The damaged file, read-only at DuckDB's level too: nothing can write to it."""
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        if isinstance(classify_open_error(path, exc), StoreLockedError):
            raise classify_open_error(path, exc) from None
        raise StoreDamagedError(damaged_message(path, report.problem)) from None
    _tune(con)
    return con, report, None


def _tune(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"SET index_scan_max_count = {INDEX_SCAN_MAX_ROWS}")
    con.execute("SET index_scan_percentage = 0")


def hold_memory(con: duckdb.DuckDBPyConnection, memory_limit: str | None) -> None:
    """Hold DuckDB's memory to `memory_limit` (a size of ours, "128MB"); None gives it its
    own default back."""
    if memory_limit is None:
        con.execute("RESET memory_limit")
    else:  # SET takes no parameters; the size is one of ours, never a user's text
        con.execute(f"SET memory_limit = '{memory_limit}'")


def _probe(path: Path) -> IntegrityReport:
    """Look at the file read-only before opening it for writing: whether it holds all its
    blocks, and whether a write-ahead log beside it is one DuckDB can replay. A log it cannot
    read would be dropped by the next checkpoint: it is moved aside (and logged) instead."""
    wal = path.with_name(path.name + ".wal")
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise classify_open_error(path, exc) from None
    try:
        report = integrity.quick_check(con, path)
        wal_size = os.path.getsize(wal) if wal.exists() else 0
        replayed = ""
        if wal_size:
            row = con.execute(
                "SELECT wal_size FROM pragma_database_size() "
                "WHERE database_name = current_database()"
            ).fetchone()
            replayed = str(row[0]) if row else ""
    except duckdb.Error as exc:
        report = IntegrityReport(path, problem=f"it cannot be read ({integrity.short_error(exc)})")
        wal_size, replayed = 0, ""
    finally:
        con.close()
    if wal_size and replayed.startswith("0 "):
        set_aside_unreadable_wal(wal)
    return report


def set_aside_unreadable_wal(wal: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%S")
    target = wal.with_name(f"{wal.name}.unreadable-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = wal.with_name(f"{wal.name}.unreadable-{stamp}-{n}")
    os.replace(wal, target)
    log.warning(
        "the write-ahead log %s could not be read by DuckDB (%d bytes); it was moved to %s "
        "and the store opened without it",
        wal,
        target.stat().st_size,
        target,
    )
    return target


def _is_empty(con: duckdb.DuckDBPyConnection) -> bool:
    row = con.execute("SELECT count(*) FROM information_schema.tables").fetchone()
    return row is None or int(row[0]) == 0


def _migrate(con: duckdb.DuckDBPyConnection, current: int) -> None:
    pending = [m for m in MIGRATIONS if m.version > current]
    if not pending:
        return
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(
            "CREATE TABLE IF NOT EXISTS schema_version "
            "(version INTEGER NOT NULL, applied_at DOUBLE)"
        )
        for migration in pending:
            for statement in migration.statements:
                con.execute(statement)
            con.execute("INSERT INTO schema_version VALUES (?, epoch(now()))", [migration.version])
        con.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.Error):
            con.execute("ROLLBACK")
        raise
    con.execute("CHECKPOINT")
