"""The MCP runtime against real servers built with the SDK (stdio and streamable HTTP): start,
list, call, and every way a server lets a call down ends that call with a clear error."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.mcp_fixtures import http_server, stdio_config
from tests.support.processes import gone

from treechat.tools.mcp.config import ServerConfig
from treechat.tools.mcp.runtime import McpCallError, McpRuntime


@pytest.fixture
def runtime() -> Iterator[McpRuntime]:
    rt = McpRuntime()
    try:
        yield rt
    finally:
        rt.close()


@pytest.mark.asyncio
async def test_a_stdio_server_lists_and_answers(runtime: McpRuntime) -> None:
    state = await runtime.start(stdio_config("alpha", "alpha-knows-7741"))
    assert state.status == "ready", state.error
    assert [t.name for t in state.tools] == [
        "add", "explode", "learn", "lines", "more_lines", "secret_value", "slow", "whoami"
    ]
    assert all(t.problem is None for t in state.tools)
    assert state.started_ms is not None and state.started_ms > 0
    assert "alpha starting" in state.stderr_tail
    assert [p.name for p in state.prompts] == ["review"]
    assert state.prompts[0].arguments[0].name == "topic"
    assert [r.uri for r in state.resources] == ["note://readme"]

    outcome = await runtime.call_tool("alpha", "secret_value", {})
    assert (outcome.ok, outcome.text) == (True, "alpha-knows-7741")
    assert (await runtime.call_tool("alpha", "add", {"a": 2, "b": 40})).text == "42"
    failed = await runtime.call_tool("alpha", "explode", {})
    assert failed.ok is False and "explode" in failed.text
    (message,) = await runtime.get_prompt("alpha", "review", {"topic": "the plan"})
    assert message.role == "user" and "Please review the plan carefully" in message.text
    assert await runtime.read_resource("alpha", "note://readme") == "The alpha server's readme."


@pytest.mark.asyncio
async def test_a_hanging_call_times_out_and_the_server_keeps_working(
    runtime: McpRuntime,
) -> None:
    config = stdio_config("slowpoke", "sp", call_timeout=3.0)
    assert (await runtime.start(config)).status == "ready"
    with pytest.raises(McpCallError, match="did not answer the call to slow within 3 s"):
        await runtime.call_tool("slowpoke", "slow", {"seconds": 30})
    assert (await runtime.call_tool("slowpoke", "secret_value", {})).text == "sp"


@pytest.mark.asyncio
async def test_a_server_killed_mid_call_fails_that_call_and_can_restart(
    runtime: McpRuntime,
) -> None:
    config = stdio_config("victim", "v1")
    assert (await runtime.start(config)).status == "ready"
    pid = int((await runtime.call_tool("victim", "whoami", {})).text)
    call = asyncio.ensure_future(runtime.call_tool("victim", "slow", {"seconds": 60}))
    await asyncio.sleep(1.0)
    os.kill(pid, 9)
    with pytest.raises(McpCallError, match="stopped answering during the call to slow"):
        await asyncio.wait_for(call, 30)
    state = runtime.state("victim")
    assert state.status == "failed" and state.error
    with pytest.raises(McpCallError, match="victim server is failed"):
        await runtime.call_tool("victim", "secret_value", {})
    assert (await runtime.restart(config)).status == "ready"
    assert (await runtime.call_tool("victim", "secret_value", {})).text == "v1"


@pytest.mark.asyncio
async def test_garbage_on_stdout_does_not_break_the_server(runtime: McpRuntime) -> None:
    state = await runtime.start(stdio_config("noisy", "n0", "--garbage"))
    assert state.status == "ready", state.error
    assert (await runtime.call_tool("noisy", "secret_value", {})).text == "n0"


@pytest.mark.asyncio
async def test_a_missing_command_fails_clearly_without_spawning(runtime: McpRuntime) -> None:
    state = await runtime.start(ServerConfig("ghost", "stdio", command="no-such-mcp-server-x"))
    assert state.status == "failed"
    assert "command not found: 'no-such-mcp-server-x' is not on PATH" in state.error
    missing_dir = ServerConfig("lost", "stdio", command=sys.executable, cwd="/no/such/folder")
    state = await runtime.start(missing_dir)
    assert state.status == "failed" and "/no/such/folder does not exist" in state.error


@pytest.mark.asyncio
async def test_a_server_that_exits_at_once_shows_what_it_said(runtime: McpRuntime) -> None:
    config = ServerConfig(
        "quitter",
        "stdio",
        command=sys.executable,
        args=("-c", "import sys; print('missing API key QX', file=sys.stderr); sys.exit(3)"),
    )
    state = await runtime.start(config)
    assert state.status == "failed"
    assert "closed the connection" in state.error
    assert "missing API key QX" in state.stderr_tail


@pytest.mark.asyncio
async def test_cancelling_a_call_leaves_the_server_usable(runtime: McpRuntime) -> None:
    assert (await runtime.start(stdio_config("calm", "c4"))).status == "ready"
    call = asyncio.ensure_future(runtime.call_tool("calm", "slow", {"seconds": 30}))
    await asyncio.sleep(1.0)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert (await runtime.call_tool("calm", "secret_value", {})).text == "c4"


@pytest.mark.asyncio
async def test_close_stops_the_servers() -> None:
    runtime = McpRuntime()
    try:
        assert (await runtime.start(stdio_config("brief", "b"))).status == "ready"
        pid = int((await runtime.call_tool("brief", "whoami", {})).text)
    finally:
        await runtime.aclose()
    assert gone(pid, within=15)


@pytest.mark.asyncio
async def test_a_streamable_http_server_lists_answers_and_fails_clearly(
    runtime: McpRuntime,
) -> None:
    with http_server("beta", "beta-knows-0193") as server:
        state = await runtime.start(server.config("beta", call_timeout=30))
        assert state.status == "ready", state.error
        assert "secret_value" in [t.name for t in state.tools]
        assert (await runtime.call_tool("beta", "secret_value", {})).text == "beta-knows-0193"
        failed = await runtime.call_tool("beta", "explode", {})
        assert failed.ok is False
        (message,) = await runtime.get_prompt("beta", "review", {"topic": "x"})
        assert "(beta)" in message.text
        call = asyncio.ensure_future(runtime.call_tool("beta", "slow", {"seconds": 60}))
        await asyncio.sleep(1.0)
        server.kill()
        with pytest.raises(McpCallError, match="beta server"):
            await asyncio.wait_for(call, 45)


@pytest.mark.asyncio
async def test_an_http_server_that_is_not_there_fails_to_start(runtime: McpRuntime) -> None:
    config = ServerConfig("nobody", "http", url="http://127.0.0.1:9/mcp", start_timeout=20)
    state = await runtime.start(config)
    assert state.status == "failed" and "Connect" in state.error


@pytest.mark.asyncio
async def test_an_older_sse_server_answers(runtime: McpRuntime) -> None:
    with http_server("gamma", "gamma-knows-4", sse=True) as server:
        state = await runtime.start(server.config("gamma"))
        assert state.status == "ready", state.error
        assert (await runtime.call_tool("gamma", "secret_value", {})).text == "gamma-knows-4"


@pytest.mark.asyncio
async def test_a_server_that_never_answers_the_handshake_fails_and_is_stopped(
    runtime: McpRuntime, tmp_path: Path
) -> None:
    pid_file = tmp_path / "pid"
    script = (
        f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); "
        "time.sleep(120)"
    )
    config = ServerConfig("mute", "stdio", command=sys.executable, args=("-c", script),
                          start_timeout=3)
    state = await runtime.start(config)
    assert state.status == "failed"
    assert "did not finish starting within 3 s" in state.error
    assert gone(int(pid_file.read_text()), within=15)


@pytest.mark.asyncio
async def test_a_server_that_says_its_tools_changed_is_listed_again(
    runtime: McpRuntime,
) -> None:
    """A server adds a tool and sends `notifications/tools/list_changed`: the tools offered
    (read from the state) include it, and it can be called, without a restart."""
    assert (await runtime.start(stdio_config("learner", "l1"))).status == "ready"
    assert "greet" not in [t.name for t in runtime.state("learner").tools]
    said = await runtime.call_tool("learner", "learn", {"tool_name": "greet", "says": "hello"})
    assert said.text == "learned greet"
    for _ in range(300):  # the notice is heard and the list read again: a few ms
        if "greet" in [t.name for t in runtime.state("learner").tools]:
            break
        await asyncio.sleep(0.1)
    assert "greet" in [t.name for t in runtime.state("learner").tools]
    assert (await runtime.call_tool("learner", "greet", {})).text == "hello"
