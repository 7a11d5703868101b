"""The git-metaphor operations end to end on a real DuckDB file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.attachment_files import png
from tests.support.chat import Events
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.core.dag import Change
from treechat.core.model import GraphError, Node, Session
from treechat.services.bootstrap import Services, build_services
from treechat.services.models.catalog import ModelChoice
from treechat.services.turns.events import TurnFailed
from treechat.services.turns.sessions import SessionService
from treechat.store.database import Store


@pytest_asyncio.fixture
async def service(tmp_path: Path) -> AsyncIterator[SessionService]:
    store = Store.open(tmp_path / "s.duckdb")
    yield SessionService(store)
    store.close()


async def reply(service: SessionService, session_id: str, text: str) -> Node:
    return await service.append_message(session_id, text, role="assistant")


@pytest.mark.asyncio
async def test_send_titles_the_session_and_advances_head(service: SessionService) -> None:
    s = await service.create()
    u = await service.append_message(s.id, "How do I   parse JSON in Python?")
    view = await service.view(s.id)
    assert view.head == u.id
    assert view.session.title == "How do I parse JSON in Python?"
    assert [n.id for n in view.path] == [u.id]


@pytest.mark.asyncio
async def test_retry_edit_switch_and_branch(service: SessionService) -> None:
    s = await service.create()
    u1 = await service.append_message(s.id, "first")
    a1 = await reply(service, s.id, "answer one")
    # retry: a new assistant sibling under the same user message
    a1b = await service.append_message(
        s.id, "answer two", role="assistant", parent=u1.id, use_parent=True
    )
    view = await service.view(s.id)
    assert view.version(a1b.id) == (2, 2)
    nodes_before = len(view.graph)
    view = await service.switch_version(s.id, a1b.id, 1)
    assert view.head == a1.id and len(view.graph) == nodes_before
    # edit forks the user message
    u1b = await service.edit(s.id, u1.id, "first, edited")
    view = await service.view(s.id)
    assert view.head == u1b.id and view.version(u1b.id) == (2, 2)
    assert [n.output for n in view.path] == ["first, edited"]
    # back to version 1 lands on that branch's latest reply
    view = await service.switch_version(s.id, u1b.id, 1)
    assert view.head == a1b.id
    # branch into a new session from a1: shared, not copied
    fork = await service.branch(s.id, a1.id)
    fork_view = await service.view(fork.id)
    assert [n.id for n in fork_view.path] == [u1.id, a1.id]
    assert fork.forked_from == s.id
    x = await service.append_message(fork.id, "continue in the fork")
    assert (await service.view(fork.id)).head == x.id
    assert (await service.view(s.id)).head == a1b.id  # the original did not move


@pytest.mark.asyncio
async def test_a_version_switch_across_a_shown_graph_says_what_the_store_then_holds(
        service: SessionService) -> None:
    s = await service.create()
    u1 = await service.append_message(s.id, "first")
    a1 = await reply(service, s.id, "answer one")
    u2 = await service.append_message(s.id, "second")
    a1b = await service.append_message(
        s.id, "answer two", role="assistant", parent=u1.id, use_parent=True)
    shown = await service.view(s.id)
    moved = await service.switch_version_of(shown, a1b.id, 1)
    # version 1 of the reply is the branch that went on: its tip
    assert moved.head == u2.id
    assert moved.session == (await service.view(s.id)).session
    back = await service.switch_version_of(shown, a1.id, 2)
    assert back.head == a1b.id and back.session.head == a1b.id
    with pytest.raises(GraphError):
        await service.switch_version_of(shown, a1.id, 3)  # no third version: nothing moves
    assert (await service.view(s.id)).head == a1b.id


@pytest.mark.asyncio
async def test_edit_refuses_an_assistant_message(service: SessionService) -> None:
    s = await service.create()
    await service.append_message(s.id, "q")
    a = await reply(service, s.id, "a")
    with pytest.raises(GraphError):
        await service.edit(s.id, a.id, "changed")


@pytest.mark.asyncio
async def test_hide_moves_head_off_the_branch_and_purge_removes_it(service: SessionService) -> None:
    s = await service.create()
    u1 = await service.append_message(s.id, "q")
    await reply(service, s.id, "a")
    u2 = await service.append_message(s.id, "q2 on a doomed branch")
    await reply(service, s.id, "a2")
    view = await service.annotate(s.id, u2.id, "hidden")
    assert view.head is not None and view.head != u2.id
    assert u2.id in view.hidden
    removed = await service.purge()
    assert removed == 2
    view = await service.view(s.id)
    assert u2.id not in view.graph and u1.id in view.graph


@pytest.mark.asyncio
async def test_checkout_is_display_only(service: SessionService) -> None:
    s = await service.create()
    u1 = await service.append_message(s.id, "q")
    await reply(service, s.id, "a")
    before = len((await service.view(s.id)).graph)
    view = await service.checkout(s.id, u1.id)
    assert view.head == u1.id and len(view.graph) == before


@pytest.mark.asyncio
async def test_show_branch_of_moves_head_only_off_the_path(service: SessionService) -> None:
    s = await service.create()
    u1 = await service.append_message(s.id, "q")
    a1 = await reply(service, s.id, "first")
    follow = await service.append_message(s.id, "more")
    tip = await reply(service, s.id, "the first branch's end")
    a2 = await service.append_message(s.id, "second", role="assistant", parent=u1.id,
                                      use_parent=True)
    assert (await service.view(s.id)).head == a2.id
    on_path = await service.show_branch_of(s.id, u1.id)
    assert on_path.head == a2.id  # already shown: HEAD stays
    view = await service.show_branch_of(s.id, a1.id)
    assert view.head == tip.id  # the branch's newest message, not the hit itself
    assert [n.id for n in view.path] == [u1.id, a1.id, follow.id, tip.id]
    with pytest.raises(GraphError):
        await service.show_branch_of(s.id, "no-such-node")


@pytest.mark.asyncio
async def test_pin_and_unpin(service: SessionService) -> None:
    s = await service.create()
    u1 = await service.append_message(s.id, "q")
    assert u1.id in (await service.annotate(s.id, u1.id, "pin")).pinned
    assert u1.id not in (await service.annotate(s.id, u1.id, "unpin")).pinned


# --- a chat whose first message carries files is titled like any other ---------------------


@asynccontextmanager
async def seeing_services(data: Path, loopback: LoopbackProvider) -> AsyncIterator[Services]:
    """Services whose default model takes images (litellm knows gpt-4o sees), served by
    the loopback server."""
    choice = ModelChoice("openai/gpt-4o", "Seer", "openai", api_base=loopback.openai_base)
    built = build_services(data, bundled=False, detect_local_servers=False,
                           extra_models=(choice,))
    built.models.default_model = choice.id
    try:
        yield built
    finally:
        await built.close()
        built.close_store()


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("text", "files", "title"),
    [
        ("What does this chart show?", ["chart.png"], "What does this chart show?"),
        ("", ["chart.png"], "chart.png"),
        ("", ["chart.png", "notes.txt"], "chart.png, notes.txt"),
    ],
)
async def test_a_first_message_with_files_titles_the_chat_from_its_text_or_the_files(
    tmp_path: Path, loopback: LoopbackProvider, text: str, files: list[str], title: str
) -> None:
    paths = []
    for name in files:
        path = tmp_path / name
        path.write_bytes(png(8, 8) if name.endswith(".png") else b"some notes\n")
        paths.append(path)
    loopback.queue(Reply(text="A reply."), Reply(text="Another."))
    async with seeing_services(tmp_path / "data", loopback) as services:
        session = await services.chat.sessions.create()
        events = Events()
        await services.chat.send(session.id, text, files=paths, on_event=events)
        assert not events.of(TurnFailed)
        await services.chat.send(session.id, "And then?")  # a later message keeps it
        view = await services.chat.sessions.view(session.id)
        assert view.session.title == title
        assert [a["name"] for a in view.path[0].metadata["attachments"]] == files
    with Store.open(tmp_path / "data" / "treechat.duckdb") as store:  # after a restart
        (kept,) = store.call(lambda r: r.list_sessions())
        assert kept.title == title


@pytest.mark.asyncio
async def test_a_chat_the_user_named_keeps_its_name_when_a_file_is_sent(
    tmp_path: Path, loopback: LoopbackProvider
) -> None:
    photo = tmp_path / "photo.png"
    photo.write_bytes(png(8, 8))
    loopback.queue(Reply(text="A reply."))
    async with seeing_services(tmp_path / "data", loopback) as services:
        session = await services.chat.sessions.create()
        await services.chat.sessions.rename(session.id, "Holiday photos")
        await services.chat.send(session.id, "Look", files=[photo])
        view = await services.chat.sessions.view(session.id)
        assert view.session.title == "Holiday photos"


def long_chat(store: Store, session_id: str, turns: int, under: str | None = None
              ) -> list[Node]:
    """`turns` questions and replies written in one go (below `under`, in a session made
    before); every tenth reply called a tool."""
    nodes: list[Node] = []
    prev = under
    for i in range(turns):
        for role in ("user", "assistant"):
            node = Node(f"{session_id}-{len(nodes)}", 0, float(len(nodes)), session_id, role,
                        output=f"{role} {i}", predecessor=prev)
            nodes.append(node)
            prev = node.id
        if i % 10 == 0:
            nodes.append(Node(f"{session_id}-{len(nodes)}", 0, float(len(nodes)), session_id,
                              "tool", name="read_file", output=f"file {i}", caller=prev,
                              metadata={"tool_call_id": f"call-{i}"}))
    if under is None:
        store.call(lambda r: r.create_session(Session(session_id, "Long", None, "m", 0.0)))
    store.call(lambda r: r.apply_change(session_id, Change(tuple(nodes), prev), 1.0))
    return nodes


@pytest.mark.asyncio
async def test_the_end_of_a_long_chat_reads_as_the_whole_shows_it(
    service: SessionService,
) -> None:
    long_chat(service.store, "long", 300)
    # versions near the end: a retried reply and an edited question, and an old branch
    # that must not count as messages of the path
    path = (await service.view("long")).path
    retried = next(n for n in reversed(path) if n.role == "assistant" and n.seq < path[-8].seq)
    await service.append_message("long", "another answer", role="assistant",
                                 parent=retried.predecessor, use_parent=True)
    await service.edit("long", path[-2].id, "asked again")
    await reply(service, "long", "the edited question's answer")
    await service.annotate("long", path[-5].id, "pin")

    whole = await service.view("long")
    tail = await service.tail_view("long")
    assert tail.is_tail and not whole.is_tail
    assert len(tail.graph) < len(whole.graph) // 4  # only the end was read in full
    assert [n.id for n in tail.path] == [n.id for n in whole.path[-len(tail.path):]]
    assert len(tail.path) >= 60
    assert [tail.version(n.id) for n in tail.path] == [whole.version(n.id)
                                                      for n in tail.path]
    assert any(tail.version(n.id)[1] > 1 for n in tail.path)
    assert tail.pinned == whole.pinned
    assert tail.whole_messages == sum(n.role in ("user", "assistant") for n in whole.path)
    assert tail.head == whole.head and tail.session == whole.session


@pytest.mark.asyncio
async def test_a_short_chat_and_a_branch_of_another_are_read_whole(
    service: SessionService,
) -> None:
    long_chat(service.store, "short", 20)
    short = await service.tail_view("short")
    assert not short.is_tail and short.path == (await service.view("short")).path
    # many versions of a short path's first question: its path is short, read whole
    long_chat(service.store, "tries", 10)
    for k in range(70):
        await service.edit("tries", "tries-0", f"the first question, try {k}")
        await reply(service, "tries", f"answer {k}")
    tries, whole_tries = await service.tail_view("tries"), await service.view("tries")
    assert not tries.is_tail and tries.path == whole_tries.path
    assert tries.version(tries.path[0].id) == (71, 71)
    nodes = long_chat(service.store, "trunk", 200)
    branch = await service.branch("trunk", nodes[-30].id)
    long_chat(service.store, branch.id, 100, under=nodes[-30].id)
    tail = await service.tail_view(branch.id)  # its path runs on in the other chat's nodes
    whole = await service.view(branch.id)
    assert not tail.is_tail and tail.path == whole.path and len(tail.graph) == len(whole.graph)
