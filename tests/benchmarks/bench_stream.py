"""Streaming benchmark: client overhead per streamed token (server's chunk -> event handed to the
UI layer) and event-loop lag (a 10 ms timer) while streaming 500 tokens/s and while litellm
warms up. Baselines run side by side: the same stream read with bare httpx, and the same timer
on an idle loop. The provider runs in its own process, as a real one would."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from treechat.providers import llm
from treechat.providers.stream import (
    StreamEvent,
    TextDelta,
    TurnRequest,
    shutdown_provider_loop,
    stream_turn,
)

pytestmark = pytest.mark.bench

ROOT = Path(__file__).resolve().parents[2]
RATE = 500.0
TOKENS = 4000
TICK = 0.010

SERVER_CHILD = textwrap.dedent("""
    import json, sys
    from tests.support.loopback_server import LoopbackProvider, Reply
    server = LoopbackProvider(tokens_per_second=float(sys.argv[1]))
    print(server.port, flush=True)
    for line in sys.stdin:
        command, _, arg = line.strip().partition(" ")
        if command == "queue":
            words = "alpha bravo charlie delta echo foxtrot golf hotel india juliet".split()
            server.queue(Reply(text="".join(" " + words[i % len(words)] for i in range(int(arg)))))
            print("ok", flush=True)
        elif command == "times":
            print(json.dumps(server.requests[-1].piece_times), flush=True)
        else:
            break
    server.stop()
""")

WARMUP_CHILD = textwrap.dedent("""
    import asyncio, json, time
    TICK = 0.010

    async def ticker(lags, stop):
        while not stop.is_set():
            start = time.perf_counter()
            await asyncio.sleep(TICK)
            lags.append((time.perf_counter() - start - TICK) * 1000)

    async def main():
        idle, warm = [], []
        stop = asyncio.Event()
        task = asyncio.create_task(ticker(idle, stop))
        await asyncio.sleep(1.5)
        stop.set(); await task
        from treechat.providers import llm
        stop = asyncio.Event()
        task = asyncio.create_task(ticker(warm, stop))
        began = time.perf_counter()
        await llm.ensure_loaded()
        seconds = time.perf_counter() - began
        stop.set(); await task
        print(json.dumps({"idle": idle, "warm": warm, "seconds": seconds}))

    asyncio.run(main())
""")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class ServerProcess:
    def __init__(self, rate: float) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "desktop"), str(ROOT)])}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER_CHILD, str(rate)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=env,
        )
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    def ask(self, line: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline()

    def close(self) -> None:
        self.ask("quit")
        self.proc.wait(timeout=30)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


async def _measure_lag(run: Callable[[], Any]) -> list[float]:
    lags: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            start = time.perf_counter()
            await asyncio.sleep(TICK)
            lags.append((time.perf_counter() - start - TICK) * 1000)

    task = asyncio.create_task(ticker())
    try:
        await run()
    finally:
        stop.set()
        await task
    return lags


def _overheads(server_times: list[float], client_times: list[float]) -> list[float]:
    n = min(len(server_times), len(client_times))
    assert n >= TOKENS * 0.9, (len(server_times), len(client_times))
    return [(client_times[i] - server_times[i]) * 1000 for i in range(n)]


async def _stream_with_litellm(server: ServerProcess) -> tuple[list[float], list[float]]:
    server.ask(f"queue {TOKENS}")
    arrivals: list[float] = []

    def on_event(event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            arrivals.append(time.perf_counter())

    async def run() -> None:
        result = await stream_turn(
            TurnRequest(
                model="openai/gpt-4o",
                messages=[{"role": "user", "content": "stream"}],
                api_base=f"http://127.0.0.1:{server.port}/v1",
                api_key="sk-bench",
            ),
            on_event=on_event,
        )
        assert result.ok, result.error

    lags = await _measure_lag(run)
    return lags, _overheads(json.loads(server.ask("times")), arrivals)


async def _stream_with_httpx(server: ServerProcess) -> tuple[list[float], list[float]]:
    server.ask(f"queue {TOKENS}")
    arrivals: list[float] = []

    async def run() -> None:
        async with (
            httpx.AsyncClient(timeout=60) as client,
            client.stream(
                "POST",
                f"http://127.0.0.1:{server.port}/v1/chat/completions",
                json={
                    "model": "gpt-4o",
                    "stream": True,
                    "messages": [{"role": "user", "content": "s"}],
                },
            ) as response,
        ):
            async for line in response.aiter_lines():
                if not line.startswith("data: {"):
                    continue
                choices = json.loads(line[6:]).get("choices") or [{}]
                if choices[0].get("delta", {}).get("content"):
                    arrivals.append(time.perf_counter())

    lags = await _measure_lag(run)
    return lags, _overheads(json.loads(server.ask("times")), arrivals)


def test_stream_overhead_and_event_loop_lag(bench_report: Callable[..., Path]) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "desktop"), str(ROOT)])}
    cold = subprocess.run(
        [sys.executable, "-c", WARMUP_CHILD],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )
    warm = json.loads(cold.stdout.strip().splitlines()[-1])

    server = ServerProcess(RATE)
    try:

        async def both() -> tuple[tuple[list[float], list[float]], tuple[list[float], list[float]]]:
            await llm.ensure_loaded()
            await _stream_with_litellm(server)  # first call pays one-time setup; not measured
            ours = await _stream_with_litellm(server)
            bare = await _stream_with_httpx(server)
            return ours, bare

        (stream_lags, overhead), (httpx_lags, httpx_overhead) = asyncio.run(both())
    finally:
        shutdown_provider_loop()
        server.close()

    figures = {
        "stream_lag_p99_ms": pct(stream_lags, 0.99),
        "stream_lag_max_ms": max(stream_lags),
        "warmup_lag_p99_ms": pct(warm["warm"], 0.99),
        "warmup_lag_max_ms": max(warm["warm"]),
        "idle_lag_p99_ms": pct(warm["idle"], 0.99),
        "httpx_stream_lag_p99_ms": pct(httpx_lags, 0.99),
        "warmup_seconds": warm["seconds"],
        "overhead_per_token_ms": statistics.mean(overhead),
        "overhead_p99_ms": pct(overhead, 0.99),
        "httpx_overhead_per_token_ms": statistics.mean(httpx_overhead),
        "stream_lag_ratio_vs_httpx": pct(stream_lags, 0.99) / max(pct(httpx_lags, 0.99), 1e-6),
        "overhead_ratio_vs_httpx": statistics.mean(overhead)
        / max(statistics.mean(httpx_overhead), 1e-6),
    }
    rows = [
        ("event-loop lag p99, streaming 500 tok/s (ms)", figures["stream_lag_p99_ms"], 20.0),
        ("event-loop lag p99, litellm warming up (ms)", figures["warmup_lag_p99_ms"], 50.0),
        ("event-loop lag p99, idle loop (ms)", figures["idle_lag_p99_ms"], float("nan")),
        (
            "event-loop lag p99, bare httpx stream (ms)",
            figures["httpx_stream_lag_p99_ms"],
            float("nan"),
        ),
        ("client overhead per token (ms)", figures["overhead_per_token_ms"], float("nan")),
        (
            "bare httpx overhead per token (ms)",
            figures["httpx_overhead_per_token_ms"],
            float("nan"),
        ),
        ("litellm warm-up (s)", figures["warmup_seconds"], float("nan")),
    ]
    bench_report("stream", figures, rows, header=("figure", "measured", "target"))
