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
    guard, script, pids, errors = sys.argv[1:5]
    subprocess.Popen(
        [sys.executable, guard, "--parent-pid", str(os.getpid()), "--poll", "0.2", "--",
         sys.executable, "-c", script, pids],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True,
        stderr=subprocess.PIPE if errors == "pipe" else None,
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


@pytest.mark.parametrize("errors", ["inherited", "pipe"])
def test_killing_the_app_ends_the_server_and_its_children(tmp_path: Path, errors: str) -> None:
    """`pipe`: the guard's stderr is a pipe only the app reads (as the runtime keeps the
    server's last lines), so once the app is gone the guard cannot say why it stops the
    server; it stops it all the same."""
    pids_file = tmp_path / "pids"
    app = subprocess.Popen(
        [sys.executable, "-c", APP, str(GUARD_SCRIPT), STUBBORN, str(pids_file), errors]
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


def _relayed(written: bytes, cap: int) -> bytes:
    import threading

    from treechat.tools.mcp.guard import relay_messages

    source_r, source_w = os.pipe()
    target_r, target_w = os.pipe()
    relay = threading.Thread(target=relay_messages, args=(source_r, target_w, cap))
    relay.start()

    def feed() -> None:
        for start in range(0, len(written), 4096):  # in pieces, as a pipe delivers them
            os.write(source_w, written[start:start + 4096])
        os.close(source_w)

    feeder = threading.Thread(target=feed)
    feeder.start()
    out = bytearray()
    while chunk := os.read(target_r, 65536):
        out += chunk
    feeder.join()
    relay.join()
    os.close(source_r)
    os.close(target_r)
    return bytes(out)


def test_messages_pass_whole_and_one_over_the_cap_becomes_an_error_for_its_request() -> None:
    import json

    small = b'{"jsonrpc": "2.0", "id": 1, "result": {}}\n'
    huge = b'{"jsonrpc": "2.0", "id": "call-7", "result": {"text": "' + b"x" * 50_000 + b'"}}\n'
    nameless = b'{"jsonrpc": "2.0", "result": "' + b"y" * 50_000 + b'"}\n'
    out = _relayed(small + huge + nameless + small + b'{"tail": 1}', cap=10_000).split(b"\n")
    assert out[0] + b"\n" == small and out[2] + b"\n" == small and out[3] == b'{"tail": 1}'
    error = json.loads(out[1])
    assert error["id"] == "call-7"
    assert "larger than" in error["error"]["message"] and error["error"]["code"] == -32603
    assert len(out) == 4  # the oversized message with no id to answer is dropped


@pytest.mark.asyncio
async def test_a_server_answering_with_more_than_the_cap_is_refused_in_one_line() -> None:
    """A 20 MB answer: without the cap the SDK copies the line for each piece it reads and
    the call waits out its time limit; with it the call ends at once and the server stays."""
    from tests.support import hostile_mcp

    from treechat.tools.mcp.config import ServerConfig
    from treechat.tools.mcp.runtime import McpCallError, McpRuntime

    runtime = McpRuntime()
    try:
        config = ServerConfig(name="hostile", transport="stdio", command=sys.executable,
                              args=(hostile_mcp.__file__, "--huge", "20"), call_timeout=300)
        assert (await runtime.start(config)).status == "ready"
        with pytest.raises(McpCallError, match="larger than 16 MB"):
            await runtime.call_tool("hostile", "dump", {})
        assert (await runtime.call_tool("hostile", "echo", {"text": "still here"})).text == (
            "still here")
    finally:
        runtime.close()


@pytest.mark.asyncio
async def test_a_line_that_is_not_json_before_each_answer_costs_no_wait() -> None:
    from tests.support import hostile_mcp

    from treechat.tools.mcp.config import ServerConfig
    from treechat.tools.mcp.runtime import McpRuntime

    runtime = McpRuntime()
    try:
        config = ServerConfig(name="noisy", transport="stdio", command=sys.executable,
                              args=(hostile_mcp.__file__, "--noise"), call_timeout=300,
                              start_timeout=300)
        assert (await runtime.start(config)).status == "ready"
        assert (await runtime.call_tool("noisy", "echo", {"text": "hi"})).text == "hi"
    finally:
        runtime.close()
