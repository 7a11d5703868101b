"""The tools a session's model is offered, and the todo list kept per chat."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.chat import loopback_services
from tests.support.loopback_server import LoopbackProvider

from treechat.services.bootstrap import Services
from treechat.services.turns.session_tools import TodoStore


@pytest_asyncio.fixture
async def services(tmp_path: Path, loopback: LoopbackProvider) -> AsyncIterator[Services]:
    async with loopback_services(tmp_path, loopback) as built:
        yield built


@pytest.mark.asyncio
async def test_a_chat_gets_todos_and_recall_and_the_workspace_adds_files(
    services: Services, tmp_path: Path
) -> None:
    session = await services.chat.sessions.create()
    endpoint = await services.chat.model_endpoint()
    names = services.chat.tools.for_session(session.id, endpoint).names
    assert "recall" in names and any(n.startswith("todo_") for n in names)
    assert "search_knowledge" not in names  # the chat uses no knowledge base
    before = set(names)
    workspace = tmp_path / "work"
    workspace.mkdir()
    services.chat.config.workspace = workspace
    with_files = set(services.chat.tools.for_session(session.id, endpoint).names)
    assert before < with_files


@pytest.mark.asyncio
async def test_the_todo_list_is_kept_per_chat(services: Services) -> None:
    one, two = TodoStore(services.store, "a"), TodoStore(services.store, "b")
    await one.save([{"title": "milk", "done": False}])
    assert list(await one.load()) == [{"title": "milk", "done": False}]
    assert list(await two.load()) == []


@pytest.mark.asyncio
async def test_a_model_without_tools_is_quoted_the_chats_knowledge_and_the_reply_keeps_it(
    services: Services, loopback: LoopbackProvider, tmp_path: Path
) -> None:
    from treechat.core.citations import TAIL_HEADING
    from treechat.services.turns.request import tail_passages

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "boat.txt").write_text("Our sailing dinghy is called Marigold.\n")
    knowledge = services.chat.knowledge()
    await knowledge.add("boats", [str(notes)])
    await knowledge.reindex("boats")
    session = await services.chat.sessions.create()
    await knowledge.use_in_session(session.id, ["boats"])
    await services.chat.send(session.id, "What is the dinghy called?")
    await services.chat.refresh_knowledge(session.id)
    prep = await services.engine.prepare(session.id, model="openai/x", window=32_000,
                                         now=services.clock.now(), recall_fallback=True)
    tail = prep.messages[-1]["content"]
    assert TAIL_HEADING in tail and "Marigold" in tail
    (quoted,) = tail_passages(prep.messages)
    assert (quoted.path, quoted.line) == (str(notes / "boat.txt"), 1)
    # without the fallback (a model that calls tools) nothing is quoted
    plain = await services.engine.prepare(session.id, model="openai/x", window=32_000,
                                          now=services.clock.now())
    assert tail_passages(plain.messages) == []
