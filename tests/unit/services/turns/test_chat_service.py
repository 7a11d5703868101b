"""Chat turns through real parts: a real DuckDB file, the real engine, litellm over HTTP to the
loopback provider. What a user sees: the message is kept, the reply streams, versions switch
without a request, stopping keeps the text, errors explain themselves, tools become nodes, and
every time written is the services' clock's."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.chat import Events, loopback_services
from tests.support.clock import FakeClock
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.core import dag
from treechat.services.bootstrap import Services
from treechat.services.turns.events import (
    NodeAdded,
    TurnFailed,
    TurnFinished,
)
from treechat.store import usage as ledger


@pytest.fixture
def provider(loopback: LoopbackProvider) -> LoopbackProvider:
    return loopback


@pytest_asyncio.fixture
async def services(tmp_path: Path, provider: LoopbackProvider) -> AsyncIterator[Services]:
    async with loopback_services(tmp_path, provider) as built:
        yield built


@pytest.mark.asyncio
async def test_send_streams_a_reply_and_records_usage(
    services: Services, provider: LoopbackProvider
) -> None:
    provider.queue(Reply(text="Hello there, human."))
    session = await services.chat.sessions.create()
    events = Events()
    node = await services.chat.send(session.id, "Say hello", on_event=events)
    assert node is not None and node.output == "Hello there, human."
    assert events.text() == "Hello there, human."
    (finished,) = events.of(TurnFinished)
    assert finished.occupancy.basis == "measured"
    view = await services.chat.sessions.view(session.id)
    assert [n.role for n in view.path] == ["user", "assistant"]
    assert view.path[0].output == "Say hello"
    body = provider.requests[-1].body
    assert body["messages"][-1]["content"] == "Say hello" or "Say hello" in str(
        body["messages"][-1]
    )
    record = services.store.call(lambda r: ledger.last_measurement(r, session.id))
    assert record is not None and record.input_tokens == provider.requests[-1].prompt_tokens


@pytest.mark.asyncio
async def test_retry_then_switch_versions_without_a_request(
    services: Services, provider: LoopbackProvider
) -> None:
    provider.queue(Reply(text="first answer"), Reply(text="second answer"))
    session = await services.chat.sessions.create()
    first = await services.chat.send(session.id, "question")
    assert first is not None
    second = await services.chat.retry(session.id, first.id)
    assert second is not None and second.output == "second answer"
    sent = len(provider.requests)
    view = await services.chat.sessions.switch_version(session.id, second.id, 1)
    assert view.head == first.id
    view = await services.chat.sessions.switch_version(session.id, first.id, 2)
    assert view.head == second.id and view.version(second.id) == (2, 2)
    assert len(provider.requests) == sent


@pytest.mark.asyncio
async def test_stop_mid_stream_keeps_the_text_once(
    services: Services, provider: LoopbackProvider
) -> None:
    provider.queue(Reply(text=" ".join(f"w{i}" for i in range(400)), tokens_per_second=80))
    session = await services.chat.sessions.create()
    events = Events()
    task = asyncio.ensure_future(services.chat.send(session.id, "long please", on_event=events))
    for _ in range(500):
        await asyncio.sleep(0.02)
        if len(events.text()) > 20:
            break
    services.chat.stop(session.id)
    node = await task
    assert node is not None and node.interrupted
    assert node.output == events.text() and node.output.startswith("w0 w1")
    view = await services.chat.sessions.view(session.id)
    assert [n.role for n in view.path] == ["user", "assistant"]
    assert services.store.call(lambda r: r.drafts()) == ()
    provider.wait_for_requests(1)
    for _ in range(200):
        if provider.requests[0].disconnected or provider.requests[0].finished:
            break
        await asyncio.sleep(0.02)
    assert provider.requests[0].disconnected


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (Reply(status=429, retry_after=7), "rate_limit"),
        (Reply(status=500), "server"),
        (Reply(status=401), "auth"),
    ],
)
async def test_errors_explain_themselves_and_keep_the_message(
    services: Services, provider: LoopbackProvider, reply: Reply, kind: str
) -> None:
    provider.queue(reply)
    session = await services.chat.sessions.create()
    events = Events()
    node = await services.chat.send(session.id, "my carefully typed words", on_event=events)
    assert node is None
    (failed,) = events.of(TurnFailed)
    assert failed.error.kind == kind and failed.error.message
    if kind == "rate_limit":
        assert failed.error.retry_after == pytest.approx(7, abs=1)
        assert failed.error.action == "wait"
    view = await services.chat.sessions.view(session.id)
    assert [n.output for n in view.path] == ["my carefully typed words"]


@pytest.mark.asyncio
async def test_cut_stream_keeps_partial_text_as_interrupted(
    services: Services, provider: LoopbackProvider
) -> None:
    provider.queue(Reply(text=" ".join(f"p{i}" for i in range(50)), cut_after=10))
    session = await services.chat.sessions.create()
    events = Events()
    await services.chat.send(session.id, "go", on_event=events)
    (failed,) = events.of(TurnFailed)
    assert failed.partial is not None and failed.partial.interrupted
    assert failed.partial.output == events.text() != ""


@pytest.mark.asyncio
async def test_tool_loop_writes_tool_nodes_with_caller_edges(
    services: Services, provider: LoopbackProvider
) -> None:
    provider.reply_with_tool_calls([{"name": "todo_create", "arguments": {"title": "Buy milk"}}])
    provider.reply_with_tool_calls([{"name": "todo_list", "arguments": {}}])
    provider.queue(Reply(text="Done: one todo."))
    session = await services.chat.sessions.create()
    events = Events()
    final = await services.chat.send(session.id, "track milk", on_event=events)
    assert final is not None and final.output == "Done: one todo."
    view = await services.chat.sessions.view(session.id)
    roles = [n.role for n in view.path]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    tools = [n for n in view.path if n.role == "tool"]
    assert all(t.caller is not None and t.predecessor is None for t in tools)
    assert "Buy milk" in tools[1].text
    assert len(events.of(NodeAdded)) == 4
    # The third request carried both tool results, paired with their calls.
    last = provider.requests[-1].body["messages"]
    assert [m["role"] for m in last if m["role"] == "tool"] == ["tool", "tool"]
    assert len(provider.requests) == 3


@pytest.mark.asyncio
async def test_edit_and_retry_are_refused_while_a_turn_runs(
    services: Services, provider: LoopbackProvider
) -> None:
    provider.queue(Reply(text="slow " * 200, tokens_per_second=100))
    session = await services.chat.sessions.create()
    task = asyncio.ensure_future(services.chat.send(session.id, "hi"))
    for _ in range(200):
        await asyncio.sleep(0.02)
        if services.chat.is_running(session.id) and provider.requests:
            break
    events = Events()
    view = await services.chat.sessions.view(session.id)
    user = view.path[0]
    assert await services.chat.edit(session.id, user.id, "changed", on_event=events) is None
    assert await services.chat.retry(session.id, user.id, on_event=events) is None
    assert [e.error.kind for e in events.of(TurnFailed)] == ["busy", "busy"]
    services.chat.stop(session.id)
    await task
    graph_users = [
        n for n in (await services.chat.sessions.view(session.id)).graph if n.role == "user"
    ]
    assert len(graph_users) == 1
    assert dag.version_of((await services.chat.sessions.view(session.id)).graph, user.id) == (1, 1)


@pytest.mark.asyncio
async def test_tool_results_age_in_later_requests_but_todos_never_do(
    services: Services, provider: LoopbackProvider, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(
        "\n".join(f"line {i}: the quick brown fox jumps" for i in range(120))
    )
    services.chat.config.workspace = workspace
    # By default old results age with the next compaction; this chat stays small, so age
    # them in batches between compactions instead (the engine's other mode).
    engine = services.engine
    engine.config = dataclasses.replace(
        engine.config, rules=dataclasses.replace(engine.config.rules, aging_batch_turns=4)
    )
    provider.reply_with_tool_calls(
        [
            {"name": "read_file", "arguments": {"path": "notes.txt"}},
            {"name": "todo_create", "arguments": {"title": "Summarise the notes"}},
        ]
    )
    provider.queue(Reply(text="Read it."))
    session = await services.chat.sessions.create()
    await services.chat.send(session.id, "read my notes")

    def tool_messages() -> dict[str, str]:
        body = provider.requests[-1].body["messages"]
        calls = {
            c["id"]: c["function"]["name"]
            for m in body
            if m["role"] == "assistant"
            for c in m.get("tool_calls") or []
        }
        return {calls[m["tool_call_id"]]: str(m["content"]) for m in body if m["role"] == "tool"}

    provider.queue(Reply(text="ok"))
    await services.chat.send(session.id, "next")
    fresh = tool_messages()
    assert "line 119: the quick brown fox" in fresh["read_file"]

    for i in range(8):
        provider.queue(Reply(text=f"answer {i}"))
        await services.chat.send(session.id, f"question {i}")
    later = tool_messages()
    assert "line 119" not in later["read_file"] and "aged" in later["read_file"]
    assert later["todo_create"] == fresh["todo_create"]  # protected tools never age
    # The graph still holds the whole result: aging only changes what is sent.
    view = await services.chat.sessions.view(session.id)
    (node,) = [n for n in view.graph if n.name == "read_file"]
    assert "line 119: the quick brown fox" in node.text


@pytest.mark.asyncio
async def test_two_quick_sends_start_one_turn(
    services: Services, provider: LoopbackProvider
) -> None:
    provider.queue(Reply(text="only once"))
    session = await services.chat.sessions.create()
    events = Events()
    first, second = await asyncio.gather(
        services.chat.send(session.id, "double-clicked", on_event=events),
        services.chat.send(session.id, "double-clicked", on_event=events),
    )
    assert [first is None, second is None].count(True) == 1
    assert [e.error.kind for e in events.of(TurnFailed)] == ["busy"]
    assert len(provider.requests) == 1
    view = await services.chat.sessions.view(session.id)
    assert [n.output for n in view.path] == ["double-clicked", "only once"]


@pytest.mark.asyncio
async def test_a_turn_is_stamped_with_the_time_of_the_services_clock(
    tmp_path: Path, provider: LoopbackProvider
) -> None:
    clock = FakeClock.at_local(2027, 5, 3, 23, 59, 30)
    async with loopback_services(tmp_path, provider, clock=clock) as built:
        assert built.clock is clock and built.chat.sessions.clock is clock
        session = await built.chat.sessions.create()
        assert session.created_at == clock.now()
        clock.advance(45)  # past midnight: the reply belongs to the next day
        provider.queue(Reply(text="Good morning."))
        reply = await built.chat.send(session.id, "Still up?")
        assert reply is not None and reply.output == "Good morning."
        view = await built.chat.sessions.view(session.id)
        assert [n.created_at for n in view.path] == [clock.now(), clock.now()]
        assert view.session.updated_at == clock.now()
        (request,) = built.store.call(lambda r: ledger.session_usage(r, session.id))
        assert request.created_at == clock.now()


@pytest.mark.asyncio
async def test_each_verb_ends_with_what_it_changed(
    services: Services, provider: LoopbackProvider
) -> None:
    provider.queue(Reply(text="first"), Reply(text="second"))
    session = await services.chat.sessions.create()
    sent = Events()
    reply = await services.chat.send(session.id, "question", on_event=sent)
    assert reply is not None
    (finished,) = sent.of(TurnFinished)
    changes = finished.changes
    assert changes is not None and changes.session_id == session.id
    assert [n.role for n in changes.nodes] == ["user", "assistant"]
    assert changes.head == reply.id == (await services.chat.sessions.view(session.id)).head
    rows = services.store.call(lambda r: ledger.session_usage(r, session.id))
    assert changes.usage == tuple(row.id for row in rows)
    retried = Events()
    second = await services.chat.retry(session.id, reply.id, on_event=retried)
    assert second is not None
    (again,) = retried.of(TurnFinished)
    assert again.changes is not None and again.changes.node_ids == (second.id,)
    assert again.changes.head == second.id and len(again.changes.usage) == 1
