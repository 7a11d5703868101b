"""Projects through the services: made, renamed, a chat moved in and out, deleted without its
chats; a chat in a project runs under the project's instructions, searches its knowledge
(the reply's sources name the file and line), and with memory on searches the other chats."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.chat import loopback_services
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.core.citations import reply_sources
from treechat.services.bootstrap import Services
from treechat.services.projects import ProjectError, ProjectService


@pytest_asyncio.fixture
async def services(tmp_path: Path, loopback: LoopbackProvider) -> AsyncIterator[Services]:
    async with loopback_services(tmp_path / "data", loopback) as built:
        yield built


@pytest.mark.asyncio
async def test_a_project_is_made_renamed_filled_and_deleted_without_its_chats(
    services: Services,
) -> None:
    projects = ProjectService(services.store)
    chat = await services.chat.sessions.create()
    trip = await projects.create("  Trip   to Oslo ")
    assert trip.name == "Trip to Oslo"
    with pytest.raises(ProjectError, match="needs a name"):
        await projects.create("   ")
    await projects.update(trip.id, name="Oslo")
    assert (await projects.find("oslo")).id == trip.id
    await projects.move(chat.id, trip.id)
    assert (await projects.all()).of(chat.id) == await projects.find(trip.id)
    with pytest.raises(ProjectError, match="no chat"):
        await projects.move("nope", trip.id)
    await projects.move(chat.id, None)
    assert (await projects.all()).of(chat.id) is None
    await projects.move(chat.id, trip.id)
    await projects.remove(trip.id)
    assert (await projects.all()).projects == ()
    assert await services.chat.sessions.view(chat.id)  # the chat is still there
    with pytest.raises(ProjectError, match="no project"):
        await projects.find("Oslo")


@pytest.mark.asyncio
async def test_a_chat_in_a_project_gets_its_instructions_and_knowledge_and_cites_it(
    services: Services, loopback: LoopbackProvider, tmp_path: Path,
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    garden = notes / "garden.md"
    garden.write_text("The tomatoes need water.\n\nThe shed key hangs behind the pantry door.\n")
    knowledge = services.chat.knowledge()
    await knowledge.add("home", [str(notes)])
    await knowledge.reindex("home")
    projects = services.chat.tools.projects
    house = await projects.create("House", "Answer like a butler.")
    await projects.update(house.id, knowledge=("home",))
    chat = await services.chat.sessions.create()
    await projects.move(chat.id, house.id)

    loopback.reply_with_tool_calls([{"name": "search_knowledge",
                                     "arguments": {"query": "where is what opens the hut"}}])
    loopback.queue(Reply(text=f"Behind the pantry door [{garden.name}, line 3]."))
    await services.chat.send(chat.id, "Where is the shed key?")

    first = loopback.requests[0].body
    assert first["messages"][0]["role"] == "system"
    assert "Answer like a butler." in first["messages"][0]["content"]
    assert "search_knowledge" in [t["function"]["name"] for t in first["tools"]]
    tool_result = next(m for m in loopback.requests[1].body["messages"] if m["role"] == "tool")
    assert "[notes/garden.md, line 3]" in tool_result["content"]  # from the folder added
    assert str(garden.parent) not in json.dumps(loopback.requests[1].body)
    view = await services.chat.sessions.view(chat.id)
    reply = view.path[-1]
    (source,) = [p for p in reply_sources(view.path, reply) if p.line == 3]
    assert (source.path, source.kind) == (str(garden), "knowledge")


@pytest.mark.asyncio
async def test_memory_across_chats_is_off_until_switched_on(
    services: Services, loopback: LoopbackProvider,
) -> None:
    other = await services.chat.sessions.create()
    loopback.queue(Reply(text="Noted."))
    await services.chat.send(other.id, "Our boat is named Marigold.")
    chat = await services.chat.sessions.create()
    endpoint = await services.chat.model_endpoint()
    await services.chat.refresh_knowledge(chat.id)
    assert "search_chats" not in services.chat.tools.for_session(chat.id, endpoint).names
    await services.chat.tools.projects.set_chat_memory(chat.id, True)
    loopback.reply_with_tool_calls([{"name": "search_chats",
                                     "arguments": {"query": "what is the boat called"}}])
    loopback.queue(Reply(text="Marigold."))
    await services.chat.send(chat.id, "What did we call the boat?")
    tool_result = next(m for m in loopback.requests[-1].body["messages"] if m["role"] == "tool")
    content = tool_result["content"]
    assert "Marigold" in content
    titled = await services.chat.sessions.get(other.id)  # titled by its first message
    assert titled is not None
    assert f"chat “{titled.title}”, node " in content  # the passage names its chat and node
