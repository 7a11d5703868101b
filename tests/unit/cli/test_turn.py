"""A command-line turn: Ctrl+C, SIGTERM and SIGHUP stop the reply and keep what streamed
(status 130), and a tool call is asked about on the terminal (denied when there is none)."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import subprocess
import threading
from pathlib import Path

import pytest
from tests.support.cli_runner import send_command, send_env, stored_path
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.cli._turn import terminal_approver
from treechat.services.mcp.approval import ApprovalRequest, Decision


@pytest.mark.parametrize(
    ("sig", "name"),
    [(signal.SIGINT, "Ctrl+C"), (signal.SIGTERM, "SIGTERM"), (signal.SIGHUP, "SIGHUP")],
)
def test_a_signal_during_the_reply_keeps_what_streamed(
    tmp_path: Path, loopback: LoopbackProvider, sig: signal.Signals, name: str
) -> None:
    # The stream pauses after 60 pieces until the server stops, so the signal always lands
    # mid-reply however slow the machine is.
    loopback.queue(Reply(text=" ".join(f"w{i}" for i in range(400)), pause_after=60))
    child = subprocess.Popen(
        send_command(tmp_path, loopback.openai_base, "--new", "tell me a long story"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=send_env(),
    )
    assert child.stdout is not None and child.stderr is not None
    seen: list[str] = []
    streaming = threading.Event()

    def read_stdout() -> None:
        assert child.stdout is not None
        while piece := child.stdout.read(1):
            seen.append(piece)
            if len("".join(seen)) > 40:
                streaming.set()

    reader = threading.Thread(target=read_stdout)
    reader.start()
    assert streaming.wait(timeout=240), child.stderr.read()
    os.kill(child.pid, sig)
    code = child.wait(timeout=120)
    reader.join(timeout=30)
    err = child.stderr.read()
    child.stdout.close()
    child.stderr.close()
    assert code == 130, err
    assert f"stopped by {name}" in err and "Traceback" not in err
    path = stored_path(tmp_path)
    assert [p[0] for p in path] == ["user", "assistant"]
    _role, reply, interrupted = path[1]
    assert interrupted
    printed = "".join(seen).strip()
    assert reply.startswith("w0 w1 ") and printed.startswith(reply[: len(printed) // 2])


@pytest.mark.skipif(os.name != "posix", reason="a pseudo-terminal is POSIX")
@pytest.mark.asyncio
async def test_the_terminal_prompt_shows_the_call_and_reads_the_answer() -> None:
    import pty

    request = ApprovalRequest("s", "alpha", "secret_value", "alpha__secret_value", {"k": 1})
    for typed, expected in ((b"a\n", Decision.ALLOW_ALWAYS), (b"y\n", Decision.ALLOW_ONCE),
                            (b"\n", Decision.DENY)):
        leader, follower = pty.openpty()
        shown = io.StringIO()
        with os.fdopen(follower, "r") as tty_in:
            ask = terminal_approver(tty_in, shown)
            os.write(leader, typed)
            assert await asyncio.wait_for(ask(request), 10) is expected
        os.close(leader)
        assert "alpha › secret_value wants to run with" in shown.getvalue()
        assert '"k": 1' in shown.getvalue()


@pytest.mark.asyncio
async def test_with_no_terminal_a_tool_call_is_denied_and_says_how_to_allow_it() -> None:
    request = ApprovalRequest("s", "alpha", "secret_value", "alpha__secret_value", {"k": 1})
    said = io.StringIO()
    ask = terminal_approver(io.StringIO("y\n"), said)  # text waiting, but no terminal
    assert await ask(request) is Decision.DENY
    assert "no terminal to ask; denied" in said.getvalue()
    assert "treechat mcp add alpha --allow --replace" in said.getvalue()
