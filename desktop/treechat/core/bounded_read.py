"""Reading bytes that come from outside (a file, a pipe, standard input, a server's body) with
a cap on how many and a deadline on how long, and one line that says which was hit.

`ByteBudget` is the rule (pure: the caller passes the time); `read_path` and `read_fd` apply it
to the operating system's files and pipes. A FIFO with no writer, `/dev/zero`, a sparse file
of many gigabytes and an endless pipe all end in `ReadLimitError` within the cap and the
deadline, never in memory growth or a wait with no end.
"""

from __future__ import annotations

import errno
import os
import select
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

CHUNK = 1024 * 1024
MB = 1024 * 1024

Limit = Literal["cap", "deadline", "idle"]


def human_bytes(n: int) -> str:
    if n >= MB:
        return f"{n / MB:,.0f} MB" if n % MB == 0 else f"{n / MB:,.1f} MB"
    if n >= 1024:
        return f"{n / 1024:,.0f} KB"
    return f"{n} bytes"


class ReadLimitError(ValueError):
    """A read stopped at its cap or its deadline; `limit` says which, the message says it in
    words a user can act on."""

    def __init__(self, message: str, limit: Limit, read: int) -> None:
        super().__init__(message)
        self.limit: Limit = limit
        self.read = read


@dataclass(frozen=True, slots=True)
class Bounds:
    """At most `cap` bytes, in at most `deadline` seconds in all, with no silence longer than
    `idle` seconds between two pieces (None: that one is not bounded)."""

    cap: int
    deadline: float | None = None
    idle: float | None = None


class ByteBudget:
    """Counts what arrives against `Bounds`. `add` and `tick` raise `ReadLimitError` the moment
    a bound is passed; `what` names the source in the message ("standard input", a file)."""

    def __init__(self, bounds: Bounds, what: str, now: float) -> None:
        self.bounds = bounds
        self.what = what
        self.read = 0
        self._started = now
        self._last = now

    def add(self, n: int, now: float) -> None:
        self.read += n
        self._last = now
        if self.read > self.bounds.cap:
            raise self.over_cap()
        self.tick(now)

    def over_cap(self) -> ReadLimitError:
        return ReadLimitError(
            f"{self.what} is larger than {human_bytes(self.bounds.cap)}, the most that is read "
            "from it",
            "cap",
            self.read,
        )

    def tick(self, now: float) -> None:
        b = self.bounds
        if b.deadline is not None and now - self._started > b.deadline:
            raise ReadLimitError(
                f"{self.what} took longer than {b.deadline:g} s to read (read "
                f"{human_bytes(self.read)} by then)",
                "deadline",
                self.read,
            )
        if b.idle is not None and now - self._last > b.idle:
            raise ReadLimitError(
                f"{self.what} sent nothing for {b.idle:g} s (read {human_bytes(self.read)} by "
                "then)",
                "idle",
                self.read,
            )

    def wait_left(self, now: float) -> float | None:
        """Seconds until the nearer of the two time bounds (None: neither is set)."""
        b = self.bounds
        left: list[float] = []
        if b.deadline is not None:
            left.append(self._started + b.deadline - now)
        if b.idle is not None:
            left.append(self._last + b.idle - now)
        return max(0.0, min(left)) if left else None


def read_fd(
    fd: int,
    bounds: Bounds,
    what: str,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> bytes:
    """Everything readable from `fd` up to its end, within `bounds`. A pipe or a terminal is
    waited on with `select` so the deadline holds while the writer is silent; a regular file
    or a device is read in pieces, never more than the cap and one byte."""
    budget = ByteBudget(bounds, what, clock())
    mode = os.fstat(fd).st_mode
    waitable = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))
    parts: list[bytes] = []
    while True:
        if waitable:
            _wait_readable(fd, budget, clock)
        want = min(CHUNK, bounds.cap + 1 - budget.read)
        try:
            piece = os.read(fd, want)
        except BlockingIOError:
            continue
        except InterruptedError:  # pragma: no cover - retried by Python itself since 3.5
            continue
        if not piece:
            return b"".join(parts)
        parts.append(piece)
        budget.add(len(piece), clock())


