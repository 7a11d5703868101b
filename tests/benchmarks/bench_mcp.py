"""MCP: what Treechat adds over the SDK's own client, side by side on the same server program.

`mcp_stdio_start_ms`: spawn to tools listed through our runtime (the guard launcher, the MCP
thread, the listing of tools, prompts and resources), median of alternating runs; the SDK's
own `Client` doing spawn, handshake and `list_tools` on the same server is the baseline.
`mcp_call_overhead_ms`: the median of paired differences between a tool call through our
runtime (hop to the MCP thread and back, result conversion) and the SDK client's own round
trip, calls alternating between the two so machine load falls on both alike.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from tests.support.mcp_fixtures import stdio_config

from treechat.tools.mcp.runtime import McpRuntime

pytestmark = pytest.mark.bench

START_RUNS = 5
CALLS = 200
# Our runtime keeps a server's stderr (the tail is shown on failure); the baseline's goes
# nowhere rather than to the terminal.
_DEVNULL = open(os.devnull, "w")  # noqa: SIM115


async def _sdk_start(params: StdioServerParameters) -> float:
    began = time.perf_counter()
    async with Client(stdio_client(params, errlog=_DEVNULL)) as client:
        await client.list_tools()
        elapsed = (time.perf_counter() - began) * 1000
    return elapsed


async def _ours_start(runtime: McpRuntime, n: int) -> float:
    config = stdio_config(f"start{n}", "s")
    began = time.perf_counter()
    state = await runtime.start(config)
    elapsed = (time.perf_counter() - began) * 1000
    assert state.status == "ready", state.error
    await runtime.stop(config.name)
    return elapsed


async def _measure() -> dict[str, float]:
    base = stdio_config("sdk", "s")
    params = StdioServerParameters(command=base.command, args=list(base.args))
    runtime = McpRuntime()
    try:
        sdk_starts: list[float] = []
        our_starts: list[float] = []
        for n in range(START_RUNS):
            sdk_starts.append(await _sdk_start(params))
            our_starts.append(await _ours_start(runtime, n))

        assert (await runtime.start(stdio_config("calls", "s"))).status == "ready"
        sdk_calls: list[float] = []
        our_calls: list[float] = []
        async with Client(stdio_client(params, errlog=_DEVNULL)) as client:
            for i in range(CALLS):
                args = {"a": i, "b": 1}
                began = time.perf_counter()
                answer = await client.call_tool("add", args)
                sdk_calls.append((time.perf_counter() - began) * 1000)
                assert answer.content[0].text == str(i + 1)  # type: ignore[union-attr]
                began = time.perf_counter()
                outcome = await runtime.call_tool("calls", "add", args)
                our_calls.append((time.perf_counter() - began) * 1000)
                assert outcome.text == str(i + 1)
    finally:
        await runtime.aclose()
    overhead = statistics.median(o - s for o, s in zip(our_calls, sdk_calls, strict=True))
    return {
        "mcp_stdio_start_ms": statistics.median(our_starts),
        "mcp_stdio_start_sdk_ms": statistics.median(sdk_starts),
        "mcp_stdio_start_ratio": statistics.median(our_starts) / statistics.median(sdk_starts),
        "mcp_call_ms": statistics.median(our_calls),
        "mcp_call_sdk_ms": statistics.median(sdk_calls),
        "mcp_call_overhead_ms": overhead,
        "mcp_call_ratio": statistics.median(our_calls) / statistics.median(sdk_calls),
    }


def test_mcp_start_and_call_overhead(bench_report: Callable[..., Path]) -> None:
    figures = asyncio.run(_measure())
    rows = [
        ("stdio start, spawn to tools listed (ms)", figures["mcp_stdio_start_sdk_ms"],
         figures["mcp_stdio_start_ms"], figures["mcp_stdio_start_ratio"]),
        ("tool call round trip (ms)", figures["mcp_call_sdk_ms"], figures["mcp_call_ms"],
         figures["mcp_call_ratio"]),
        ("our overhead per call (ms, median of pairs)", 0.0,
         figures["mcp_call_overhead_ms"], 0.0),
    ]
    bench_report("mcp", figures, rows, header=("measure", "SDK client", "Treechat", "ratio"))
