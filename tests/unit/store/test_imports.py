"""Writing imported conversations into a real DuckDB file: whole, in order, exactly once."""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from treechat.core.dag import Graph, active_path
from treechat.core.imports import chatgpt, librechat
from treechat.core.imports.model import ImportedConversation
from treechat.core.model import Session
from treechat.store.database import Store
from treechat.store.imports import write_conversation

DATA = Path(__file__).resolve().parents[2] / "data" / "imports"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "imports.duckdb")
    yield s
    s.close()


@pytest.fixture(scope="module")
def chatgpt_raw() -> list[dict[str, Any]]:
    data = json.loads((DATA / "chatgpt-export-browsing.json").read_text(encoding="utf-8"))
    assert isinstance(data, list)
    return data


_IDS = (f"id{i}" for i in itertools.count(1))


def write(store: Store, conv: ImportedConversation, make: Iterator[str] = _IDS,
          now: float = 1000.0) -> Any:
    return store.call(lambda r: write_conversation(r, conv, now=now, make_id=lambda: next(make)))


def count(store: Store, table: str) -> int:
    return int(store.call(lambda r: r.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]))


def test_real_chatgpt_conversation_becomes_a_session_with_every_node(
    store: Store, chatgpt_raw: list[dict[str, Any]]
) -> None:
    conv = chatgpt.parse(chatgpt_raw).conversations[0]
    written = write(store, conv)
    assert written.created_session and written.nodes == 16 and written.branches == 1
    session = store.call(lambda r: r.get_session(written.session_id))
    assert session is not None
    assert (session.title, session.model) == ("Conversation 1. Web Search", "gpt-4")
    assert session.created_at == chatgpt_raw[0]["create_time"]
    assert session.updated_at == chatgpt_raw[0]["update_time"]
    nodes = store.call(lambda r: r.session_nodes(written.session_id))
    assert len(nodes) == 16
    by_source = {n.metadata["imported_from"]["id"]: n for n in nodes}
    assert session.head == by_source[chatgpt_raw[0]["current_node"]].id
    # Every stored edge points at the node the file's message was linked to.
    for message in conv.nodes:
        node = by_source[message.source_id]
        parent = by_source[message.parent_source_id].id if message.parent_source_id else None
        assert (node.caller if message.edge == "caller" else node.predecessor) == parent
        assert node.output == message.output and node.role == message.role
    graph = Graph(nodes)
    assert len(active_path(graph, session.head)) == 16
    tools = [n for n in nodes if n.role == "tool"]
    assert len(tools) == 5 and all(graph.get(t.caller or "").role == "assistant" for t in tools)


def test_seq_order_has_every_parent_before_its_child(store: Store) -> None:
    raw = json.loads((DATA / "librechat-tree.json").read_text(encoding="utf-8"))
    (conv,) = librechat.parse(raw).conversations
    written = write(store, conv)
    nodes = store.call(lambda r: r.session_nodes(written.session_id))
    seq = {n.id: n.seq for n in nodes}
    assert len(nodes) == 9 and written.branches == 3
    assert all(n.parent is None or seq[n.parent] < n.seq for n in nodes)
    # Siblings keep their order from the file, so `< N/M >` reads as it did there.
    text_of = {n.id: n.text for n in nodes}
    kids = [text_of[n.id] for n in nodes if n.predecessor is not None
            and text_of[n.predecessor] == "thanks"]
    assert kids[0].endswith("Good luck with your project!")
    assert kids[1].endswith("Happy coding!")


def test_importing_the_same_conversation_twice_adds_nothing(
    store: Store, chatgpt_raw: list[dict[str, Any]]
) -> None:
    conv = chatgpt.parse(chatgpt_raw).conversations[0]
    first = write(store, conv)
    before = (count(store, "nodes"), count(store, "sessions"), count(store, "import_sources"))
    head_before = store.call(lambda r: r.get_session(first.session_id)).head
    again = write(store, conv, now=2000.0)
    assert (again.session_id, again.created_session, again.nodes, again.branches) == (
        first.session_id, False, 0, 0)
    assert (count(store, "nodes"), count(store, "sessions"),
            count(store, "import_sources")) == before
    session = store.call(lambda r: r.get_session(first.session_id))
    assert session.head == head_before and session.updated_at == chatgpt_raw[0]["update_time"]


