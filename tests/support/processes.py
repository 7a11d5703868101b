"""Waiting on child processes in tests."""

from __future__ import annotations

import psutil


def gone(pid: int, within: float = 20.0) -> bool:
    """True once `pid` no longer runs (a zombie awaiting its reaper counts as gone)."""
    try:
        proc = psutil.Process(pid)
        proc.wait(timeout=within)
    except psutil.NoSuchProcess:
        return True
    except psutil.TimeoutExpired:
        try:
            return proc.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True
    return True


def described(pid: int) -> str:
    """What `pid` is now and who its parents are, for a failure message."""
    try:
        proc = psutil.Process(pid)
        chain = [proc, *proc.parents()]
        return " <- ".join(
            f"{p.pid} {p.status()} {' '.join(p.cmdline())[:120]!r}" for p in chain
        )
    except psutil.Error as exc:
        return f"{pid}: {exc}"
