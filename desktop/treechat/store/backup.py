"""Rolling backups of the store, written by DuckDB itself, and restoring one safely.

A backup is a complete DuckDB file made with `ATTACH` + `COPY FROM DATABASE` inside one
transaction: a consistent snapshot of the live store (never a byte copy of a file that may be
mid-write), which opens as it is. Restoring one is a file swap, done only while no process
holds the store, with the replaced file kept beside it.

Kept: the newest `KEEP_LAST`, plus the newest of each week for `KEEP_WEEKS_DAYS` days.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import duckdb

from . import integrity
from ._header import (
    check_header,
    classify_open_error,
    is_open_here,
    make_private_dir,
    make_private_file,
    schema_version,
)
from .schema import SCHEMA_VERSION
from .store_errors import StoreError, StoreLockedError

log = logging.getLogger(__name__)

BACKUP_DIRNAME = "backups"
BACKUP_SUFFIX = ".duckdb"
KEEP_LAST = 3
KEEP_WEEKS_DAYS = 31
DAILY_S = 24 * 3600.0
_ALIAS = "treechat_backup_target"
_NAME = re.compile(r"^treechat-(\d{8}T\d{6})(?:-(\d+))?-([a-z0-9-]+)\.duckdb$")
_STAMP = "%Y%m%dT%H%M%S"


class BackupError(RuntimeError):
    """A backup could not be made or restored; the message says why."""


class BackupStopped(BackupError):
    """A backup was stopped half-way (its store is closing); nothing of it is kept."""


class BackupStop:
    """Lets another thread stop a backup being written (the store closing or letting go of
    its file): the statement running is interrupted and the next one is not begun."""

    POLL_S = 0.05  # an interrupt that lands between two statements is repeated this often

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requested = False
        self._cursor: duckdb.DuckDBPyConnection | None = None
        self.finished = threading.Event()  # set by whoever runs the backup, when it ends

    @property
    def requested(self) -> bool:
        return self._requested

    def stop(self) -> None:
        """Stop the backup and wait until it has ended (its partial file removed)."""
        while True:
            with self._lock:
                self._requested = True
                cursor = self._cursor
            if cursor is not None:
                with contextlib.suppress(duckdb.Error):
                    cursor.interrupt()
            if self.finished.wait(self.POLL_S):
                return

    def execute(self, cursor: duckdb.DuckDBPyConnection, statement: str) -> None:
        """Run one statement of the copy, unless the backup is being stopped."""
        with self._lock:
            if self._requested:
                raise BackupStopped("the backup was stopped: the store is closing")
            self._cursor = cursor
        try:
            cursor.execute(statement)
        finally:
            with self._lock:
                self._cursor = None


@dataclass(frozen=True, slots=True)
class Backup:
    path: Path
    created_at: float
    reason: str
    size: int

    @property
    def name(self) -> str:
        return self.path.name


def backups_dir(store_path: Path) -> Path:
    return store_path.parent / BACKUP_DIRNAME


def list_backups(store_path: Path) -> tuple[Backup, ...]:
    """The backups beside the store, newest first."""
    folder = backups_dir(store_path)
    if not folder.is_dir():
        return ()
    found: list[tuple[float, int, Backup]] = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match is None or not entry.is_file():
            continue
        stamp = datetime.strptime(match.group(1), _STAMP).timestamp()
        order = int(match.group(2) or 1)  # the second and later backups within one second
        found.append((stamp, order, Backup(entry, stamp, match.group(3), entry.stat().st_size)))
    found.sort(key=lambda item: (item[0], item[1]), reverse=True)
    return tuple(b for _, _, b in found)


def find_backup(store_path: Path, name: str) -> Backup:
    """A backup by file name (or a unique prefix of it, or `latest`)."""
    name = name.strip()
    if not name:
        raise BackupError("give the name of a backup (or `latest`); see `treechat backup list`")
    backups = list_backups(store_path)
    if not backups:
        raise BackupError(f"there are no backups in {backups_dir(store_path)}")
    if name == "latest":
        return backups[0]
    exact = [b for b in backups if b.name == name]
    if exact:
        return exact[0]
    prefixed = [b for b in backups if b.name.startswith(name)]
    if len(prefixed) == 1:
        return prefixed[0]
    if prefixed:
        raise BackupError(f"{name!r} matches {len(prefixed)} backups; give more of the name")
    raise BackupError(f"no backup named {name!r} (see `treechat backup list`)")


def _slug(reason: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", reason.lower()).strip("-") or "manual"


def create_backup(
    con: duckdb.DuckDBPyConnection,
    store_path: Path,
    *,
    reason: str = "manual",
    now: float | None = None,
    prune: bool = True,
    stop: BackupStop | None = None,
) -> Backup:
    """Write a consistent copy of the store open on `con` into the backups folder.

    Runs on a cursor of its own, so it can run beside the store's worker; the copy is one
    transaction, a snapshot that later writes do not reach. `stop` lets another thread end
    it half-way (`BackupStopped`, and no file left of it)."""
    when = time.time() if now is None else now
    folder = backups_dir(store_path)
    make_private_dir(folder)
    stamp = datetime.fromtimestamp(when).strftime(_STAMP)
    name = f"treechat-{stamp}-{_slug(reason)}{BACKUP_SUFFIX}"
    target = folder / name
    n = 1
    while target.exists():
        n += 1
        name = f"treechat-{stamp}-{n}-{_slug(reason)}{BACKUP_SUFFIX}"
        target = folder / name
    partial = folder / f".{name}.partial"
    _remove_partial(partial)
    step = stop if stop is not None else BackupStop()
    cursor = con.cursor()
    try:
        source = cursor.execute("SELECT current_database()").fetchone()
        assert source is not None
        step.execute(cursor, f"ATTACH '{_sql_path(partial)}' AS {_ALIAS}")
        try:
            # One transaction: every table is read from the same snapshot.
            cursor.execute("BEGIN TRANSACTION")
            try:
                step.execute(cursor, f'COPY FROM DATABASE "{source[0]}" TO {_ALIAS}')
                cursor.execute("COMMIT")
            except (duckdb.Error, BackupStopped):
                with contextlib.suppress(duckdb.Error):
                    cursor.execute("ROLLBACK")
                raise
        finally:
            cursor.execute(f"DETACH {_ALIAS}")
    except BackupStopped:
        _remove_partial(partial)
        raise
    except duckdb.Error as exc:
        _remove_partial(partial)
        if step.requested:
            raise BackupStopped("the backup was stopped: the store is closing") from None
        raise BackupError(f"the backup could not be written: {exc}") from None
    finally:
        cursor.close()
    _fsync(partial)
    make_private_file(partial)
    os.replace(partial, target)
    _fsync_dir(folder)
    backup = Backup(target, when, _slug(reason), target.stat().st_size)
    log.info("backup of %s written to %s (%d bytes)", store_path, target, backup.size)
    if prune:
        prune_backups(store_path, now=when)
    return backup


def needs_backup(store_path: Path, *, now: float | None = None, every: float = DAILY_S) -> bool:
    """Whether the newest backup is older than `every` (or there is none)."""
    when = time.time() if now is None else now
    backups = list_backups(store_path)
    return not backups or when - backups[0].created_at >= every


def backups_to_keep(backups: tuple[Backup, ...], now: float) -> set[Path]:
    """The newest `KEEP_LAST`, and the newest of each 7-day span back to `KEEP_WEEKS_DAYS`."""
    keep = {b.path for b in backups[:KEEP_LAST]}
    cutoff = now - KEEP_WEEKS_DAYS * 86400.0
    weeks_seen: set[int] = set()
    for b in backups:  # newest first: the first one met in each span is its newest
        if b.created_at < cutoff:
            continue
        week = int((now - b.created_at) // timedelta(days=7).total_seconds())
        if week not in weeks_seen:
            weeks_seen.add(week)
            keep.add(b.path)
    return keep


def prune_backups(store_path: Path, *, now: float | None = None) -> tuple[Path, ...]:
    when = time.time() if now is None else now
    backups = list_backups(store_path)
    keep = backups_to_keep(backups, when)
    removed: list[Path] = []
    for b in backups:
        if b.path not in keep:
            with contextlib.suppress(OSError):
                b.path.unlink()
                removed.append(b.path)
    return tuple(removed)


def verify_backup(path: Path) -> integrity.IntegrityReport:
    """Open a backup read-only and read all of it; its schema must be one this build knows."""

    try:
        check_header(path)
    except StoreError as exc:
        return integrity.IntegrityReport(path, problem=str(exc))
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        return integrity.IntegrityReport(path, problem=f"it cannot be opened ({exc})")
    try:
        version = schema_version(con)
        if version == 0:
            return integrity.IntegrityReport(path, problem="it is not a Treechat store")
        if version > SCHEMA_VERSION:
            return integrity.IntegrityReport(
                path,
                problem=f"it was written by a newer Treechat (schema {version}; this build "
                f"knows {SCHEMA_VERSION})",
            )
        return integrity.full_check(con, path)
    finally:
        con.close()


def restore_backup(backup: Path, store_path: Path, *, now: float | None = None) -> Path | None:
    """Put `backup` in the store's place; returns where the replaced store was kept.

    Refused while any process holds the store (the window, a running command): the lock is
    taken for the swap itself, so no one can open the file half-replaced. The backup is
    checked first; the store it replaces is moved aside, never deleted."""

    if is_open_here(store_path):
        raise BackupError(
            "the store is open in this process; close it (stop the running turns, close the "
            "store) before restoring"
        )
    report = verify_backup(backup)
    if not report.ok:
        raise BackupError(f"the backup {backup.name} cannot be restored: {report.problem}")
    when = time.time() if now is None else now
    stamp = datetime.fromtimestamp(when).strftime(_STAMP)
    incoming = store_path.with_name(f".{store_path.name}.restoring")
    shutil.copyfile(backup, incoming)
    _fsync(incoming)
    make_private_file(incoming)
    holder: duckdb.DuckDBPyConnection | None = None
    if store_path.exists():
        try:
            # Holding the store's own lock across the swap: a Treechat that tries to open it
            # meanwhile is refused as "in use" instead of reading a file being replaced.
            holder = duckdb.connect(str(store_path), read_only=False)
        except duckdb.Error as exc:
            error = classify_open_error(store_path, exc)
            if isinstance(error, StoreLockedError):
                incoming.unlink(missing_ok=True)
                raise BackupError(
                    f"the store is in use ({error}); close Treechat's window and any running "
                    "`treechat` command, then restore again"
                ) from None
            holder = None  # a damaged store: nothing can hold it, swap it anyway
    aside: Path | None = None
    try:
        if store_path.exists():
            aside = store_path.with_name(f"{store_path.name}.before-restore-{stamp}")
            os.replace(store_path, aside)
            wal = store_path.with_name(store_path.name + ".wal")
            if wal.exists():
                os.replace(wal, aside.with_name(aside.name + ".wal"))
        os.replace(incoming, store_path)
        _fsync_dir(store_path.parent)
    finally:
        if holder is not None:
            with contextlib.suppress(duckdb.Error):
                holder.close()
        incoming.unlink(missing_ok=True)
    log.warning("store %s restored from %s; the replaced file is %s", store_path, backup, aside)
    return aside


def _remove_partial(partial: Path) -> None:
    for leftover in (partial, partial.with_name(partial.name + ".wal")):
        leftover.unlink(missing_ok=True)


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


def _fsync(path: Path) -> None:
    with contextlib.suppress(OSError), open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def _fsync_dir(folder: Path) -> None:
    if os.name == "nt":
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
