"""Is the store's file whole? A quick look at open (is the file as long as DuckDB says it is)
and a full one before the first write (every block of every table read back, so DuckDB's own
block checksums are verified). A file that fails is never written to.

DuckDB keeps a checksum per block and verifies it when a block is read, but reads blocks only
when a query needs them: a file truncated or damaged in the middle opens fine and fails later,
possibly in the middle of a write. Hashing every column of every table makes it read them all.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ._header import check_header, classify_open_error

# DuckDB's file starts with one main header and two database headers, one block header size
# each, before the first block (the layout of storage version 64 and later).
_HEADERS_BYTES = 3 * 4096


@dataclass(frozen=True, slots=True)
class TableCheck:
    name: str
    rows: int | None  # None when the table could not be read to the end
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


@dataclass(frozen=True, slots=True)
class IntegrityReport:
    """What a check found. `problem` is one sentence for a person; empty when all is well."""

    path: Path
    problem: str = ""
    tables: tuple[TableCheck, ...] = field(default_factory=tuple)
    complete: bool = False  # every table was read (not only the quick look)

    @property
    def ok(self) -> bool:
        return not self.problem

    @property
    def readable_tables(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tables if t.ok)

    @property
    def damaged_tables(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tables if not t.ok)


def quick_check(con: duckdb.DuckDBPyConnection, path: Path) -> IntegrityReport:
    """Milliseconds: the file is large enough to hold every block DuckDB counts as used (a
    truncated file is not). Free blocks are not counted: DuckDB keeps free blocks at the end
    of the file in its count after a checkpoint shortened the file, so a healthy file can
    be smaller than all its blocks; the full check reads every table for the rest."""
    try:
        row = con.execute(
            "SELECT used_blocks, block_size FROM pragma_database_size() "
            "WHERE database_name = current_database()"
        ).fetchone()
    except duckdb.Error as exc:
        return IntegrityReport(path, problem=f"its size could not be read ({short_error(exc)})")
    if row is None:
        return IntegrityReport(path)
    used_blocks, block_size = int(row[0]), int(row[1])
    expected = _HEADERS_BYTES + used_blocks * block_size
    try:
        actual = os.path.getsize(path)
    except OSError as exc:
        return IntegrityReport(path, problem=f"it cannot be read ({exc.strerror or exc})")
    if actual < expected:
        return IntegrityReport(
            path,
            problem=f"it is truncated: {actual:,} bytes, too few for the {expected:,} its "
            f"used blocks take ({100 * actual / expected:.0f}%)",
        )
    return IntegrityReport(path)


def full_check(con: duckdb.DuckDBPyConnection, path: Path) -> IntegrityReport:
    """Read every block of every table (seconds on a gigabyte store); the quick look first."""
    quick = quick_check(con, path)
    checks: list[TableCheck] = []
    for table in _tables(con):
        checks.append(_check_table(con, table))
    damaged = [c for c in checks if not c.ok]
    problem = quick.problem
    if damaged and not problem:
        first = damaged[0]
        problem = f"table {first.name!r} cannot be read ({first.error})"
    return IntegrityReport(path, problem=problem, tables=tuple(checks), complete=True)


def _tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() "
        "WHERE database_name = current_database() AND NOT temporary ORDER BY table_name"
    ).fetchall()
    return [str(r[0]) for r in rows]


def _check_table(con: duckdb.DuckDBPyConnection, table: str) -> TableCheck:
    try:
        columns = [
            str(r[0])
            for r in con.execute(
                "SELECT column_name FROM duckdb_columns() "
                "WHERE database_name = current_database() AND table_name = ? "
                "ORDER BY column_index",
                [table],
            ).fetchall()
        ]
        # hash() of each column makes DuckDB load (and checksum) every block of it; a
        # count alone is answered from the table's metadata.
        hashed = ", ".join(f'sum(hash("{c}"))' for c in columns)
        row = con.execute(
            f'SELECT count(*){", " + hashed if hashed else ""} FROM "{table}"'
        ).fetchone()
    except duckdb.Error as exc:
        return TableCheck(table, None, short_error(exc))
    return TableCheck(table, int(row[0]) if row else 0)


def short_error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) <= 200 else text[:200] + "…"


def is_damage(exc: BaseException) -> bool:
    """Whether a DuckDB error means the file itself is damaged (not a bad query)."""
    text = str(exc)
    return isinstance(exc, duckdb.Error) and (
        "Corrupt database file" in text
        or "Could not read enough bytes" in text
        or "checksum" in text.lower()
        or "Failed to read" in text
    )


def check_store_file(path: Path) -> IntegrityReport:
    """Read all of the store at `path`, read-only; never changes it."""
    if not path.exists():
        return IntegrityReport(path, problem="there is no store here yet")
    check_header(path)
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise classify_open_error(path, exc) from None
    try:
        return full_check(con, path)
    finally:
        con.close()
