"""Freed memory handed back to the system, for a process whose peak resident size matters
(`treechat send` lets go of the token tables before litellm loads)."""

from __future__ import annotations

import ctypes
import os


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
