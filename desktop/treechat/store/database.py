"""Opening the DuckDB file safely and running every query on one dedicated worker thread.

Callers never touch the connection: they hand a function of a `Repository` to the worker
(`submit` -> Future, `call` blocks, `run` awaits), so the GUI thread never waits on DuckDB.
The store's errors (`store_errors`) and the file helpers callers use are exported from here too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import duckdb

from ..core.unicode_text import storable_values
from . import integrity
from ._header import is_open_here, make_private_dir, make_private_file, mark_closed, mark_open
from .backup import Backup, BackupError, BackupStop, create_backup, needs_backup
from .integrity import IntegrityReport
from .opening import connect, file_identity, hold_memory
from .repository import Repository
from .store_errors import (
    StoreCorruptError,
    StoreDamagedError,
    StoreError,
    StoreFullError,
    StoreLockedError,
    StoreTooNewError,
    damaged_message,
    disk_full_message,
    is_disk_full,
)

__all__ = [
    "STORE_FILENAME",
    "Store",
    "StoreCorruptError",
    "StoreDamagedError",
    "StoreError",
    "StoreFullError",
    "StoreLockedError",
    "StoreTooNewError",
    "damaged_message",
    "default_store_path",
    "is_open_here",
    "make_private_dir",
    "make_private_file",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

STORE_FILENAME = "treechat.duckdb"


# Statements that only read (or end a transaction): they run on a store whose check has not
# finished, or that failed it. Anything else is a write and waits for the check.
_READ_ONLY_STATEMENT = re.compile(
    r"^\s*(SELECT|WITH|FROM|VALUES|PRAGMA|SHOW|DESCRIBE|EXPLAIN|SUMMARIZE|SET|RESET|"
    r"COMMIT|ROLLBACK|ABORT|END|CALL)\b",
    re.IGNORECASE,
)


class _WriteGate:
    """Holds every write until the integrity check has passed; refuses them if it failed.

    The check reads the whole file on its own thread while the worker answers reads, so
    opening a large store is not slowed; the first write of a session waits for it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._done = threading.Event()
        self.report: IntegrityReport | None = None
        self.interrupted = False  # settled by a close or release before the check finished
        self.writes = 0  # statements that may have changed the file

    def settle(self, report: IntegrityReport) -> None:
        """Record what was found; the first damage found stays the answer."""
        if self.report is None or self.report.ok:
            self.report = report
        self._done.set()

    @property
    def settled(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> IntegrityReport | None:
        self._done.wait(timeout)
        return self.report

    def admit(self, statement: object) -> None:
        if isinstance(statement, str) and _READ_ONLY_STATEMENT.match(statement):
            return
        self.writes += 1
        report = self.wait()
        if report is not None and not report.ok:
            raise StoreDamagedError(damaged_message(self.path, report.problem))


class _GatedConnection:
    """The worker's connection with writes passed through the gate first. Everything else
    (fetching, closing) is the DuckDB connection's own."""

    def __init__(self, con: duckdb.DuckDBPyConnection, gate: _WriteGate) -> None:
        self._con = con
        self._gate = gate

    def execute(self, query: duckdb.Statement | str,
                parameters: object = None) -> duckdb.DuckDBPyConnection:
        self._gate.admit(query)
        try:
            return self._con.execute(query, parameters)
        except duckdb.InvalidInputException as exc:
            # DuckDB refuses half of a surrogate pair while it converts the parameters,
            # before the statement runs: cleaned, the same statement goes through. (Cleaned
            # only then: a bulk insert's millions of values are not walked in Python first.)
            if "surrogate" not in str(exc):
                raise
            return self._con.execute(query, storable_values(parameters))

    def executemany(self, query: duckdb.Statement | str,
                    parameters: object = None) -> duckdb.DuckDBPyConnection:
        self._gate.admit(query)
        # cleaned first: a row refused halfway would leave the rows before it written
        return self._con.executemany(query, storable_values(parameters))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


class Store:
    """The DuckDB file and the single worker thread that owns its connection."""

    def __init__(
        self,
        path: Path,
        con: duckdb.DuckDBPyConnection,
        *,
        damage: IntegrityReport | None = None,
        verified: IntegrityReport | None = None,
    ) -> None:
        self.path = path
        self._memory_limit: str | None = None  # kept for `reopen`
        self._closed = False
        self._lock = threading.Lock()
        # Set while the file is open; cleared while it is released (`release`): work handed
        # in meanwhile waits on the worker until `reopen` has the file again.
        self._available = threading.Event()
        self._checker: threading.Thread | None = None
        self._check_cursor: duckdb.DuckDBPyConnection | None = None
        self._check_stopped = False
        self._backups: set[BackupStop] = set()  # backups reading the open file (on the worker)
        self._identity: tuple[int, int] | None = None
        self._install(con, damage, verified)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="treechat-store"
        )

    def _install(
        self,
        con: duckdb.DuckDBPyConnection,
        damage: IntegrityReport | None,
        verified: IntegrityReport | None,
    ) -> None:
        """Take `con` as the worker's connection, behind a write gate of its own."""
        path = self.path
        previous = getattr(self, "_gate", None)
        self._writes_before = getattr(self, "_writes_before", 0) + (
            previous.writes if previous is not None else 0)
        gate = _WriteGate(path)
        if damage is not None:
            gate.settle(damage)
        elif verified is not None:
            gate.settle(verified)
        try:
            repo = Repository(cast(duckdb.DuckDBPyConnection, _GatedConnection(con, gate)))
        except duckdb.Error as exc:
            con.close()
            if integrity.is_damage(exc):
                raise StoreDamagedError(
                    damaged_message(path, f"its messages cannot be read ({exc})")
                ) from None
            raise
        self._con, self._gate, self._repo = con, gate, repo
        self.read_only = damage is not None
        self._identity = file_identity(path)
        mark_open(path)
        self._check_stopped = False
        self._available.set()
        if not gate.settled:
            self._start_check()

    @property
    def writes(self) -> int:
        """How many writing statements this store has run since it was opened: a change to
        look for (the backup schedule's "has anything changed")."""
        return self._writes_before + self._gate.writes

    # --- integrity ---------------------------------------------------------------------

    @property
    def damage(self) -> IntegrityReport | None:
        """The failed check, once known; None while it runs or when the file is whole."""
        report = self._gate.report
        return report if report is not None and not report.ok else None

    def integrity(self, timeout: float | None = None) -> IntegrityReport | None:
        """Wait for the check of this session (None if it has not finished in `timeout`)."""
        return self._gate.wait(timeout)

    def _start_check(self) -> None:
        self._check_cursor = self._con.cursor()
        cursor, gate = self._check_cursor, self._gate

        def run() -> None:
            try:
                report = integrity.full_check(cursor, self.path)
            except Exception as exc:  # DuckDB itself failed
                report = IntegrityReport(self.path, problem=f"it could not be checked ({exc})")
            if self._check_stopped:  # interrupted (close, release): nothing learnt, none waits
                gate.interrupted = True
                gate.settle(IntegrityReport(self.path))
                return
            if not report.ok:
                log.error("store %s failed its integrity check: %s", self.path, report.problem)
            gate.settle(report)

        self._checker = threading.Thread(target=run, name="treechat-store-check", daemon=True)
        self._checker.start()

    # --- opening ---------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path, *, memory_limit: str | None = None) -> Store:
        """Open (or create) the store at `path`, migrating an older file forward (after a
        backup of it).

        A newer, corrupt or locked file raises a `StoreError` and is never written to. A file
        that fails the integrity check (truncated, damaged blocks) opens read-only, with
        `damage` saying why; the check of the whole file runs beside the first reads, and
        writes wait for it.
        """
        path = Path(path)
        con, damage, verified = connect(path, memory_limit)
        store = cls(path, con, damage=damage, verified=verified)
        store._memory_limit = memory_limit
        return store

    # --- letting go of the file for a while --------------------------------------------

    @property
    def released(self) -> bool:
        """Whether the file is let go of (`release`) and not opened again yet."""
        return not self._available.is_set() and not self._closed

    def release(self) -> None:
        """Close the DuckDB file, and with it its lock, keeping this object: another process
        (a `treechat` command, the window) can open the store meanwhile. Work queued before
        runs first; work handed in afterwards waits on the worker until `reopen`. Blocks."""
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed")
        self.submit(self._let_go).result()

    def _let_go(self, repo: Repository) -> None:
        self._stop_check()
        self._stop_backups()
        self._available.clear()
        repo.close()
        mark_closed(self.path)

    def reopen(self) -> None:
        """Open the file again after `release`, with every check of `open`: a file replaced
        meanwhile (a restored backup) is read as it is now, migrated if it is older. Raises a
        `StoreError` (`StoreLockedError` while another process holds it) and stays released.
        The same file as before keeps its integrity verdict; another one is checked again."""
        if not self.released:
            return
        same_file = self._identity is not None and self._identity == file_identity(self.path)
        # a check cut short by the release learnt nothing: the file is checked again
        earlier = self._gate.report if same_file and not self._gate.interrupted else None
        con, damage, verified = connect(self.path, self._memory_limit)
        if damage is None and verified is None and earlier is not None:
            damage, verified = (None, earlier) if earlier.ok else (earlier, None)
        try:
            self._install(con, damage, verified)
        except BaseException:
            with contextlib.suppress(duckdb.Error):
                con.close()
            raise

    async def arelease(self) -> None:
        await asyncio.to_thread(self.release)

    async def areopen(self) -> None:
        await asyncio.to_thread(self.reopen)

    # --- running work on the worker --------------------------------------------------

    def submit(self, fn: Callable[[Repository], T]) -> concurrent.futures.Future[T]:
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed")
            return self._executor.submit(self._guarded, fn)

    def _guarded(self, fn: Callable[[Repository], T]) -> T:
        """Run `fn`; a read that runs into a damaged block becomes a `StoreDamagedError` that
        says what to do, not a DuckDB traceback. While the file is released, waits for it."""
        self._available.wait()
        if self._closed:
            raise StoreError("the store is closed")
        try:
            return fn(self._repo)
        except duckdb.Error as exc:
            if is_disk_full(exc):
                raise StoreFullError(disk_full_message(self.path)) from None
            if not integrity.is_damage(exc):
                raise
            problem = f"part of it cannot be read ({integrity.short_error(exc)})"
            if self._gate.report is None or self._gate.report.ok:
                self._gate.settle(IntegrityReport(self.path, problem=problem))
                log.error("store %s is damaged: %s", self.path, problem)
            raise StoreDamagedError(damaged_message(self.path, problem)) from None

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
        if self._available.is_set():
            self._stop_check()
            self._executor.submit(self._close_file).result()
        self._available.set()  # work that waits for a released file ends as "closed"
        self._executor.shutdown(wait=True)
        mark_closed(self.path)

    def _close_file(self) -> None:
        """On the worker: a backup still being written is stopped (its partial file removed;
        it is made again at the next start), then the file is closed."""
        self._stop_backups()
        self._repo.close()

    def _stop_backups(self) -> None:
        """On the worker, so no backup takes a cursor on this connection meanwhile."""
        with self._lock:
            running = tuple(self._backups)
        for stop in running:
            stop.stop()

    def _stop_check(self) -> None:
        """End the integrity check's reading (interrupted if it still runs) and its cursor."""
        self._check_stopped = True
        checker, cursor = self._checker, self._check_cursor
        if checker is not None and cursor is not None:
            if checker.is_alive():
                with contextlib.suppress(duckdb.Error):
                    cursor.interrupt()
            checker.join()
            with contextlib.suppress(duckdb.Error):
                cursor.close()
        self._checker = self._check_cursor = None

    # --- backups -----------------------------------------------------------------------

    def backup(self, reason: str = "manual") -> Backup:
        """Write a backup of this store now (blocks; `abackup` from a coroutine). It reads a
        snapshot on a cursor of its own, so the worker keeps answering meanwhile."""
        report = self.integrity()
        if report is not None and not report.ok:
            raise BackupError(
                "the store is damaged, so a backup of it would be too; restore an older backup "
                "or export the chats that can be read"
            )
        stop = BackupStop()

        def begin(_repo: Repository) -> duckdb.DuckDBPyConnection:
            # taken on the worker: closing or letting go of the file (also on the worker)
            # finds every backup reading it, and stops it first
            with self._lock:
                self._backups.add(stop)
            return self._con.cursor()

        try:
            cursor = self.submit(begin).result()
            try:
                if self._memory_limit is not None:  # see COMMAND_MEMORY_LIMIT
                    hold_memory(cursor, None)
                return create_backup(cursor, self.path, reason=reason, stop=stop)
            finally:
                with contextlib.suppress(duckdb.Error):
                    if self._memory_limit is not None:
                        hold_memory(cursor, self._memory_limit)
                    cursor.close()
        finally:
            with self._lock:
                self._backups.discard(stop)
            stop.finished.set()

    async def abackup(self, reason: str = "manual") -> Backup:
        return await asyncio.to_thread(self.backup, reason)

    def backup_if_due(self, reason: str = "daily") -> Backup | None:
        """A backup when the newest one is a day old or there is none (at start or quit)."""
        if self.damage is not None or not needs_backup(self.path):
            return None
        return self.backup(reason)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def default_store_path(data_dir: Path) -> Path:
    return data_dir / STORE_FILENAME
