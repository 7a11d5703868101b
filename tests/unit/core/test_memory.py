"""Freed heap handed back to the system: 64 MB freed in the middle of the heap (glibc keeps
it resident) leaves the resident set once asked."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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
