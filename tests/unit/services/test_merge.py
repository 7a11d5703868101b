"""Attach and merge through the real engine, store file and loopback provider: an attached
branch reaches the model once; a merge writes a merge node and a multi-parent commit."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.chat import loopback_services
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.core.model import GraphError
from treechat.services.bootstrap import Services
from treechat.services.merge import AttachService, merged_peers


@pytest_asyncio.fixture
async def services(tmp_path: Path, loopback: LoopbackProvider) -> AsyncIterator[Services]:
    async with loopback_services(tmp_path, loopback) as built:
        yield built


def wire(provider: LoopbackProvider, index: int = -1) -> str:
    return json.dumps(provider.requests[index].body["messages"], ensure_ascii=False)


@pytest.mark.asyncio
async def test_an_attached_session_reaches_the_model_once(
    services: Services, loopback: LoopbackProvider
) -> None:
    chat = services.chat
    attach = AttachService(chat)
    source = await chat.sessions.create("Parser notes")
    loopback.queue(Reply(text="The tokenizer splits on ZEBRA-TOKEN boundaries."))
    await chat.send(source.id, "How does the tokenizer split input?")
    target = await chat.sessions.create("Main")
    loopback.queue(Reply(text="Fine."))
    await chat.send(target.id, "Hello")

    staged = await attach.stage(source.id)
    source_commit = await services.engine.commit_for(source.id, staged.source_head, now=0)
    assert staged.source_title == "Parser notes"
    assert staged.tokens == source_commit.total_tokens > 0
    assert "ZEBRA-TOKEN" in staged.head_preview

    loopback.queue(Reply(text="Noted."), Reply(text="Again."))
    await chat.send(target.id, "Use the attached notes", attachments=[staged.attachment])
    assert wire(loopback).count("ZEBRA-TOKEN") == 1
    await chat.send(target.id, "And now?")
    assert wire(loopback).count("ZEBRA-TOKEN") == 1  # carried once, not expanded again

    view = await chat.sessions.view(target.id)
    pointers = [n for n in view.path if n.is_attach]
    assert len(pointers) == 1
    assert pointers[0].metadata["source_session"] == source.id
    assert pointers[0].metadata["source_commit"] == staged.commit_id


@pytest.mark.asyncio
async def test_merging_two_branches_writes_a_merge_node_and_a_two_parent_commit(
    services: Services, loopback: LoopbackProvider
) -> None:
    chat = services.chat
    attach = AttachService(chat)
    session = await chat.sessions.create("Plans")
    loopback.queue(Reply(text="Plan A: use a KESTREL cache."))
    first = await chat.send(session.id, "Suggest a plan")
    assert first is not None
    loopback.queue(Reply(text="Plan B: use a HERON queue."))
    second = await chat.retry(session.id, first.id)
    assert second is not None

    loopback.queue(Reply(text="Merged: KESTREL cache in front of a HERON queue."))
    before = len(loopback.requests)
    result = await attach.merge(
        session.id, [first.id, second.id], base=second.id, instruction="Combine both plans."
    )
    assert len(loopback.requests) == before + 1
    sent = wire(loopback)
    assert sent.count("KESTREL") == 1 and sent.count("HERON") == 1
    assert "Combine both plans." in sent

    merge, reply = result.merge_node, result.reply
    assert merge.is_merge and merge.output == "Combine both plans."
    assert reply is not None and reply.predecessor == merge.id
    view = await chat.sessions.view(session.id)
    assert view.head == reply.id
    # the merge node hangs off the base line and names the other head as its peer
    chain = [n.id for n in view.path]
    assert chain.index(second.id) < chain.index(merge.id)
    assert first.id not in chain
    assert [p["source_head"] for p in merge.metadata["peers"]] == [first.id]
    assert merged_peers(view.graph) == {first.id}

    commit = result.commit
    assert commit is not None and commit.head_node_id == merge.id
    assert len(commit.parent_ids) == 2
    peer_commit = await services.engine.commit_for(session.id, first.id, now=0)
    assert commit.parent_ids[1] == peer_commit.id

    notes = services.store.call(lambda r: r.annotations([first.id]))
    assert [(a.kind, a.value) for a in notes] == [("merged", merge.id)]

    history = await attach.commit_history(session.id, reply.id)
    assert [e.head_node_id for e in history][-2:] == [merge.id, reply.id]
    assert [e.is_merge for e in history] == [False] * (len(history) - 2) + [True, False]
    assert any(e.fork and e.head_node_id == second.id for e in history)


@pytest.mark.asyncio
async def test_a_merge_needs_two_distinct_unrelated_heads(
    services: Services, loopback: LoopbackProvider
) -> None:
    chat = services.chat
    attach = AttachService(chat)
    session = await chat.sessions.create()
    loopback.queue(Reply(text="one"), Reply(text="two"))
    first = await chat.send(session.id, "a")
    assert first is not None
    second = await chat.send(session.id, "b")
    assert second is not None
    with pytest.raises(GraphError):
        await attach.merge(session.id, [first.id], base=first.id)
    with pytest.raises(GraphError):
        await attach.merge(session.id, [first.id, second.id], base=second.id)
    assert len(loopback.requests) == 2