def test_a_later_export_of_the_same_conversation_adds_only_what_is_new(
    store: Store, chatgpt_raw: list[dict[str, Any]]
) -> None:
    raw = copy.deepcopy(chatgpt_raw[1])
    first = write(store, chatgpt.parse(raw).conversations[0])
    mapping = raw["mapping"]
    last = raw["current_node"]
    mapping[last]["children"] = ["u-new"]
    mapping["u-new"] = {"id": "u-new", "parent": last, "children": ["a-new"], "message": {
        "id": "u-new", "author": {"role": "user"}, "create_time": 1697373200.0,
        "content": {"content_type": "text", "parts": ["and in Rust?"]}, "metadata": {}}}
    mapping["a-new"] = {"id": "a-new", "parent": "u-new", "children": [], "message": {
        "id": "a-new", "author": {"role": "assistant"}, "create_time": 1697373210.0,
        "content": {"content_type": "text", "parts": ["fn main() {}"]},
        "metadata": {"model_slug": "gpt-4"}}}
    raw["current_node"] = "a-new"
    raw["update_time"] = 1697373210.0
    second = write(store, chatgpt.parse(raw).conversations[0], now=3000.0)
    assert (second.session_id, second.created_session, second.nodes) == (
        first.session_id, False, 2)
    assert second.branches == 0  # the same branch grew longer
    nodes = store.call(lambda r: r.session_nodes(first.session_id))
    assert len(nodes) == 7
    by_text = {n.text: n for n in nodes}
    old_tip = next(n for n in nodes if n.metadata["imported_from"]["id"] == last)
    assert by_text["and in Rust?"].predecessor == old_tip.id
    session = store.call(lambda r: r.get_session(first.session_id))
    assert session.head == by_text["fn main() {}"].id
    assert session.updated_at == 1697373210.0


def test_a_failed_write_leaves_nothing_behind(
    store: Store, chatgpt_raw: list[dict[str, Any]]
) -> None:
    store.call(lambda r: r.create_session(Session("taken", "x", None, "", 1.0, updated_at=1.0)))
    conv = chatgpt.parse(chatgpt_raw).conversations[0]
    # Node ids are fresh, but the session id collides: the failure comes after the nodes
    # and their source records were written, inside the same transaction.
    make = iter([*(f"n{i}" for i in range(len(conv.nodes))), "taken"])
    with pytest.raises(duckdb.Error):
        write(store, conv, make=make)
    assert count(store, "nodes") == 0
    assert count(store, "import_sources") == 0
    assert count(store, "sessions") == 1
    # The store is still usable, and numbering did not skip.
    written = write(store, conv)
    assert written.nodes == 16
    seqs = sorted(n.seq for n in store.call(lambda r: r.session_nodes(written.session_id)))
    assert seqs == list(range(1, 17))


def test_two_conversations_with_the_same_message_ids_stay_apart(store: Store) -> None:
    def tiny(conv_id: str, text: str) -> dict[str, Any]:
        return {"conversationId": conv_id, "title": conv_id, "messages": [
            {"messageId": "m1", "isCreatedByUser": True, "text": text}]}

    a = write(store, librechat.parse(tiny("A", "first")).conversations[0])
    b = write(store, librechat.parse(tiny("B", "second")).conversations[0])
    assert a.session_id != b.session_id and a.nodes == b.nodes == 1
    assert count(store, "nodes") == 2


def test_a_deleted_and_purged_conversation_comes_back_when_imported_again(
    store: Store, chatgpt_raw: list[dict[str, Any]]
) -> None:
    conv = chatgpt.parse(chatgpt_raw).conversations[1]
    first = write(store, conv)
    sources = count(store, "import_sources")
    store.call(lambda r: r.update_session(first.session_id, hidden=True))
    store.call(lambda r: r.purge_nodes(n.id for n in r.session_nodes(first.session_id)))
    assert count(store, "nodes") == 0

    again = write(store, conv)
    assert (again.session_id, again.created_session, again.nodes) == (first.session_id, False, 5)
    session = store.call(lambda r: r.get_session(first.session_id))
    assert not session.hidden
    nodes = store.call(lambda r: r.session_nodes(first.session_id))
    assert len(nodes) == 5 and session.head in {n.id for n in nodes}
    assert count(store, "import_sources") == sources
    assert write(store, conv).nodes == 0
