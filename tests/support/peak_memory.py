"""Peak resident memory of this process, for tests that bound what hostile input may cost."""

from __future__ import annotations

import resource
import sys

MB = 1024 * 1024


def peak_rss_mb() -> float:
    """The largest resident size this process has had so far, in MB (`ru_maxrss` is in KB
    on Linux and in bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / MB if sys.platform == "darwin" else peak / 1024
