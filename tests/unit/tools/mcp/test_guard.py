"""The guard a stdio server runs under: when the app dies (SIGKILL, no clean-up), the server
and whatever it started are gone soon after, even a server that ignores SIGTERM and never
reads its stdin."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from tests.support.processes import gone

from treechat.tools.mcp.runtime import GUARD_SCRIPT

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the guard is POSIX only")

# A server at its most stubborn: ignores SIGTERM, never reads stdin, and starts a grandchild
# that does the same.
STUBBORN = textwrap.dedent(
    """
    import os, signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    kid = subprocess.Popen([sys.executable, "-c",
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
    open(sys.argv[1], "w").write(f"{os.getpid()} {kid.pid}")
    time.sleep(600)
    """
)

# The app: starts the guard the way the runtime does (its own session, stdin a pipe it holds).
APP = textwrap.dedent(
    """
    import os, subprocess, sys, time
    guard, script, pids = sys.argv[1:4]
    subprocess.Popen(
        [sys.executable, guard, "--parent-pid", str(os.getpid()), "--poll", "0.2", "--",
         sys.executable, "-c", script, pids],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True,
    )
    time.sleep(600)
    """
)


def _wait_for(path: Path, within: float = 30.0) -> str:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} was never written")


def test_killing_the_app_ends_the_server_and_its_children(tmp_path: Path) -> None:
    pids_file = tmp_path / "pids"
    app = subprocess.Popen(
        [sys.executable, "-c", APP, str(GUARD_SCRIPT), STUBBORN, str(pids_file)]
    )
    try:
        server, grandchild = (int(p) for p in _wait_for(pids_file).split())
        assert not gone(server, within=0.5)
        os.kill(app.pid, signal.SIGKILL)
        app.wait(10)
        assert gone(server, within=15), "the server outlived the app"
        assert gone(grandchild, within=15), "the server's child outlived the app"
    finally:
        if app.poll() is None:
            app.kill()
            app.wait(10)


def test_a_missing_command_exits_with_127_and_says_so(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(GUARD_SCRIPT), "--parent-pid", str(os.getpid()), "--",
         "no-such-command-zz"],
        check=False,
        stdin=subprocess.PIPE,
        capture_output=True,
        text=True,
        timeout=30,
        start_new_session=True,
    )
    assert result.returncode == 127
    assert "command not found: no-such-command-zz" in result.stderr
