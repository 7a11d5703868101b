"""Runs a command with no network and records every file it writes outside /tmp.

Meant to run as root inside `unshare --mount --net` (see `sandboxed_command`): it brings the
new namespace's loopback up (so the app's own child servers still work), lays a copy-on-write
overlay over each top-level directory, runs the command, and reports what landed in the
overlays' upper layers, which is exactly what the command and its children wrote. The mounts
exist only in the private namespace and vanish with it.

Usage: sandbox.py REPORT.json TIMEOUT -- COMMAND...   (environment passed through as is)
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import struct
import subprocess
import sys
from pathlib import Path

_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
# The standard places a program could write to (/tmp excepted: the command may use it freely),
# plus the top-level folder that holds this repository.
_TARGETS = ("etc", "home", "media", "opt", "root", "run", "srv", "usr", "var",
            Path(__file__).resolve().parts[1])


def sandboxed_command(report: Path, timeout: float, command: list[str]) -> list[str]:
    """The full command line that runs `command` in the sandbox."""
    return ["unshare", "--mount", "--net", "--propagation", "private", sys.executable,
            str(Path(__file__).resolve()), str(report), str(timeout), "--", *command]


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(s, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | _IFF_UP))


def mount_points() -> list[str]:
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        return [line.split()[4] for line in f]


def overlay_targets() -> list[Path]:
    """Top-level directories that hold no other mount (those are left alone)."""
    mounts = [m for m in mount_points() if m != "/"]
    targets = []
    for entry in sorted({Path("/", name) for name in _TARGETS}):
        if entry.name == "tmp" or entry.is_symlink() or not entry.is_dir():
            continue
        prefix = str(entry)
        if any(m == prefix or m.startswith(prefix + "/") for m in mounts):
            continue
        targets.append(entry)
    return targets


def main(argv: list[str]) -> int:
    report_path, timeout = Path(argv[0]), float(argv[1])
    command = argv[argv.index("--") + 1:]
    loopback_up()
    # The upper layers live on a tmpfs of this namespace only (mounted over an empty folder
    # beside the report), so they vanish with it.
    layers = report_path.parent / f"layers-{os.getpid()}"
    layers.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "sandbox-layers", str(layers)], check=True)
    overlaid: dict[str, Path] = {}
    for target in overlay_targets():
        upper, work = layers / target.name / "upper", layers / target.name / "work"
        upper.mkdir(parents=True)
        work.mkdir()
        subprocess.run(
            ["mount", "-t", "overlay", "overlay", "-o",
             f"lowerdir={target},upperdir={upper},workdir={work}", str(target)],
            check=True,
        )
        overlaid[str(target)] = upper
    try:
        done = subprocess.run(command, timeout=timeout, check=False)
        code = done.returncode
    except subprocess.TimeoutExpired:
        code = 124
    written = sorted(
        str(Path(target) / path.relative_to(upper))
        for target, upper in overlaid.items()
        for path in upper.rglob("*")
        if not path.is_dir()
    )
    report_path.write_text(json.dumps({
        "returncode": code,
        "overlaid": sorted(overlaid),
        "written": written,
        "interfaces": sorted(name for _, name in socket.if_nameindex()),
    }, indent=2))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
