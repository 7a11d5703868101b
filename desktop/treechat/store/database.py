"""Opening the DuckDB file safely and running every query on one dedicated worker thread.

Callers never touch the connection: they hand a function of a `Repository` to the worker
(`submit` -> Future, `call` blocks, `run` awaits), so the GUI thread never waits on DuckDB.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import duckdb

from .repository import Repository
from .schema import MIGRATIONS, SCHEMA_VERSION

T = TypeVar("T")

STORE_FILENAME = "treechat.duckdb"
# DuckDB answers a filter on an indexed column by fetching each matching row through the
# index when up to 2,048 rows match, one row at a time: reading a 2,000-message session that
# way takes tens of milliseconds, a scan of the whole table a few. The index stays for
# look-ups of a single node or session.
INDEX_SCAN_MAX_ROWS = 8


class StoreError(RuntimeError):
    """The store cannot be used; the message says why in words a person understands."""


class StoreTooNewError(StoreError):
    pass


class StoreCorruptError(StoreError):
    pass


class StoreLockedError(StoreError):
    pass


def _classify_open_error(path: Path, exc: Exception) -> StoreError:
    text = str(exc)
    if re.search(r"could not set lock|conflicting lock", text, re.IGNORECASE):
        pid = re.search(r"PID (\d+)", text)
        holder = f"process {pid.group(1)}" if pid else "another process"
        return StoreLockedError(
            f"The conversation store {path} is in use by {holder}. "
            "Close the other Treechat window (or wait for the other command to finish) "
            "and try again."
        )
    return StoreCorruptError(
        f"The conversation store {path} could not be opened and was left untouched: {text}"
    )


class Store:
    """The DuckDB file and the single worker thread that owns its connection."""

    def __init__(self, path: Path, con: duckdb.DuckDBPyConnection) -> None:
        self.path = path
        self._repo = Repository(con)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="treechat-store"
        )
        self._closed = False
        self._lock = threading.Lock()

    # --- opening ---------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path) -> Store:
        """Open (or create) the store at `path`, migrating an older file forward.

        A newer, corrupt or locked file raises a `StoreError` and is never written to.
        """
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = path.exists()
        if existed:
            _check_header(path)
        try:
            con = duckdb.connect(str(path))
        except duckdb.Error as exc:
            raise _classify_open_error(path, exc) from None
        try:
            con.execute(f"SET index_scan_max_count = {INDEX_SCAN_MAX_ROWS}")
            con.execute("SET index_scan_percentage = 0")
            version = _schema_version(con) if existed else 0
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
            _migrate(con, version)
        except StoreError:
            con.close()
            raise
        except duckdb.Error as exc:
            con.close()
            raise StoreCorruptError(
                f"The conversation store {path} is damaged and was left untouched: {exc}"
            ) from None
        return cls(path, con)

    # --- running work on the worker --------------------------------------------------

    def submit(self, fn: Callable[[Repository], T]) -> concurrent.futures.Future[T]:
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed")
            return self._executor.submit(fn, self._repo)

    def call(self, fn: Callable[[Repository], T]) -> T:
        """Run `fn` on the worker and wait for it (CLI, tests, worker-free code)."""
        return self.submit(fn).result()

    async def run(self, fn: Callable[[Repository], T]) -> T:
        """Run `fn` on the worker without blocking the event loop."""
        return await asyncio.wrap_future(self.submit(fn))

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._executor.submit(self._repo.close).result()
        self._executor.shutdown(wait=True)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_DUCKDB_MAGIC = b"DUCK"


def _check_header(path: Path) -> None:
    """Refuse a file that is not a DuckDB database at all before DuckDB touches it."""
    try:
        with path.open("rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise StoreCorruptError(f"The conversation store {path} cannot be read: {exc}") from None
    if len(head) < 12 or head[8:12] != _DUCKDB_MAGIC:  # an empty file is refused too
        raise StoreCorruptError(
            f"The conversation store {path} is not a DuckDB database "
            "(its header is damaged or it is another kind of file). It was left untouched."
        )


def _is_empty(con: duckdb.DuckDBPyConnection) -> bool:
    row = con.execute("SELECT count(*) FROM information_schema.tables").fetchone()
    return row is None or int(row[0]) == 0


def _schema_version(con: duckdb.DuckDBPyConnection) -> int:
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'"
    ).fetchone()
    if not exists or not exists[0]:
        return 0
    row = con.execute("SELECT max(version) FROM schema_version").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


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


def default_store_path(data_dir: Path) -> Path:
    return data_dir / STORE_FILENAME
