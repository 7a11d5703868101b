"""Is the store's file whole? A quick look at open (is the file as long as DuckDB says it is)
and a full one before the first write (every block of every table read back, and every index
walked, so DuckDB's own block checksums are verified). A file that fails is never written to.

DuckDB keeps a checksum per block and verifies it when a block is read, but reads blocks only
when a query needs them: a file truncated or damaged in the middle opens fine and fails later,
possibly in the middle of a write. Hashing every column of every table makes it read them all.
A write also reads the indexes of what it writes (a primary key is looked up before a row goes
in), which no table read touches: keys looked up through each index make it read those too.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from ._header import check_header, classify_open_error

# DuckDB's file starts with one main header and two database headers, one block header size
# each, before the first block (the layout of storage version 64 and later).
_HEADERS_BYTES = 3 * 4096

INDEX_LOOKUPS = 1024
"""Keys looked up through each index: every key of a smaller table, else keys spread evenly
over the table's rows. An index's blocks fill in the order its rows went in, so keys taken
at even steps of that order reach nearly all of its blocks (a 1.2 M-row table's key index
spans about 300; a lookup costs about as much as reading a thousand rows)."""

_COLUMN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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
    indexes: tuple[TableCheck, ...] = field(default_factory=tuple)  # named `table(columns)`

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
    readable = {c.name for c in checks if c.ok}
    indexes = [
        _check_index(con, table, columns)
        for table, columns in _indexed_columns(con)
        if table in readable
    ]
    damaged = [c for c in checks if not c.ok]
    broken = [c for c in indexes if not c.ok]
    problem = quick.problem
    if damaged and not problem:
        first = damaged[0]
        problem = f"table {first.name!r} cannot be read ({first.error})"
    elif broken and not problem:
        problem = f"the index on {broken[0].name} cannot be read ({broken[0].error})"
    return IntegrityReport(
        path, problem=problem, tables=tuple(checks), complete=True, indexes=tuple(indexes)
    )


def _tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "SELECT table_name FROM duckdb_tables() "
        "WHERE database_name = current_database() AND NOT temporary ORDER BY table_name"
    ).fetchall()
    return [str(r[0]) for r in rows]


def _indexed_columns(con: duckdb.DuckDBPyConnection) -> list[tuple[str, tuple[str, ...]]]:
    """Each index's table and columns: primary keys, unique constraints and CREATE INDEX
    over plain columns (an index over an expression is not looked up)."""
    found: list[tuple[str, tuple[str, ...]]] = []
    for table, columns in con.execute(
        "SELECT table_name, constraint_column_names FROM duckdb_constraints() "
        "WHERE database_name = current_database() "
        "AND constraint_type IN ('PRIMARY KEY', 'UNIQUE') ORDER BY table_name, constraint_index"
    ).fetchall():
        found.append((str(table), tuple(str(c) for c in columns)))
    for table, expressions in con.execute(
        "SELECT table_name, expressions FROM duckdb_indexes() "
        "WHERE database_name = current_database() ORDER BY table_name, index_name"
    ).fetchall():
        names = tuple(e.strip().strip('"') for e in str(expressions).strip("[]").split(","))
        if names and all(_COLUMN_NAME.fullmatch(n) for n in names):
            found.append((str(table), names))
    return list(dict.fromkeys(found))


def _check_index(
    con: duckdb.DuckDBPyConnection, table: str, columns: tuple[str, ...]
) -> TableCheck:
    """Look keys up through the index on `table(columns)`, so DuckDB reads its blocks."""
    name = f"{table}({', '.join(columns)})"
    chosen = ", ".join(f'"{c}"' for c in columns)
    try:
        row = con.execute(f'SELECT count(*) FROM "{table}"').fetchone()
        rows = int(row[0]) if row else 0
        step = max(1, rows // INDEX_LOOKUPS)
        keys = {
            tuple(k)
            for k in con.execute(
                f'SELECT {chosen} FROM "{table}" WHERE rowid % {step} = 0 OR rowid = ?',
                [rows - 1],
            ).fetchall()
            if None not in k
        }
        matched = " AND ".join(f'"{c}" = ?' for c in columns)
        if keys:
            # an equality on every column of the index is answered by an index scan
            lookup = f'SELECT rowid FROM "{table}" WHERE {matched}'
            con.executemany(lookup, [list(k) for k in keys])
    except duckdb.Error as exc:
        return TableCheck(name, None, short_error(exc))
    return TableCheck(name, len(keys))


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


def check_store_file(path: Path, memory_limit: str | None = None) -> IntegrityReport:
    """Read all of the store at `path`, read-only; never changes it. `memory_limit` (a
    DuckDB size) holds what DuckDB caches of it meanwhile."""
    if not path.exists():
        return IntegrityReport(path, problem="there is no store here yet")
    check_header(path)
    config: dict[str, str | bool | int | float | list[str]] = (
        {} if memory_limit is None else {"memory_limit": memory_limit})
    try:
        con = duckdb.connect(str(path), read_only=True, config=config)
    except duckdb.Error as exc:
        raise classify_open_error(path, exc) from None
    try:
        return full_check(con, path)
    finally:
        con.close()
