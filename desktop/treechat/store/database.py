"""Opening the DuckDB file safely and running every query on one dedicated worker thread.

Callers never touch the connection: they hand a function of a `Repository` to the worker
(`submit` -> Future, `call` blocks, `run` awaits), so the GUI thread never waits on DuckDB.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import duckdb

from . import integrity
from .integrity import IntegrityReport
from .repository import Repository
from .schema import MIGRATIONS, SCHEMA_VERSION

if TYPE_CHECKING:
    from .backup import Backup

log = logging.getLogger(__name__)

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
    """Another process holds the file; `holder` names it ("process 1234")."""

    def __init__(self, message: str, holder: str = "another process") -> None:
        super().__init__(message)
        self.holder = holder


class StoreFullError(StoreError):
    """The disk holding the store has no room left: the write did not happen, nothing that
    was written before it is lost."""


def is_disk_full(exc: BaseException) -> bool:
    return "No space left on device" in str(exc) or "Disk full" in str(exc)


def disk_full_message(path: Path) -> str:
    return (
        f"The disk holding the conversation store {path} is full (No space left on device): "
        "nothing more could be written to it. Free some space and try again."
    )


class StoreDamagedError(StoreCorruptError):
    """The file failed its integrity check: it is open read-only and is never written."""


PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def make_private_dir(folder: Path) -> None:
    """Create `folder` (and its parents) readable by this user only; tighten it if it exists.
    On Windows the user's profile already keeps other users out and chmod means little."""
    folder.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    if os.name != "nt":
        with contextlib.suppress(OSError):
            os.chmod(folder, PRIVATE_DIR_MODE)


def keep_new_files_private() -> None:
    """Files this process creates from now on are this user's only. DuckDB creates the
    write-ahead log (`.wal`) itself, again after every checkpoint, with the process's umask;
    there is no mode to hand it, so the umask is what keeps it private."""
    if os.name != "nt":
        os.umask(os.umask(0o077) | 0o077)


def make_private_file(path: Path) -> None:
    if os.name != "nt":
        with contextlib.suppress(OSError):
            os.chmod(path, PRIVATE_FILE_MODE)


def damaged_message(path: Path, problem: str) -> str:
    """What the user reads when the store is damaged: what happened, that nothing is written,
    and the two ways out."""
    return (
        f"The conversation store {path} is damaged: {problem}. Treechat will not write to it; "
        "what can still be read is shown read-only. To recover, restore a backup "
        "(`treechat backup list`, then `treechat backup restore NAME`; in the window, "
        "Help → Restore a backup…), or export the chats that can still be read "
        "(`treechat export SESSION -o FILE`)."
    )


# Statements that only read (or end a transaction): they run on a store whose check has not
# finished, or that failed it. Anything else is a write and waits for the check.
_READ_ONLY_STATEMENT = re.compile(
    r"^\s*(SELECT|WITH|FROM|VALUES|PRAGMA|SHOW|DESCRIBE|EXPLAIN|SUMMARIZE|SET|RESET|"
    r"COMMIT|ROLLBACK|ABORT|END|CALL)\b",
    re.IGNORECASE,
)


# Stores open in this process: DuckDB shares one instance per file within a process, so its
# file lock does not keep a restore from swapping a file this process still has open.
_open_here: set[Path] = set()
_open_here_lock = threading.Lock()


def is_open_here(path: Path) -> bool:
    with _open_here_lock:
        return Path(path).resolve() in _open_here


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

    def execute(self, query: object, *args: Any, **kwargs: Any) -> duckdb.DuckDBPyConnection:
        self._gate.admit(query)
        return self._con.execute(query, *args, **kwargs)  # type: ignore[arg-type]

    def executemany(self, query: object, *args: Any, **kwargs: Any) -> duckdb.DuckDBPyConnection:
        self._gate.admit(query)
        return self._con.executemany(query, *args, **kwargs)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)


