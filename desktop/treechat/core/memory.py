"""Freed memory handed back to the system, for a process whose peak resident size matters
(`treechat send` lets go of the token tables before litellm loads), and the cycle collector
kept to the thread that owns it."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import threading
from collections.abc import Callable


def return_freed_memory() -> bool:
    """Hand freed heap pages back to the system; whether it was asked. glibc keeps what
    `free` released for reuse within the process (resident meanwhile) unless `malloc_trim`
    asks it to return them; no library wraps it, and other C libraries return memory on
    their own, so elsewhere this does nothing."""
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):  # not a POSIX system, or not glibc
        return False
    if not glibc:
        return False
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # a libc without it: nothing to give back this way
        return False
    return True


# Who may run Python's cycle collector. A window's GUI thread owns it while its loop runs: a
# Qt object the collector frees on another thread is destroyed off the thread that owns it,
# and the process crashes. So automatic collection is paused while anyone needs it paused (a
# count: the window and litellm's import may overlap), and a collection asked for on another
# thread (a model let go on its timer) is handed to the owner.
_lock = threading.Lock()
_pauses = 0
_enabled_before_pause = True
_owner: Callable[[], None] | None = None


def pause_automatic_collection() -> None:
    """Turn automatic collection off until every pause is resumed."""
    global _pauses, _enabled_before_pause
    with _lock:
        if _pauses == 0:
            _enabled_before_pause = gc.isenabled()
        gc.disable()  # again, if something turned it on meanwhile
        _pauses += 1


def resume_automatic_collection() -> None:
    """End one pause; the last one puts automatic collection back as it was."""
    global _pauses
    with _lock:
        if _pauses == 0:
            return
        _pauses -= 1
        if _pauses == 0 and _enabled_before_pause:
            gc.enable()


def own_collection(ask: Callable[[], None]) -> None:
    """Make `ask` the way to collect from any thread (it must be safe to call from any)."""
    global _owner
    with _lock:
        _owner = ask


def disown_collection(ask: Callable[[], None]) -> None:
    """Nobody owns collection any more, if `ask` still did."""
    global _owner
    with _lock:
        if _owner is ask:
            _owner = None


def collect_and_return_memory() -> None:
    """Free unreachable cycles and hand freed memory back to the system, from any thread: the
    owner of collection is asked to do it on its own thread; with no owner it is done here,
    unless automatic collection is paused (then whoever paused it collects later)."""
    with _lock:
        ask = _owner
    if ask is not None:
        # RuntimeError: the owner was just destroyed, and its stop collected already
        with contextlib.suppress(RuntimeError):
            ask()
        return
    if gc.isenabled():  # automatic collection would run on this thread anyway
        gc.collect()
    return_freed_memory()
