"""What a finished turn costs the window on a long chat: from the turn's last event reaching
the window to the window settled (the chat, its header, the chat list, the costs, every read
it set going done), on a chat of 2,000 messages with a ledger row per reply, against a
loopback server. Side by side in one window, turn by turn: drawn from the turn's changes
(now), and the way it was before, where the window read the whole chat again after the turn
(the same window with the changes withheld, so it takes that path: the chat reloaded from the
store and drawn again, the costs and the picker's reachability read from the store).

A version switch on the same chat is measured the same way, from the click to the window
settled: HEAD moved across the graph on screen (now) against the service reading the chat,
moving HEAD and reading it again for the window to draw (before).

Writes build/bench/turn_redraw.json: turn_redraw_ms (from the changes), turn_redraw_reload_ms
(reading the chat again), turn_redraw_ratio (the first over the second: below 1 is faster),
the loads of the whole chat per turn in each way (chat_loads_per_turn,
chat_loads_per_turn_reload), and version_switch_ms, version_switch_reload_ms and
version_switch_ratio."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QApplication
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.services.models.catalog import ModelChoice
from treechat.services.turns.events import EventSink, TurnEvent, TurnFinished
from treechat.services.turns.sessions import SessionView
from treechat.store import usage as ledger
from treechat.store.database import Store, default_store_path

from .bench_window import close_window, open_window

pytestmark = [pytest.mark.bench, pytest.mark.timeout(1800),
              pytest.mark.qt_log_ignore("This plugin does not support")]

MESSAGES = 2000
TURNS = 12  # in each way, alternating
SWITCHES = 8  # version switches in each way, alternating
MODEL = "openai/loopback-model"


def seed(data_dir: Path) -> None:
    """One chat of MESSAGES messages, question and answer in turn, each answer with the
    ledger row of the request that wrote it."""
    store = Store.open(default_store_path(data_dir))
    try:
        store.call(lambda r: r.create_session(
            Session("long", "A long chat", None, MODEL, 1.0, updated_at=1.0)))
        nodes: list[Node] = []
        prev = None
        for i in range(MESSAGES):
            role = "user" if i % 2 == 0 else "assistant"
            text = (f"Question {i}: how does the cache keep its prefix?" if role == "user"
                    else f"Answer {i}: stable parts first, the volatile digest last. " * 3)
            node = Node(f"n{i:05d}", 0, 1.0 + i, "long", role, output=text, predecessor=prev,
                        name=MODEL if role == "assistant" else "")
            nodes.append(node)
            prev = node.id
        store.call(lambda r: r.apply_change("long", Change(tuple(nodes), prev), 1.0 + MESSAGES))
        for node in nodes[1::2]:
            row = ledger.UsageRecord(f"u-{node.id}", "long", MODEL, node.created_at,
                                     input_tokens=900, output_tokens=60, priced=False,
                                     head=node.id)
            store.call(lambda r, row=row: ledger.record_usage(r, row))
    finally:
        store.close()


async def until(predicate: Callable[[], object], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.001)


def test_turn_redraw(tmp_path: Path, qapp: QApplication, bench_report) -> None:  # type: ignore[no-untyped-def]
    from treechat.providers import llm

    data_dir = tmp_path / "data"
    seed(data_dir)
    provider = LoopbackProvider()
    bench = open_window(qapp, data_dir, ModelChoice(MODEL, "Loopback", "openai",
                                                    api_base=provider.openai_base))
    loop, window, controller = bench.loop, bench.window, bench.controller
    chat, turns = bench.services.chat, controller.turns
    finished: list[str] = []
    controller.turnFinished.connect(finished.append)

    # When the turn's last event reaches the window: the sink the window hands each turn,
    # timed as it passes the event on.
    ended: list[float] = []
    make_sink = turns.sink

    def timed_sink(session_id: str) -> EventSink:
        inner = make_sink(session_id)

        def sink(event: TurnEvent) -> None:
            if isinstance(event, TurnFinished):
                ended.append(time.perf_counter())
            inner(event)

        return sink

    turns.sink = timed_sink  # type: ignore[method-assign]

    # Loads of the whole chat, counted through the service's own method.
    loads = [0]
    load_view: Callable[[str], Awaitable[SessionView]] = chat.sessions.view

    async def counted_view(session_id: str) -> SessionView:
        loads[0] += 1
        return await load_view(session_id)

    chat.sessions.view = counted_view  # type: ignore[method-assign]

    # The way before: the turn's last event passes on as the loop left it, with no session
    # row or usage rows read back, so the window reads the chat again after the turn.
    delivered = chat._delivered

    def withheld(sink: EventSink, run: Callable[[EventSink], Awaitable[Node | None]]
                 ) -> Awaitable[Node | None]:
        return run(sink)

    times: dict[str, list[float]] = {"changes": [], "reload": []}
    switches: dict[str, list[float]] = {"changes": [], "reload": []}
    reads: dict[str, list[int]] = {"changes": [], "reload": []}

    async def turn(i: int, way: str) -> None:
        chat._delivered = delivered if way == "changes" else withheld  # type: ignore[method-assign]
        provider.queue(Reply(text=f"Reply {i}: keep the stable parts first."))
        done = len(finished)
        window.composer.set_text(f"Turn {i}: and the digest?")
        window.composer.submit()
        await until(lambda: len(ended) > i)
        loads[0] = 0
        await until(lambda: len(finished) > done and not turns.is_running())
        await controller.tasks.idle()
        settled = time.perf_counter()
        times[way].append((settled - ended[i]) * 1000)
        reads[way].append(loads[0])
        view = controller.current_view
        assert view is not None and view.path[-1].text.startswith(f"Reply {i}:")
        await asyncio.sleep(0.9)  # the next cost's estimate after its pause, out of the way

    async def scenario() -> None:
        await llm.ensure_loaded()
        await controller.start(open_session="long")
        await until(lambda: controller.current_session_id == "long")
        await controller.tasks.idle()
        assert controller.current_view is not None
        assert len(controller.current_view.path) == MESSAGES
        for i in range(2 * TURNS + 2):
            way = "changes" if i % 2 == 0 else "reload"
            await turn(i, way)
        for way, taken in times.items():  # the first of each way warms up what it uses
            del taken[0]
            del reads[way][0]
        # a version switch: HEAD moved across the graph on screen, against the way before
        # (the service reads the chat, moves HEAD, reads it again; the window draws that)
        provider.queue(Reply(text="Another version."))
        done = len(finished)
        turns.retry()
        await until(lambda: len(finished) > done and not turns.is_running())
        await controller.tasks.idle()
        for i in range(2 * SWITCHES + 2):
            view = controller.current_view
            assert view is not None
            node = view.path[-1]
            target = 1 if view.version(node.id)[0] == 2 else 2
            way = "changes" if i % 2 == 0 else "reload"
            t0 = time.perf_counter()
            if way == "changes":
                controller.graph_ops.switch_version(node.id, target)
                await until(lambda v=view: controller.current_view is not v)
            else:
                updated = await chat.sessions.switch_version(view.session.id, node.id, target)
                controller.redraw(updated)
                await controller.occupancy.refresh()
            await controller.tasks.idle()
            if i >= 2:
                switches[way].append((time.perf_counter() - t0) * 1000)
            await asyncio.sleep(0.9)

    try:
        loop.run_until_complete(asyncio.wait_for(scenario(), 1500))
    finally:
        close_window(bench)
        provider.stop()

    now, before = statistics.median(times["changes"]), statistics.median(times["reload"])
    figures: dict[str, Any] = {
        "turn_redraw_ms": now,
        "turn_redraw_reload_ms": before,
        "turn_redraw_ratio": now / before,
        "chat_loads_per_turn": statistics.mean(reads["changes"]),
        "chat_loads_per_turn_reload": statistics.mean(reads["reload"]),
        "version_switch_ms": statistics.median(switches["changes"]),
        "version_switch_reload_ms": statistics.median(switches["reload"]),
        "messages": float(MESSAGES),
    }
    figures["version_switch_ratio"] = (figures["version_switch_ms"]
                                       / figures["version_switch_reload_ms"])
    rows = [
        ("drawn from the turn's changes", now, min(times["changes"]),
         figures["chat_loads_per_turn"]),
        ("the chat read again (before)", before, min(times["reload"]),
         figures["chat_loads_per_turn_reload"]),
        ("ratio", now / before, min(times["changes"]) / min(times["reload"]), ""),
        ("version switch, the graph on screen", figures["version_switch_ms"],
         min(switches["changes"]), ""),
        ("version switch, the chat read twice (before)", figures["version_switch_reload_ms"],
         min(switches["reload"]), ""),
        ("ratio", figures["version_switch_ratio"],
         min(switches["changes"]) / min(switches["reload"]), ""),
    ]
    bench_report("turn_redraw", figures, rows,
                 ("a turn's end on a 2,000-message chat", "median ms", "best ms",
                  "chat loads per turn"))
    assert figures["chat_loads_per_turn"] == 0
