"""What a turn reports it changed: the nodes in the order written, the head the last
head-moving write left, the usage rows, the model switch; and, for each verb through real
parts (a DuckDB file, litellm to the loopback provider), that its last event says what the
store then holds, so a view can redraw from it alone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.chat import Events, loopback_services
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.services.bootstrap import Services
from treechat.services.turns.changes import ChangeLog, TurnChanges, read_back
from treechat.services.turns.events import TurnFailed, TurnFinished
from treechat.store import usage as ledger
from treechat.store.database import Store


def _node(node_id: str, role: str = "assistant") -> Node:
    return Node(id=node_id, seq=0, created_at=0.0, session_id="s", role=role, output=node_id)


def test_the_log_keeps_the_order_and_the_last_head() -> None:
    log = ChangeLog("s")
    log.wrote(_node("u", "user"))
    log.wrote(_node("a"))
    log.wrote(_node("t", "tool"), moves_head=False)
    log.recorded("row-1")
    changes = log.changes()
    assert changes.session_id == "s"
    assert changes.node_ids == ("u", "a", "t")
    assert changes.head == "a"  # a tool result hangs under its reply, HEAD stays there
    assert changes.usage == ("row-1",)
    assert changes.model is None and changes.wrote


def test_a_snapshot_does_not_move_with_the_log() -> None:
    log = ChangeLog("s")
    before = log.changes()
    log.wrote(_node("a"))
    log.switched_model("openai/gpt-4o")
    assert before == TurnChanges("s") and not before.wrote
    after = log.changes()
    assert after.head == "a" and after.model == "openai/gpt-4o"


def test_a_model_switch_alone_is_a_change() -> None:
    log = ChangeLog("s")
    log.switched_model("ollama/llama3.2")
    assert log.changes().wrote and log.changes().head is None


# --- what each verb's last event says it changed, against what the store then holds ------


@pytest.fixture
def provider(loopback: LoopbackProvider) -> LoopbackProvider:
    return loopback


@pytest_asyncio.fixture
async def services(tmp_path: Path, provider: LoopbackProvider) -> AsyncIterator[Services]:
    async with loopback_services(tmp_path, provider) as built:
        yield built


def last_changes(events: Events) -> TurnChanges:
    ends = [e for e in events if isinstance(e, (TurnFinished, TurnFailed))]
    assert len(ends) == 1, "a turn ends once"
    assert ends[0] is events[-1], "and its end is its last event"
    changes = ends[0].changes
    assert changes is not None
    return changes


def assert_as_stored(services: Services, changes: TurnChanges) -> None:
    """The changes are complete and say what the store holds now: the session's row, every
    node they name, every usage row they name."""
    assert changes.complete
    sid = changes.session_id
    assert changes.session == services.store.call(lambda r: r.get_session(sid))
    for node in changes.nodes:
        assert services.store.call(lambda r, n=node: r.get_node(n.id)) == node
    rows = services.store.call(lambda r: ledger.session_usage(r, sid))
    assert set(changes.records) <= set(rows)


@pytest.mark.asyncio
async def test_a_send_names_the_message_the_reply_and_its_usage_row(
        services: Services, provider: LoopbackProvider) -> None:
    provider.queue(Reply(text="Hello."))
    session = await services.chat.sessions.create()
    events = Events()
    reply = await services.chat.send(session.id, "Say hello", on_event=events)
    changes = last_changes(events)
    assert reply is not None
    assert [(n.role, n.text) for n in changes.nodes] == [("user", "Say hello"),
                                                         ("assistant", "Hello.")]
    assert changes.head == reply.id and changes.session is not None
    assert changes.session.head == reply.id and changes.session.title == "Say hello"
    (record,) = changes.records
    assert record.head == reply.id and record.input_tokens == provider.requests[-1].prompt_tokens
    assert changes.usage == (record.id,)
    assert_as_stored(services, changes)


@pytest.mark.asyncio
async def test_a_retry_names_only_the_new_reply(
        services: Services, provider: LoopbackProvider) -> None:
    provider.queue(Reply(text="first"), Reply(text="second"))
    session = await services.chat.sessions.create()
    first = await services.chat.send(session.id, "question")
    assert first is not None
    events = Events()
    second = await services.chat.retry(session.id, first.id, on_event=events)
    changes = last_changes(events)
    assert second is not None and changes.node_ids == (second.id,)
    assert second.predecessor == first.predecessor  # a sibling of the first reply
    assert changes.head == second.id and len(changes.records) == 1
    assert changes.model is None  # the chat's model did not change
    assert_as_stored(services, changes)


@pytest.mark.asyncio
async def test_an_edit_names_the_new_version_and_its_reply(
        services: Services, provider: LoopbackProvider) -> None:
    provider.queue(Reply(text="to the first"), Reply(text="to the second"))
    session = await services.chat.sessions.create()
    await services.chat.send(session.id, "first wording")
    view = await services.chat.sessions.view(session.id)
    events = Events()
    await services.chat.edit(session.id, view.path[0].id, "second wording", on_event=events)
    changes = last_changes(events)
    assert [(n.role, n.text) for n in changes.nodes] == [("user", "second wording"),
                                                         ("assistant", "to the second")]
    assert changes.nodes[0].predecessor == view.path[0].predecessor
    assert changes.head == changes.nodes[1].id
    assert_as_stored(services, changes)


@pytest.mark.asyncio
async def test_a_continuation_names_the_part_it_wrote(
        services: Services, provider: LoopbackProvider) -> None:
    provider.queue(Reply(text="The first half", finish="length"), Reply(text=" and the rest."))
    session = await services.chat.sessions.create()
    partial = await services.chat.send(session.id, "tell me")
    assert partial is not None
    events = Events()
    rest = await services.chat.continue_reply(session.id, partial.id, on_event=events)
    changes = last_changes(events)
    assert rest is not None and changes.node_ids == (rest.id,)
    assert rest.predecessor == partial.id and changes.head == rest.id
    assert_as_stored(services, changes)


@pytest.mark.asyncio
async def test_a_stop_names_the_kept_partial_and_the_request_it_counted(
        services: Services, provider: LoopbackProvider) -> None:
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
    changes = last_changes(events)
    assert node is not None and node.interrupted
    assert [n.role for n in changes.nodes] == ["user", "assistant"]
    assert changes.nodes[-1] == node and changes.head == node.id
    (record,) = changes.records
    assert record.basis == "estimated" and record.head == node.id
    assert_as_stored(services, changes)


@pytest.mark.asyncio
async def test_a_failure_names_the_kept_message_and_the_failed_request(
        services: Services, provider: LoopbackProvider) -> None:
    provider.fail_next(401)
    session = await services.chat.sessions.create()
    events = Events()
    await services.chat.send(session.id, "will fail", on_event=events)
    changes = last_changes(events)
    assert isinstance(events[-1], TurnFailed) and events[-1].error.kind == "auth"
    (user,) = changes.nodes
    assert user.text == "will fail" and changes.head == user.id
    assert changes.session is not None and changes.session.head == user.id
    assert [r.head for r in changes.records] == [user.id]
    assert_as_stored(services, changes)


@pytest.mark.asyncio
async def test_a_turn_with_tools_names_every_step_in_order(
        services: Services, provider: LoopbackProvider) -> None:
    provider.reply_with_tool_calls([{"name": "todo_create", "arguments": {"title": "milk"}}])
    provider.queue(Reply(text="Noted."))
    session = await services.chat.sessions.create()
    events = Events()
    final = await services.chat.send(session.id, "remember milk", on_event=events)
    changes = last_changes(events)
    assert final is not None
    assert [n.role for n in changes.nodes] == ["user", "assistant", "tool", "assistant"]
    assert changes.head == final.id and len(changes.records) == 2
    assert_as_stored(services, changes)


@pytest.mark.asyncio
async def test_a_turn_refused_as_busy_carries_no_changes(
        services: Services, provider: LoopbackProvider) -> None:
    import threading

    gate = threading.Event()
    provider.queue(Reply(text="slow", hold=gate))
    session = await services.chat.sessions.create()
    first = asyncio.ensure_future(services.chat.send(session.id, "one"))
    for _ in range(200):
        if services.chat.is_running(session.id):
            break
        await asyncio.sleep(0.01)
    events = Events()
    await services.chat.retry(session.id, "anything", on_event=events)
    gate.set()
    await first
    (refused,) = events
    assert isinstance(refused, TurnFailed) and refused.error.kind == "busy"
    assert refused.changes is None


def test_read_back_completes_the_changes_from_the_store(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "t.duckdb")
    try:
        session = Session("s", "A chat", None, "m", 1.0, updated_at=1.0)
        store.call(lambda r: r.create_session(session))
        (node,) = store.call(lambda r: r.apply_change(
            "s", Change((_node("a"),), "a"), 5.0))
        row = ledger.UsageRecord("row", "s", "m", 5.0, input_tokens=10, head="a")
        store.call(lambda r: ledger.record_usage(r, row))
        log = ChangeLog("s")
        log.wrote(node)
        log.recorded("row")
        log.recorded("gone")  # a row that is not in the ledger is not made up
        done = store.call(lambda r: read_back(r, log.changes()))
    finally:
        store.close()
    assert done.session is not None and done.session.head == "a"
    assert done.session.updated_at == 5.0 and done.records == (row,)
    assert not done.complete  # one row it names is missing: a view reads the session
    assert not log.changes().complete  # nothing read back yet
