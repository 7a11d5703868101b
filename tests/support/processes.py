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
