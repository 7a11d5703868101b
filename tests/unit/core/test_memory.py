"""Freed heap handed back to the system: 64 MB freed in the middle of the heap (glibc keeps
it resident) leaves the resident set once asked."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import threading
import weakref
from collections.abc import Iterator

import pytest

from treechat.core import memory

CHILD = """
import ctypes, json
from treechat.core.memory import return_freed_memory

def resident_mb():
    try:
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("VmRSS")) / 1024
    except OSError:  # no /proc: only whether it was asked is reported
        return 0.0

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
if hasattr(libc, "mallopt"):  # glibc's M_TRIM_THRESHOLD: free() alone never shrinks the heap
    libc.mallopt(-1, 1 << 30)
size = 64 * 1024  # under glibc's mmap threshold: from the heap
blocks = [libc.malloc(size) for _ in range(1024)]
for block in blocks:
    ctypes.memset(block, 1, size)
for block in blocks:
    libc.free(block)
before = resident_mb()
asked = return_freed_memory()
print(json.dumps({"asked": asked, "before": before, "after": resident_mb()}))
"""


def _glibc() -> bool:
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (AttributeError, ValueError, OSError):
        return False


def test_freed_heap_leaves_the_resident_set_once_asked() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["asked"] is _glibc()
    if report["asked"]:
        assert report["before"] - report["after"] > 48  # of the 64 MB freed


class Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def collection_as_found() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_automatic_collection_comes_back_only_after_the_last_pause(
    collection_as_found: None,
) -> None:
    memory.pause_automatic_collection()  # the window's loop
    memory.pause_automatic_collection()  # litellm's import, overlapping it
    memory.resume_automatic_collection()  # the import ends first
    assert not gc.isenabled()  # the window still needs it off
    memory.resume_automatic_collection()
    assert gc.isenabled()
    memory.resume_automatic_collection()  # one resume too many changes nothing
    assert gc.isenabled()


def test_a_collection_asked_for_on_another_thread_goes_to_its_owner(
    collection_as_found: None,
) -> None:
    asked: list[str] = []
    ask = lambda: asked.append(threading.current_thread().name)  # noqa: E731
    memory.own_collection(ask)
    try:
        gc.collect()
        gc.disable()
        cycle = Cycle()
        gone = weakref.ref(cycle)
        del cycle
        worker = threading.Thread(target=memory.collect_and_return_memory, name="timer")
        worker.start()
        worker.join()
        assert asked == ["timer"]
        assert gone() is not None  # the asking thread freed nothing itself
    finally:
        memory.disown_collection(ask)
        gc.enable()
    memory.collect_and_return_memory()  # nobody owns it: collected here
    assert gone() is None
