"""What the store's database, backup and integrity modules share about the file itself: its
header, its schema version, why it would not open, its private modes, and whether this
process has it open."""

from __future__ import annotations

import contextlib
import os
import re
import threading
from pathlib import Path

import duckdb

from .store_errors import StoreCorruptError, StoreError, StoreLockedError

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


# Stores open in this process: DuckDB shares one instance per file within a process, so its
# file lock does not keep a restore from swapping a file this process still has open.
_open_here: set[Path] = set()
_open_here_lock = threading.Lock()


def is_open_here(path: Path) -> bool:
    with _open_here_lock:
        return Path(path).resolve() in _open_here


def mark_open(path: Path) -> None:
    with _open_here_lock:
        _open_here.add(path.resolve())


def mark_closed(path: Path) -> None:
    with _open_here_lock:
        _open_here.discard(path.resolve())


def classify_open_error(path: Path, exc: Exception) -> StoreError:
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


_DUCKDB_MAGIC = b"DUCK"


def check_header(path: Path) -> None:
    """Refuse a file that is not a DuckDB database at all before DuckDB touches it (a pipe
    or a device in its place too: reading one would wait for a writer, or never end)."""
    try:
        if path.exists() and not path.is_file() and not path.is_dir():
            raise StoreCorruptError(
                f"The conversation store {path} is not a file (a pipe, a device or a socket "
                "is in its place). It was left untouched.")
        with path.open("rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise StoreCorruptError(f"The conversation store {path} cannot be read: {exc}") from None
    if len(head) < 12 or head[8:12] != _DUCKDB_MAGIC:  # an empty file is refused too
        raise StoreCorruptError(
            f"The conversation store {path} is not a DuckDB database "
            "(its header is damaged or it is another kind of file). It was left untouched."
        )


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'"
    ).fetchone()
    if not exists or not exists[0]:
        return 0
    row = con.execute("SELECT max(version) FROM schema_version").fetchone()
    return int(row[0]) if row and row[0] is not None else 0
