"""Starting one server: a stdio server runs under the guard that ends it with us, a command
that is not there is found out before anything is spawned, and the server's stderr keeps its
last lines."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from treechat.tools.mcp.config import ServerConfig
from treechat.tools.mcp.server_connection import (
    GUARD_SCRIPT,
    STDERR_TAIL_LINES,
    _StderrTail,
    resolve_command,
    stdio_command,
)


@pytest.mark.skipif(os.name != "posix", reason="the guard is POSIX only")
def test_a_stdio_server_starts_under_the_guard_with_our_pid() -> None:
    config = ServerConfig("files", "stdio", command="npx", args=("-y", "server-files"))
    executable, args = stdio_command(config, parent_pid=4242)
    assert executable == sys.executable and str(GUARD_SCRIPT) in args
    assert args[args.index("--parent-pid") + 1] == "4242"
    assert args[args.index("--") + 1:] == ["npx", "-y", "server-files"]


def test_a_command_is_found_on_the_path_given_or_reported_missing(tmp_path: Path) -> None:
    tool = tmp_path / "bin" / "my-server"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    on_path = ServerConfig("a", "stdio", command="my-server", env={"PATH": str(tool.parent)})
    assert resolve_command(on_path) == str(tool)
    assert resolve_command(ServerConfig("b", "stdio", command="no-such-mcp-server-x")) is None
    relative = ServerConfig("c", "stdio", command="./bin/my-server", cwd=str(tmp_path))
    assert resolve_command(relative) == str(tmp_path / "bin" / "my-server")
    tool.chmod(0o644)  # there but not runnable
    assert resolve_command(relative) is None


def test_the_stderr_tail_keeps_the_last_lines_and_sees_the_end() -> None:
    ended: list[bool] = []
    tail = _StderrTail(lambda: ended.append(True))
    for i in range(STDERR_TAIL_LINES + 5):
        tail.writer.write(f"line {i}\n")
    tail.writer.write("partial")
    tail.close_writer()
    assert tail.closed.wait(10) and ended == [True]
    lines = tail.text().splitlines()
    assert lines[-1] == "partial" and lines[0] == "line 5"
    assert len(lines) == STDERR_TAIL_LINES + 1