def _wait_readable(fd: int, budget: ByteBudget, clock: Callable[[], float]) -> None:
    while True:
        now = clock()
        budget.tick(now)
        left = budget.wait_left(now)
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            return


def read_path(
    path: str | os.PathLike[str],
    bounds: Bounds,
    what: str | None = None,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> bytes:
    """A file's bytes within `bounds`. A regular file larger than the cap is refused from its
    size before a byte is read; a FIFO is opened without waiting for a writer, so one that
    never comes is a deadline, not a hang; a directory is refused by name."""
    p = Path(path)
    shown = what or str(p)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise ReadLimitError(f"{shown} is a folder, not a file", "cap", 0) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ReadLimitError(f"{shown} is a folder, not a file", "cap", 0)
        if stat.S_ISREG(info.st_mode):
            if info.st_size > bounds.cap:
                raise ReadLimitError(
                    f"{shown} is {human_bytes(info.st_size)}, larger than "
                    f"{human_bytes(bounds.cap)}, the most that is read from it",
                    "cap",
                    0,
                )
            _set_blocking(fd)
        elif stat.S_ISFIFO(info.st_mode):
            _wait_for_writer(fd, bounds, shown, clock)
        else:
            _set_blocking(fd)
        return read_fd(fd, bounds, shown, clock=clock)
    finally:
        os.close(fd)


def _set_blocking(fd: int) -> None:
    try:
        os.set_blocking(fd, True)
    except OSError as exc:  # pragma: no cover - a descriptor that cannot change mode
        if exc.errno != errno.EBADF:
            raise


def _wait_for_writer(
    fd: int, bounds: Bounds, shown: str, clock: Callable[[], float]
) -> None:
    """A FIFO opened without a writer reads as ended (b"") at once: wait, within the bounds,
    until a writer has sent something or the time runs out."""
    budget = ByteBudget(bounds, shown, clock())
    while True:
        now = clock()
        left = budget.wait_left(now)
        if left is not None and left <= 0:
            raise ReadLimitError(
                f"{shown} is a pipe that no program wrote to within "
                f"{min(t for t in (bounds.deadline, bounds.idle) if t is not None):g} s",
                "deadline",
                0,
            )
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        events = poller.poll(None if left is None else int(min(left, 0.2) * 1000) + 1)
        if events:  # data, or a writer that came and went (POLLHUP): read says which
            return


# A pipe given as an output: how long a program may take to start reading it, and to take in
# what is written (a reader that stops reading holds the writer as long as one that is absent).
PIPE_WRITE_DEADLINE_S = 30.0


class WriteWaitError(OSError):
    """Nobody read the pipe written to within the deadline (one line for the user)."""


def write_path(path: str | os.PathLike[str], data: bytes, *,
               deadline: float = PIPE_WRITE_DEADLINE_S,
               clock: Callable[[], float] = time.monotonic) -> None:
    """Write `data` to the file at `path` (made or emptied), or into the pipe there. A pipe
    with no reader is waited on for at most `deadline` seconds, then `WriteWaitError`; a
    plain open would wait for a reader for ever."""
    p = Path(path)
    try:
        is_pipe = stat.S_ISFIFO(os.stat(p).st_mode)
    except FileNotFoundError:
        is_pipe = False
    if not is_pipe:
        p.write_bytes(data)
        return
    end = clock() + deadline
    while True:
        try:
            fd = os.open(p, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
            if clock() >= end:
                raise WriteWaitError(errno.ETIMEDOUT, "a pipe that no program read from "
                                     f"within {deadline:g} s", str(p)) from None
            time.sleep(0.05)
    try:
        view = memoryview(data)
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        while view:
            left = end - clock()
            if left <= 0 or not poller.poll(int(min(left, 0.2) * 1000) + 1):
                if clock() >= end:
                    raise WriteWaitError(errno.ETIMEDOUT, "the program reading this pipe did "
                                         f"not take what was written within {deadline:g} s",
                                         str(p))
                continue
            try:
                view = view[os.write(fd, view):]
            except BlockingIOError:
                continue
    finally:
        os.close(fd)
