"""A desktop session of the test's own for a screen reader: an X server (Xvfb, on the first
free display), a D-Bus session bus, and accessibility on (Qt's AT-SPI bridge; the bus
launcher is started by D-Bus when the application asks for it). Nothing of the machine's own
session is used: the children get this session's DISPLAY and bus address only."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# What the session needs from the system (Debian packages: xvfb, dbus-daemon, at-spi2-core,
# python3-pyatspi); `make test` installs them.
NEEDED = {"Xvfb": "xvfb", "dbus-daemon": "dbus-daemon"}
SYSTEM_PYTHON = Path("/usr/bin/python3")  # pyatspi is the distribution's, for its python


def missing() -> list[str]:
    """The Debian packages this machine lacks for the session, by name."""
    out = [pkg for tool, pkg in NEEDED.items() if shutil.which(tool) is None]
    if not Path("/usr/libexec/at-spi-bus-launcher").exists():
        out.append("at-spi2-core")
    probe = subprocess.run([str(SYSTEM_PYTHON), "-c", "import pyatspi"], capture_output=True,
                           check=False) if SYSTEM_PYTHON.exists() else None
    if probe is None or probe.returncode != 0:
        out.append("python3-pyatspi")
    return out


def _read_line(fd: int, what: str) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 256)
        if not chunk:
            raise RuntimeError(f"{what} ended before saying where it listens")
        data += chunk
    return data.decode().strip()


@contextmanager
def accessibility_session(home: Path) -> Iterator[dict[str, str]]:
    """The environment for the session's children, while it runs."""
    home.mkdir(parents=True, exist_ok=True)
    display_r, display_w = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", str(display_w), "-screen", "0", "1366x768x24", "-nolisten",
         "tcp", "-noreset"], pass_fds=(display_w,), stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    os.close(display_w)
    bus: subprocess.Popen[bytes] | None = None
    try:
        display = ":" + _read_line(display_r, "Xvfb")
        address_r, address_w = os.pipe()
        bus = subprocess.Popen(
            ["dbus-daemon", "--session", "--nofork", f"--print-address={address_w}"],
            pass_fds=(address_w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)})
        os.close(address_w)
        address = _read_line(address_r, "dbus-daemon")
        os.close(address_r)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_DATA_HOME": str(home / "data"),
            "XDG_CACHE_HOME": str(home / "cache"),
            "XDG_RUNTIME_DIR": str(home / "runtime"),
            "DISPLAY": display,
            "DBUS_SESSION_BUS_ADDRESS": address,
            "QT_QPA_PLATFORM": "xcb",
            "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",
            "QT_ACCESSIBILITY": "1",
            "NO_AT_BRIDGE": "0",
            "LANG": "C.UTF-8",
            "TREECHAT_LOCAL_SERVERS": "none",  # never the machine's own servers
        }
        (home / "runtime").mkdir(mode=0o700, exist_ok=True)
        yield env
    finally:
        os.close(display_r)
        for proc in (bus, xvfb):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
