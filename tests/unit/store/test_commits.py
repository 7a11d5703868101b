"""Commit storage in a real DuckDB file: deltas against the first parent with adaptive
keyframes, node content referenced rather than copied, lossless reload, and storage that
grows linearly with the conversation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.context_graph import ChainBuilder

from treechat.core.commit import ContextCommit
from treechat.core.dag import Change
from treechat.core.model import Annotation, Session
from treechat.core.rules import CompactionRequest, RuleConfig, generate_chain
from treechat.providers.tokenizer import counter_for
from treechat.store import commits as cs
from treechat.store.database import Store

COUNTER = counter_for("gpt-4o")


@pytest.fixture
def store(tmp_path: Path):  # type: ignore[no-untyped-def]
    s = Store.open(tmp_path / "commits.duckdb")
    s.call(lambda r: r.create_session(Session("s", "t", None, "m", 0.0)))
    yield s
    s.close()


def _build(
    store: Store, turns: int, budget: int | None = None
) -> tuple[ChainBuilder, list[ContextCommit]]:
    b = ChainBuilder()
    commit = None
    made: list[ContextCommit] = []
    for i in range(turns):
        nodes = b.turn(f"question {i} " + "word " * 30, f"answer {i}",
                       [("read_file", f"line {i}\n" * 200)])
        store.call(lambda r, n=nodes, h=b.head: r.apply_change("s", Change(tuple(n), h), b.now))
        chain = generate_chain(commit, nodes, session_id="s", head_node_id=b.head or "",
                               now=b.now, counter=COUNTER, config=RuleConfig(),
                               compaction=CompactionRequest(budget) if budget else None)
        assert store.call(lambda r, c=chain: cs.save_commits(r, c)) == len(chain)
        made.extend(chain)
        commit = chain[-1]
    return b, made


def test_round_trip_is_lossless(store: Store) -> None:
    _, made = _build(store, 25, budget=2_500)
    for c in (made[0], made[len(made) // 2], made[-1]):
        loaded = store.call(lambda r, c=c: cs.load_commit(r, c.id))
        assert loaded is not None
        assert loaded.id == c.id and loaded.items == c.items
        assert loaded.parent_ids == c.parent_ids and loaded.head_node_id == c.head_node_id
        assert loaded.total_tokens == c.total_tokens and loaded.live == c.live
        assert loaded.max_seq == c.max_seq and loaded.aged_through == c.aged_through


def test_saving_again_is_a_no_op(store: Store) -> None:
    _, made = _build(store, 3)
    assert store.call(lambda r: cs.save_commit(r, made[-1])) is False


def test_children_store_only_their_delta(store: Store) -> None:
    _, made = _build(store, 12)
    rows = dict(store.call(lambda r: r.con.execute(
        "SELECT c.id, count(i.position) FROM commits c LEFT JOIN commit_items i "
        "ON i.commit_id = c.id GROUP BY c.id").fetchall()))
    keyframes = dict(store.call(lambda r: r.con.execute(
        "SELECT id, keyframe FROM commits").fetchall()))
    for c in made[1:]:
        if not keyframes[c.id]:
            assert rows[c.id] == len(c.changed) < len(c.items)
    assert keyframes[made[0].id]


def test_full_items_reference_node_content_instead_of_copying_it(store: Store) -> None:
    b, _made = _build(store, 2)
    texts = [row[0] for row in store.call(lambda r: r.con.execute(
        "SELECT CAST(item AS VARCHAR) FROM commit_items").fetchall())]
    first_user = b.nodes[0]
    stored = next(json.loads(t) for t in texts if json.loads(t)["n"] == first_user.id)
    assert "x" not in stored  # the text lives in the node, not in the commit
    assert stored["ref"] == "node"


def test_load_on_top_of_a_known_ancestor(store: Store) -> None:
    _, made = _build(store, 10)
    known = {made[5].id: made[5]}
    loaded = store.call(lambda r: cs.load_commit(r, made[-1].id, known=known))
    assert loaded is not None and loaded.items == made[-1].items


def test_latest_commit_for_a_head_prefers_the_compacted_one(store: Store) -> None:
    b, made = _build(store, 14, budget=2_000)
    compacted = [c for c in made if c.summary.startswith("compaction")]
    assert compacted
    last = compacted[-1]
    assert store.call(lambda r: cs.latest_commit_for_head(r, last.head_node_id)) == max(
        (c for c in made if c.head_node_id == last.head_node_id), key=lambda c: c.depth).id
    assert b.head is not None


@pytest.mark.slow
def test_storage_grows_linearly_with_turns(store: Store) -> None:
    """Bytes per turn stay flat as the conversation grows (a copy-every-item design would
    triple them between 100 and 300 turns)."""
    sizes = {}
    b = ChainBuilder()
    commit = None
    for i in range(300):
        nodes = b.turn(f"q{i} " + "w " * 20, "a " * 20, [("grep", "hit\n" * 30)])
        store.call(lambda r, n=nodes, h=b.head: r.apply_change("s", Change(tuple(n), h), b.now))
        chain = generate_chain(commit, nodes, session_id="s", head_node_id=b.head or "",
                               now=b.now, counter=COUNTER, config=RuleConfig(),
                               compaction=CompactionRequest(3_000))
        store.call(lambda r, c=chain: cs.save_commits(r, c))
        commit = chain[-1]
        if i + 1 in (100, 300):
            sizes[i + 1] = store.call(cs.storage_bytes)
    per_turn_100 = sizes[100] / 100
    per_turn_300 = sizes[300] / 300
    assert per_turn_300 < 1.5 * per_turn_100


def test_graph_reads_for_the_engine(store: Store) -> None:
    b = ChainBuilder()
    b.user("hi")
    a = b.assistant("calling")
    t = b.tool(a, "grep", "hit")
    store.call(lambda r: r.apply_change("s", Change(tuple(b.nodes), a.id), b.now))
    stored = store.call(lambda r: r.get_node(t.id))
    assert stored is not None
    assert [n.id for n in store.call(lambda r: cs.tool_children(r, [a.id], 0))] == [t.id]
    assert store.call(lambda r: cs.tool_children(r, [a.id], stored.seq)) == ()
    assert {n.id for n in store.call(lambda r: cs.nodes_after(r, 0, 10))} == {
        n.id for n in b.nodes}
    base, chain, complete = store.call(lambda r: cs.walk_to_commit(r, a.id, 10))
    assert base is None and complete and [n.id for n in chain] == [b.nodes[0].id, a.id]
    store.call(lambda r: r.add_annotation(Annotation(a.id, "pin", 1.0)))
    store.call(lambda r: r.add_annotation(Annotation(b.nodes[0].id, "pin", 2.0)))
    store.call(lambda r: r.add_annotation(Annotation(a.id, "unpin", 3.0)))
    assert store.call(cs.pinned_nodes) == frozenset({b.nodes[0].id})