def _classify_open_error(path: Path, exc: Exception) -> StoreError:
    text = str(exc)
    if re.search(r"could not set lock|conflicting lock", text, re.IGNORECASE):
        pid = re.search(r"PID (\d+)", text)
        holder = f"process {pid.group(1)}" if pid else "another process"
        return StoreLockedError(
            f"The conversation store {path} is in use by {holder}. "
            "Close the other Treechat window (or wait for the other command to finish) "
            "and try again.",
            holder,
        )
    return StoreCorruptError(
        f"The conversation store {path} could not be opened and was left untouched: {text}"
    )


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
        self._closed = False
        self._lock = threading.Lock()
        # Set while the file is open; cleared while it is released (`release`): work handed
        # in meanwhile waits on the worker until `reopen` has the file again.
        self._available = threading.Event()
        self._checker: threading.Thread | None = None
        self._check_cursor: duckdb.DuckDBPyConnection | None = None
        self._check_stopped = False
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
        self._identity = _file_identity(path)
        with _open_here_lock:
            _open_here.add(path.resolve())
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
    def open(cls, path: Path) -> Store:
        """Open (or create) the store at `path`, migrating an older file forward (after a
        backup of it).

        A newer, corrupt or locked file raises a `StoreError` and is never written to. A file
        that fails the integrity check (truncated, damaged blocks) opens read-only, with
        `damage` saying why; the check of the whole file runs beside the first reads, and
        writes wait for it.
        """
        path = Path(path)
        con, damage, verified = _connect(path)
        return cls(path, con, damage=damage, verified=verified)

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
        self._available.clear()
        repo.close()
        with _open_here_lock:
            _open_here.discard(self.path.resolve())

    def reopen(self) -> None:
        """Open the file again after `release`, with every check of `open`: a file replaced
        meanwhile (a restored backup) is read as it is now, migrated if it is older. Raises a
        `StoreError` (`StoreLockedError` while another process holds it) and stays released.
        The same file as before keeps its integrity verdict; another one is checked again."""
        if not self.released:
            return
        same_file = self._identity is not None and self._identity == _file_identity(self.path)
        # a check cut short by the release learnt nothing: the file is checked again
        earlier = self._gate.report if same_file and not self._gate.interrupted else None
        con, damage, verified = _connect(self.path)
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
            self._executor.submit(self._repo.close).result()
        self._available.set()  # work that waits for a released file ends as "closed"
        self._executor.shutdown(wait=True)
        with _open_here_lock:
            _open_here.discard(self.path.resolve())

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
        from .backup import BackupError, create_backup

        report = self.integrity()
        if report is not None and not report.ok:
            raise BackupError(
                "the store is damaged, so a backup of it would be too; restore an older backup "
                "or export the chats that can be read"
            )
        cursor = self.submit(lambda _r: self._con.cursor()).result()
        try:
            return create_backup(cursor, self.path, reason=reason)
        finally:
            with contextlib.suppress(duckdb.Error):
                cursor.close()

    async def abackup(self, reason: str = "manual") -> Backup:
        return await asyncio.to_thread(self.backup, reason)

    def backup_if_due(self, reason: str = "daily") -> Backup | None:
        """A backup when the newest one is a day old or there is none (at start or quit)."""
        from .backup import needs_backup

        if self.damage is not None or not needs_backup(self.path):
            return None
        return self.backup(reason)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _file_identity(path: Path) -> tuple[int, int] | None:
    """The file's device and inode: a restored backup put in its place is another file."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _connect(
    path: Path,
) -> tuple[duckdb.DuckDBPyConnection, IntegrityReport | None, IntegrityReport | None]:
    """Open the file for the worker: (connection, damage, verified). A newer, corrupt or
    locked file raises a `StoreError`; a damaged one opens read-only with its damage."""
    path = Path(path)
    make_private_dir(path.parent)
    keep_new_files_private()
    existed = path.exists()
    if existed:
        _check_header(path)
        quick = _probe(path)
        if not quick.ok:
            log.error("store %s failed its integrity check: %s", path, quick.problem)
            return _open_damaged(path, quick)
    try:
        con = duckdb.connect(str(path))
    except duckdb.Error as exc:
        raise _classify_open_error(path, exc) from None
    make_private_file(path)
    verified: IntegrityReport | None = None
    try:
        _tune(con)
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
        if existed and version < SCHEMA_VERSION:
            # A migration rewrites the file: check all of it, and keep a copy, first.
            verified = integrity.full_check(con, path)
            if not verified.ok:
                con.close()
                log.error("store %s failed its integrity check: %s", path, verified.problem)
                return _open_damaged(path, verified)
            from .backup import create_backup

            create_backup(con, path, reason=f"before-migration-{version}-to-{SCHEMA_VERSION}")
        _migrate(con, version)
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
        if isinstance(_classify_open_error(path, exc), StoreLockedError):
            raise _classify_open_error(path, exc) from None
        raise StoreDamagedError(damaged_message(path, report.problem)) from None
    _tune(con)
    return con, report, None


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


def _tune(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"SET index_scan_max_count = {INDEX_SCAN_MAX_ROWS}")
    con.execute("SET index_scan_percentage = 0")


def _probe(path: Path) -> IntegrityReport:
    """Look at the file read-only before opening it for writing: whether it holds all its
    blocks, and whether a write-ahead log beside it is one DuckDB can replay. A log it cannot
    read would be dropped by the next checkpoint: it is moved aside (and logged) instead."""
    wal = path.with_name(path.name + ".wal")
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        raise _classify_open_error(path, exc) from None
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
