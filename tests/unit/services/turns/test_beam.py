"""Several models at once, through the real engine, store file, litellm and three loopback
servers: one message becomes sibling replies streamed together, each with its own request,
snapshot and ledger row; the siblings read back with model, cost and first token; a fuse is a
merge node with every reply as a parent."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.beam_servers import LABELS, MODELS, beam_services, three_servers
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.core.model import GraphError
from treechat.services.bootstrap import Services
from treechat.services.models.catalog import ModelChoice
from treechat.services.turns.beam import (
    DEFAULT_FUSE_INSTRUCTION,
    BeamEvent,
    BeamService,
    parse_models,
)
from treechat.services.turns.events import TextDelta, TurnFailed, TurnFinished
from treechat.store import usage as ledger

Wired = tuple[Services, BeamService, list[LoopbackProvider]]


@pytest_asyncio.fixture
async def wired(tmp_path: Path) -> AsyncIterator[Wired]:
    with three_servers() as servers:
        async with beam_services(tmp_path, servers) as (services, beam):
            yield services, beam, servers


class Recorder(list[BeamEvent]):
    def __call__(self, event: BeamEvent) -> None:
        self.append(event)

    def text(self, index: int) -> str:
        return "".join(e.event.text for e in self
                       if e.index == index and isinstance(e.event, TextDelta))


def answers(servers: list[LoopbackProvider], *texts: str) -> None:
    for server, text in zip(servers, texts, strict=True):
        server.queue(Reply(text=text))


@pytest.mark.asyncio
async def test_one_message_becomes_a_sibling_reply_per_model(wired: Wired) -> None:
    services, beam, servers = wired
    session = await services.chat.sessions.create("Compare")
    answers(servers, "Mini says MAPLE.", "Omni says BIRCH.", "Four-one says CEDAR.")
    events = Recorder()
    result = await beam.send(session.id, "Name a tree", MODELS, on_event=events)

    view = await services.chat.sessions.view(session.id)
    message = view.graph.get(result.message_id or "")
    assert message.role == "user" and message.text == "Name a tree"
    replies = view.graph.conversation_children(message.id)
    assert sorted(r.metadata["model"] for r in replies) == sorted(MODELS)
    assert {r.metadata["model"]: r.text for r in replies} == {
        MODELS[0]: "Mini says MAPLE.", MODELS[1]: "Omni says BIRCH.",
        MODELS[2]: "Four-one says CEDAR.",
    }
    assert [r.text for r in result.replies if r] == [
        "Mini says MAPLE.", "Omni says BIRCH.", "Four-one says CEDAR."]
    # each streamed into its own column
    assert [events.text(i) for i in range(3)] == [r.text for r in result.replies if r]
    assert all(len(s.requests) == 1 for s in servers)  # one request each, to its own server
    assert result.errors == (None, None, None)
    assert all(t is not None and t > 0 for t in result.first_token_s)
    # HEAD rests on the first model's reply, and the chat keeps the first model
    assert view.head == result.replies[0].id  # type: ignore[union-attr]
    assert view.session.model == MODELS[0]


@pytest.mark.asyncio
async def test_each_reply_has_its_own_ledger_row_and_snapshot_and_the_chat_counts_all(
    wired: Wired,
) -> None:
    services, beam, servers = wired
    session = await services.chat.sessions.create("Costs")
    answers(servers, "One.", "Two, longer.", "Three, the longest of all.")
    result = await beam.send(session.id, "Count", MODELS)

    rows = await services.store.run(ledger.usage_rows)
    assert sorted(r.model for r in rows) == sorted(MODELS)
    assert {r.head for r in rows} == {r.id for r in result.replies if r}
    assert all(r.cost_usd > 0 and r.priced for r in rows)
    commits = {r.commit_id for r in rows}
    stored = await services.store.run(
        lambda repo: {c: repo.con.execute("SELECT count(*) FROM commits WHERE id = ?", [c])
                      .fetchone()[0] for c in commits})
    assert all(n == 1 for n in stored.values())  # every request's snapshot is in the store
    total = await services.chat.spending.chat_total(session.id)
    assert total.requests == 3
    assert total.cost_usd == pytest.approx(sum(r.cost_usd for r in rows))

    siblings = await beam.siblings(session.id, result.message_id or "")
    assert [s.label for s in siblings] == list(LABELS)
    assert [s.cost_usd for s in siblings] == [
        next(r.cost_usd for r in rows if r.head == s.last.id) for s in siblings]
    assert all(s.first_token_s is not None for s in siblings)


@pytest.mark.asyncio
async def test_hosted_siblings_stream_at_the_same_time(wired: Wired) -> None:
    services, beam, servers = wired
    session = await services.chat.sessions.create("Parallel")
    gates = [threading.Event() for _ in servers]
    for server, gate in zip(servers, gates, strict=True):
        server.queue(Reply(text="held reply", hold=gate))
    task = asyncio.ensure_future(beam.send(session.id, "Go", MODELS))
    # every server has its request while none has answered: they were sent together
    for server in servers:
        await asyncio.to_thread(server.wait_for_requests, 1)
    assert not task.done()
    for gate in gates:
        gate.set()
    result = await task
    assert [r.text for r in result.replies if r] == ["held reply"] * 3


@pytest.mark.asyncio
async def test_two_models_on_one_local_server_answer_one_at_a_time(tmp_path: Path) -> None:
    from treechat.services.bootstrap import build_services

    with three_servers() as servers:
        server = servers[0]
        choices = (ModelChoice("openai/a-local", "A", "openai", api_base=server.openai_base),
                   ModelChoice("openai/b-local", "B", "openai", api_base=server.openai_base))
        services = build_services(tmp_path, bundled=False, detect_local_servers=False,
                                  extra_models=choices)
        try:
            beam = BeamService(services.chat)
            session = await services.chat.sessions.create("Queue")
            gate = threading.Event()
            server.queue(Reply(text="first", hold=gate), Reply(text="second"))
            task = asyncio.ensure_future(
                beam.send(session.id, "Both", ["openai/a-local", "openai/b-local"]))
            await asyncio.to_thread(server.wait_for_requests, 1)
            while not services.chat.queue.activity()[session.id].queued:
                await asyncio.sleep(0.01)  # the second reaches the line and waits in it
            assert services.chat.queue.activity()[session.id].local
            assert len(server.requests) == 1
            gate.set()
            result = await task
            assert sorted(r.text for r in result.replies if r) == ["first", "second"]
            assert len(server.requests) == 2
        finally:
            await services.close()
            services.close_store()


@pytest.mark.asyncio
async def test_a_model_that_cannot_be_reached_fails_alone(wired: Wired) -> None:
    services, beam, servers = wired
    session = await services.chat.sessions.create("One bad")
    servers[0].queue(Reply(text="Still here."))
    events = Recorder()
    result = await beam.send(session.id, "Hello", [MODELS[0], "nowhere/no-such-model"],
                             on_event=events)
    assert result.replies[0] is not None and result.replies[0].text == "Still here."
    assert result.replies[1] is None
    assert result.errors[1] is not None and result.errors[1].kind == "unavailable"
    assert [e.index for e in events if isinstance(e.event, TurnFailed)] == [1]
    assert [e.index for e in events if isinstance(e.event, TurnFinished)] == [0]


@pytest.mark.asyncio
async def test_stopping_stops_every_sibling_and_keeps_what_streamed(wired: Wired) -> None:
    services, beam, servers = wired
    session = await services.chat.sessions.create("Stop")
    for server in servers:
        server.queue(Reply(text="word " * 400, pause_after=20))  # mid-reply until stopped
    events = Recorder()
    task = asyncio.ensure_future(beam.send(session.id, "Talk", MODELS, on_event=events))
    while {e.index for e in events if isinstance(e.event, TextDelta)} != {0, 1, 2}:
        await asyncio.sleep(0.01)
    assert services.chat.is_running(session.id)
    services.chat.stop(session.id)
    result = await task
    assert all(r is not None and r.interrupted and r.text for r in result.replies)
    assert not services.chat.is_running(session.id)


@pytest.mark.asyncio
async def test_fuse_writes_a_merge_node_with_every_reply_as_a_parent(wired: Wired) -> None:
    services, beam, servers = wired
    session = await services.chat.sessions.create("Fuse")
    answers(servers, "Use MAPLE wood.", "Use BIRCH wood.", "Use CEDAR wood.")
    sent = await beam.send(session.id, "Which wood?", MODELS)
    servers[1].queue(Reply(text="Fused: CEDAR outside, MAPLE inside; BIRCH disagreed."))
    fused = await beam.fuse(session.id, sent.message_id or "", model=MODELS[1])

    heads = [r.id for r in sent.replies if r]
    merge = fused.merge_node
    assert merge.is_merge
    assert [p["source_head"] for p in merge.metadata["peers"]] == heads[1:]
    assert merge.metadata["base_peer"]["source_head"] == heads[0]
    assert DEFAULT_FUSE_INSTRUCTION in merge.text
    assert "1. Mini; 2. Omni; 3. Four-one" in merge.text
    assert fused.reply is not None and fused.reply.predecessor == merge.id
    assert fused.reply.metadata["model"] == MODELS[1]
    assert fused.commit is not None and len(fused.commit.parent_ids) == 3  # base line + two
    wire = json.dumps(servers[1].requests[-1].body["messages"])
    assert all(word in wire for word in ("MAPLE", "BIRCH", "CEDAR"))
    total = await services.chat.spending.chat_total(session.id)
    assert total.requests == 4  # three siblings and the fuse, each its own row


@pytest.mark.asyncio
async def test_fuse_takes_the_users_instruction_and_needs_two_replies(wired: Wired) -> None:
    services, beam, servers = wired
    session = await services.chat.sessions.create("Own words")
    servers[0].queue(Reply(text="Only one."))
    lone = await beam.send(session.id, "Just one", [MODELS[0]])
    with pytest.raises(GraphError, match="at least two replies"):
        await beam.fuse(session.id, lone.message_id or "", model=MODELS[0])

    answers(servers[:2], "Alpha.", "Beta.")
    sent = await beam.send(session.id, "Two now", MODELS[:2])
    servers[2].queue(Reply(text="Both."))
    fused = await beam.fuse(session.id, sent.replies[1].id,  # type: ignore[union-attr]
                            model=MODELS[2], instruction="Keep it to one line.")
    assert fused.merge_node.text.startswith("Keep it to one line.")
    assert "Keep it to one line." in json.dumps(servers[2].requests[-1].body["messages"])


@pytest.mark.asyncio
async def test_saved_sets_of_models(wired: Wired) -> None:
    _, beam, _ = wired
    assert await beam.model_sets() == {}
    await beam.save_model_set("  my   three ", MODELS)
    assert await beam.model_sets() == {"my three": MODELS}
    await beam.save_model_set("pair", [MODELS[0], MODELS[0], MODELS[1]])
    assert (await beam.model_sets())["pair"] == MODELS[:2]
    assert list(await beam.delete_model_set("my three")) == ["pair"]
    with pytest.raises(ValueError, match="needs a name"):
        await beam.save_model_set(" ", MODELS)


def test_models_are_read_from_a_comma_list() -> None:
    assert parse_models(" a/x, b/y ,a/x,") == ("a/x", "b/y")
    with pytest.raises(ValueError, match="at least one model"):
        parse_models(" , ")
    with pytest.raises(ValueError, match="at most 8"):
        parse_models([f"m/{i}" for i in range(9)])
