"""Tool calls run in order and are written as tool nodes under the reply that asked for
them; a stop while one runs writes that call as cancelled and ends the runs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from treechat.core.clock import SYSTEM_CLOCK
from treechat.core.model import Node, Session
from treechat.providers import stream as provider_stream
from treechat.services.models.catalog import Endpoint
from treechat.services.turns.changes import ChangeLog
from treechat.services.turns.events import NodeAdded, TurnEvent
from treechat.services.turns.tool_runs import ToolRuns
from treechat.services.turns.turn import Turn
from treechat.store.database import Store
from treechat.tools.base import JSONSchema, ToolBox, ToolResult, object_schema


class Echo:
    """Answers with its argument, or waits until `release` is set when told to."""

    name = "echo"
    description = "Say it back."
    parameters: JSONSchema = object_schema({"text": {"type": "string"}})

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        if args.get("text") == "wait":
            self.started.set()
            await self.release.wait()
        return ToolResult.success(str(args.get("text")))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "tools.duckdb")
    s.call(lambda r: r.create_session(Session("s", "t", None, "m", 0.0)))
    yield s
    s.close()


def _reply(store: Store) -> Node:
    reply = Node(id="r", seq=0, created_at=0.0, session_id="s", role="assistant", output="")
    (stored,) = store.call(lambda r: r.append_nodes([reply]))
    return stored


def _call(call_id: str, text: str) -> provider_stream.ToolCall:
    return provider_stream.ToolCall(0, call_id, "echo", f'{{"text": "{text}"}}')


@pytest.mark.asyncio
async def test_each_call_becomes_a_node_under_the_reply(store: Store) -> None:
    ids = iter(["t1", "t2"])
    runs = ToolRuns(store, clock=SYSTEM_CLOCK, make_id=lambda: next(ids))
    events: list[TurnEvent] = []
    turn = Turn("s", Endpoint("openai/m", "M", 4096, 512), ToolBox([Echo()]), events.append,
                ChangeLog("s"))
    reply = _reply(store)
    assert await runs.run(turn, reply, [_call("c1", "one"), _call("c2", "two")])
    nodes = [e.node for e in events if isinstance(e, NodeAdded)]
    assert [(n.id, n.caller, n.output, n.metadata["tool_call_id"]) for n in nodes] == [
        ("t1", "r", "one", "c1"), ("t2", "r", "two", "c2")]
    assert turn.changes().node_ids == ("t1", "t2") and turn.changes().head is None


@pytest.mark.asyncio
async def test_a_stop_during_a_call_writes_it_as_cancelled(store: Store) -> None:
    runs = ToolRuns(store, clock=SYSTEM_CLOCK, make_id=lambda: "t1")
    echo = Echo()
    events: list[TurnEvent] = []
    turn = Turn("s", Endpoint("openai/m", "M", 4096, 512), ToolBox([echo]), events.append,
                ChangeLog("s"))
    reply = _reply(store)
    task = asyncio.ensure_future(runs.run(turn, reply, [_call("c1", "wait"),
                                                        _call("c2", "never")]))
    await echo.started.wait()
    task.cancel()
    assert await task is False
    (added,) = [e.node for e in events if isinstance(e, NodeAdded)]
    assert added.metadata["ok"] is False and "cancelled" in added.output
    assert store.call(lambda r: r.get_node("t1")) is not None
