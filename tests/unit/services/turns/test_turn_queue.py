"""Turns to one local server wait their turn: through the real chat service, a DuckDB file and
litellm over HTTP to a loopback server that holds its answers until the test lets them go.
Each chat says whether it is queued (and its place) or being answered; stopping a queued
chat takes it out of line; a summary by the chat's model waits like a reply; hosted providers
take several at once."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.chat import loopback_services
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.services.bootstrap import Services
from treechat.services.turns.turn_queue import TurnActivity, TurnQueue, server_of

Snapshot = Mapping[str, TurnActivity]


@pytest_asyncio.fixture
async def services(tmp_path: Path, loopback: LoopbackProvider) -> AsyncIterator[Services]:
    async with loopback_services(tmp_path, loopback) as built:
        yield built


async def until(predicate: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


def states(snapshot: Snapshot) -> dict[str, tuple[str, int]]:
    return {sid: (a.state, a.place) for sid, a in snapshot.items()}


@pytest.mark.asyncio
async def test_chats_to_one_local_server_are_answered_in_turn(
    services: Services, loopback: LoopbackProvider
) -> None:
    holds = [threading.Event() for _ in range(3)]
    loopback.queue(*(Reply(text=f"answer {i}", hold=h) for i, h in enumerate(holds)))
    chat = services.chat
    seen: list[dict[str, tuple[str, int]]] = []
    chat.queue.subscribe(lambda snapshot: seen.append(states(snapshot)))
    a, b, c = [await chat.sessions.create() for _ in range(3)]

    first = asyncio.ensure_future(chat.send(a.id, "first"))
    await until(lambda: len(loopback.requests) == 1, "the first request")
    second = asyncio.ensure_future(chat.send(b.id, "second"))
    await until(lambda: b.id in chat.queue.activity(), "the second chat to queue")
    third = asyncio.ensure_future(chat.send(c.id, "third"))
    await until(lambda: c.id in chat.queue.activity(), "the third chat to queue")

    assert states(chat.queue.activity()) == {
        a.id: ("replying", 0), b.id: ("queued", 1), c.id: ("queued", 2)}
    activity = chat.queue.activity()[b.id]
    assert activity.local and activity.server == f"127.0.0.1:{loopback.port}"
    await asyncio.sleep(0.3)
    assert len(loopback.requests) == 1  # the server is given one request at a time

    holds[0].set()
    assert (await first) is not None
    await until(lambda: len(loopback.requests) == 2, "the second request")
    assert states(chat.queue.activity()) == {b.id: ("replying", 0), c.id: ("queued", 1)}
    assert "first" not in str(loopback.requests[1].body["messages"])  # b's own chat

    holds[1].set()
    holds[2].set()
    replies = [await second, await third]
    assert [r.output for r in replies if r is not None] == ["answer 1", "answer 2"]
    assert chat.queue.activity() == {}
    assert seen[-1] == {}
    # every change was told, in order: c queued second, moved up, was answered
    c_states = [s[c.id] for s in seen if c.id in s]
    assert c_states[0] == ("queued", 2) and ("queued", 1) in c_states
    assert c_states[-1] == ("replying", 0)


@pytest.mark.asyncio
async def test_stopping_a_queued_chat_takes_it_out_of_line(
    services: Services, loopback: LoopbackProvider
) -> None:
    hold = threading.Event()
    loopback.queue(Reply(text="the long one", hold=hold), Reply(text="the third"))
    chat = services.chat
    a, b, c = [await chat.sessions.create() for _ in range(3)]
    first = asyncio.ensure_future(chat.send(a.id, "first"))
    await until(lambda: len(loopback.requests) == 1, "the first request")
    second = asyncio.ensure_future(chat.send(b.id, "second"))
    await until(lambda: b.id in chat.queue.activity(), "b to queue")
    third = asyncio.ensure_future(chat.send(c.id, "third"))
    await until(lambda: c.id in chat.queue.activity(), "c to queue")

    chat.stop(b.id)
    stopped = await second
    assert stopped is not None and stopped.interrupted and stopped.output == ""
    assert states(chat.queue.activity()) == {a.id: ("replying", 0), c.id: ("queued", 1)}
    view = await chat.sessions.view(b.id)
    assert [n.output for n in view.path] == ["second", ""]  # the message is kept

    hold.set()
    await first
    done = await third
    assert done is not None and done.output == "the third"
    assert len(loopback.requests) == 2  # the stopped chat never reached the server


def long_history(services: Services, session_id: str, turns: int = 16) -> None:
    """A chat long enough that its next request folds old turns into a summary."""
    from treechat.core.dag import Change
    from treechat.core.model import Node

    now = services.clock.now()
    nodes, prev = [], None
    for i in range(turns):
        text = f"turn {i}: " + " ".join(f"word{i}x{j}" for j in range(160))
        node = Node(f"{session_id}-{i}", 0, now, session_id,
                    "user" if i % 2 == 0 else "assistant", output=text, predecessor=prev)
        nodes.append(node)
        prev = node.id
    services.store.call(lambda r: r.apply_change(session_id, Change(tuple(nodes), prev), now))


@pytest.mark.asyncio
async def test_a_summary_by_the_chat_model_waits_its_turn_too(
    services: Services, loopback: LoopbackProvider
) -> None:
    hold = threading.Event()
    loopback.queue(Reply(text="the long one", hold=hold), Reply(text="A short summary."),
                   Reply(text="after the fold"))
    chat = services.chat
    chat.config.summarizer = "session"  # the chat's own model writes the summary
    a, b = await chat.sessions.create(), await chat.sessions.create()
    long_history(services, b.id)
    first = asyncio.ensure_future(chat.send(a.id, "first"))
    await until(lambda: len(loopback.requests) == 1, "the first request")
    second = asyncio.ensure_future(chat.send(b.id, "go on"))
    await until(lambda: b.id in chat.queue.activity(), "the summary to queue")
    assert states(chat.queue.activity())[b.id] == ("queued", 1)
    await asyncio.sleep(0.3)
    assert len(loopback.requests) == 1  # the summary did not jump the line

    hold.set()
    await first
    reply = await second
    assert reply is not None and reply.output == "after the fold"
    summary, request = loopback.requests[1], loopback.requests[2]
    folded = str(summary.body["messages"])
    assert "word2x0" in folded and "A short summary." not in folded  # old turns, to summarize
    assert "A short summary." in str(request.body["messages"])


@pytest.mark.asyncio
async def test_a_hosted_provider_takes_several_at_once() -> None:
    queue = TurnQueue(hosted_parallel=2)
    entered: list[str] = []
    release = asyncio.Event()

    async def turn(session_id: str, api_base: str | None, model: str) -> None:
        async with queue.slot(session_id, api_base, model):
            entered.append(session_id)
            await release.wait()

    tasks = [
        asyncio.ensure_future(turn("a", None, "anthropic/claude-sonnet-4-5")),
        asyncio.ensure_future(turn("b", None, "anthropic/claude-haiku-4-5")),
        asyncio.ensure_future(turn("c", None, "anthropic/claude-sonnet-4-5")),
        asyncio.ensure_future(turn("d", "http://localhost:11434", "ollama_chat/llama3.2")),
    ]
    await until(lambda: len(entered) == 3, "three turns to start")
    assert sorted(entered) == ["a", "b", "d"]  # two to Anthropic, Ollama has its own line
    assert states(queue.activity())["c"] == ("queued", 1)
    release.set()
    await asyncio.gather(*tasks)
    assert entered[-1] == "c" and queue.activity() == {}


def test_the_server_is_the_address_or_the_provider() -> None:
    assert server_of("http://127.0.0.1:8080/v1", "openai/x") == ("127.0.0.1:8080", True)
    assert server_of("https://api.example.com/v1", "openai/x") == ("api.example.com", False)
    assert server_of(None, "anthropic/claude-sonnet-4-5") == ("anthropic", False)
    with pytest.raises(ValueError, match="at least one"):
        TurnQueue(local_parallel=0)
