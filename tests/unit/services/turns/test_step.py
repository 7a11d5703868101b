"""One request of a turn through real parts: what is kept and recorded when the provider
fails before any text, when the reply is stopped, and when it calls tools."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.chat import Events, loopback_services
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.core.model import Node, Session
from treechat.services.bootstrap import Services
from treechat.services.turns.events import (
    NodeAdded,
    OccupancyChanged,
    TextDelta,
    TurnFailed,
    TurnFinished,
)
from treechat.store import usage as ledger


@pytest_asyncio.fixture
async def services(tmp_path: Path, loopback: LoopbackProvider) -> AsyncIterator[Services]:
    async with loopback_services(tmp_path, loopback) as built:
        yield built


@pytest.mark.asyncio
async def test_a_failure_before_any_text_keeps_no_draft_and_records_the_request(
    services: Services, loopback: LoopbackProvider
) -> None:
    loopback.queue(Reply(status=500))
    session = await services.chat.sessions.create()
    events = Events()
    await services.chat.send(session.id, "hello", on_event=events)
    (failed,) = events.of(TurnFailed)
    assert failed.partial is None and services.store.call(lambda r: r.drafts()) == ()
    assert failed.changes is not None
    (user,) = failed.changes.nodes
    assert user.role == "user" and failed.changes.head == user.id
    (row,) = services.store.call(lambda r: ledger.session_usage(r, session.id))
    assert failed.changes.usage == (row.id,) and row.head == user.id


async def stopped_after_two_pieces(
    services: Services, loopback: LoopbackProvider
) -> tuple[Session, Node | None, Events]:
    """A reply stopped once its first pieces streamed: the chat, the node kept, the events."""
    resume = threading.Event()
    loopback.queue(Reply(text="one two three four five six", pause_after=2, resume=resume))
    session = await services.chat.sessions.create()
    events = Events()
    task = asyncio.ensure_future(services.chat.send(session.id, "go", on_event=events))
    for _ in range(500):
        await asyncio.sleep(0.02)
        if events.of(TextDelta):
            break
    services.chat.stop(session.id)
    node = await task
    resume.set()
    return session, node, events


@pytest.mark.asyncio
async def test_a_stopped_reply_is_kept_and_its_request_counted_as_estimated(
    services: Services, loopback: LoopbackProvider
) -> None:
    session, node, events = await stopped_after_two_pieces(services, loopback)
    assert node is not None and node.interrupted and node.metadata["reason"] == "stopped"
    (finished,) = events.of(TurnFinished)
    assert finished.changes is not None and finished.changes.head == node.id
    (row,) = services.store.call(lambda r: ledger.session_usage(r, session.id))
    assert row.basis == "estimated" and finished.changes.usage == (row.id,)


@pytest.mark.asyncio
async def test_a_stopped_reply_is_counted_with_the_configured_counter_when_one_is_set(
    services: Services, loopback: LoopbackProvider
) -> None:
    """A one-shot command that let go of its token tables counts a stopped reply with an
    estimate instead of loading them again."""
    counted: list[str] = []

    def estimate(text: str) -> int:
        counted.append(text)
        return 1234

    services.chat.config.count_stopped_reply = estimate
    session, node, _events = await stopped_after_two_pieces(services, loopback)
    assert node is not None and node.interrupted
    assert counted == [node.output]
    (row,) = services.store.call(lambda r: ledger.session_usage(r, session.id))
    assert row.output_tokens == 1234


@pytest.mark.asyncio
async def test_a_reply_with_tool_calls_reports_each_node_then_the_record(
    services: Services, loopback: LoopbackProvider
) -> None:
    loopback.reply_with_tool_calls([{"name": "todo_create", "arguments": {"title": "milk"}}])
    loopback.queue(Reply(text="Noted."))
    session = await services.chat.sessions.create()
    events = Events()
    final = await services.chat.send(session.id, "remember milk", on_event=events)
    assert final is not None and final.output == "Noted."
    kinds = [type(e).__name__ for e in events if isinstance(
        e, (NodeAdded, OccupancyChanged, TurnFinished))]
    # the request's record, the reply and its tool result, the record after the tools,
    # the second request's record, and the end
    assert kinds == ["OccupancyChanged", "NodeAdded", "NodeAdded", "OccupancyChanged",
                     "OccupancyChanged", "TurnFinished"]
    (finished,) = events.of(TurnFinished)
    assert finished.changes is not None
    assert [n.role for n in finished.changes.nodes] == ["user", "assistant", "tool",
                                                        "assistant"]
    assert finished.changes.head == final.id and len(finished.changes.usage) == 2


@pytest.mark.asyncio
async def test_a_one_shot_turn_is_told_when_its_request_is_counted_and_counts_nothing_after(
    services: Services, loopback: LoopbackProvider
) -> None:
    """`request_ready` hears once per request, after the count and before the provider is
    reached; with `occupancy_after_reply` off the turn ends with the occupancy of the
    request it sent, and the reply is never counted."""
    counter = services.chat.engine.counter
    ready: list[tuple[int, int]] = []  # (requests the server had, texts counted so far)
    services.chat.config.request_ready = lambda: ready.append(
        (len(loopback.requests), counter.misses))
    services.chat.config.occupancy_after_reply = False
    loopback.queue(Reply(text="a reply nobody counts here"), Reply(text="this one is counted"))
    session = await services.chat.sessions.create()
    events = Events()
    await services.chat.send(session.id, "hello", on_event=events)
    (finished,) = events.of(TurnFinished)
    (prepared,) = events.of(OccupancyChanged)
    assert [requests for requests, _ in ready] == [0]  # before the request reached the server
    assert len(loopback.requests) == 1
    assert finished.occupancy is prepared.occupancy
    assert finished.node.text == "a reply nobody counts here"
    assert counter.misses == ready[0][1]  # nothing new was counted after the request
    # the window's way: the reply is counted into the ring's figure once it is kept
    services.chat.config.occupancy_after_reply = True
    await services.chat.send(session.id, "again", on_event=Events())
    assert counter.misses > ready[1][1]
