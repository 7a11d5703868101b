"""ContextCommit: content-addressed ids, delta + keyframe representation, generation cost,
and the spec's invariants 2 (snapshots never rewritten), 5 (summaries never in the DAG),
6 (attach expanded once) and 7 (multi-parent commits only from merge)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.commits import generate_commit
from tests.support.context_graph import ChainBuilder

from treechat.core.commit import (
    ContextCommit,
    ContextItem,
    apply_delta,
    item_from_record,
    item_record,
    make_commit,
)
from treechat.core.rules import CompactionRequest, RuleConfig, generate_chain
from treechat.providers.tokenizer import counter_for

COUNTER = counter_for("gpt-4o")


def _snapshot(commit: ContextCommit) -> str:
    return json.dumps([commit.id, list(commit.parent_ids), commit.head_node_id,
                       [item_record(i) for i in commit.items]], sort_keys=True)


def _grow(b: ChainBuilder, parent: ContextCommit | None, turns: int, **kw: object
          ) -> tuple[ContextCommit, list[ContextCommit]]:
    out: list[ContextCommit] = []
    commit = parent
    for i in range(turns):
        nodes = b.turn(f"question {i} about the ledger", f"answer {i}",
                       [("read_file", f"line {i}\n" * 50)])
        chain = generate_chain(commit, nodes, session_id=b.session_id, head_node_id=b.head or "",
                               now=b.now, counter=COUNTER, config=RuleConfig(), **kw)  # type: ignore[arg-type]
        out.extend(chain)
        commit = chain[-1]
    assert commit is not None
    return commit, out


def test_same_inputs_give_the_same_id_and_different_inputs_differ() -> None:
    a, b = ChainBuilder(), ChainBuilder()
    ca, _ = _grow(a, None, 3)
    cb, _ = _grow(b, None, 3)
    assert ca.id == cb.id
    c = ChainBuilder()
    c.turn("a different question", "answer")
    cc = generate_commit(None, c.nodes, session_id="s", head_node_id=c.head or "", now=c.now,
                         counter=COUNTER)
    assert cc.id != ca.id
    assert ca.id.startswith("cc_")


def test_child_commit_records_only_its_delta() -> None:
    b = ChainBuilder()
    commit, chain = _grow(b, None, 5)
    parent = chain[-2]
    assert commit.parent_ids == (parent.id,)
    assert commit.depth == parent.depth + 1
    # Only new items (and items a rule tightened) are in the delta.
    assert set(commit.changed) >= set(range(len(parent.items), len(commit.items)))
    assert len(commit.changed) < len(commit.items)
    rebuilt = apply_delta(parent.items, [(p, commit.items[p]) for p in commit.changed],
                          len(commit.items))
    assert rebuilt == commit.items


def test_nothing_new_returns_the_parent_itself() -> None:
    b = ChainBuilder()
    commit, _ = _grow(b, None, 2)
    again = generate_commit(commit, (), session_id="s", head_node_id=commit.head_node_id,
                            now=b.now + 1, counter=COUNTER)
    assert again is commit


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2), min_size=1, max_size=12))
def test_snapshots_are_never_rewritten(script: list[int]) -> None:
    """Invariant 2: generating later commits leaves every earlier commit exactly as it was."""
    b = ChainBuilder()
    commit: ContextCommit | None = None
    seen: list[tuple[ContextCommit, str]] = []
    for op in script:
        nodes = b.turn("q " * (op * 200 + 1), "a " * 50, [("grep", "hit\n" * (op * 400))])
        compaction = CompactionRequest(history_budget=1_500) if op == 2 else None
        for c in generate_chain(commit, nodes, session_id="s", head_node_id=b.head or "",
                                now=b.now, counter=COUNTER, config=RuleConfig(),
                                compaction=compaction):
            seen.append((c, _snapshot(c)))
            commit = c
    for c, snap in seen:
        assert _snapshot(c) == snap
    ids = [c.id for c, _ in seen]
    assert len(ids) == len(set(ids))


def test_summaries_never_enter_the_dag() -> None:
    """Invariant 5: compaction creates summary items only inside the commit."""
    b = ChainBuilder()
    commit, chain = _grow(b, None, 12, compaction=CompactionRequest(history_budget=1_200))
    node_ids = {n.id for n in b.nodes}
    summaries = [i for c in chain for i in c.items if i.is_summary]
    assert summaries
    for s in summaries:
        assert s.source_node_id.startswith("sm_") and s.source_node_id not in node_ids
    assert all(n.role != "summary" for n in b.nodes)  # type: ignore[comparison-overlap]
    folded = [i for i in commit.items if i.state == "summarized"]
    assert folded and all(i.merged_into and i.merged_into.startswith("sm_") for i in folded)


def _source(session: str, turns: int) -> tuple[ChainBuilder, ContextCommit]:
    src = ChainBuilder(session_id=session, seq=1_000)
    commit = None
    for i in range(turns):
        nodes = src.turn(f"side {session} {i}", f"side answer {i}")
        commit = generate_commit(commit, nodes, session_id=session, head_node_id=src.head or "",
                                 now=src.now, counter=COUNTER)
    assert commit is not None
    return src, commit


def test_attach_is_expanded_once_across_turns() -> None:
    """Invariant 6: a second pointer to the same source commit adds nothing."""
    src, source = _source("side", 3)
    b = ChainBuilder()
    b.turn("hello", "hi")
    commit = generate_commit(None, b.nodes, session_id="s", head_node_id=b.head or "",
                             now=b.now, counter=COUNTER)
    meta = {"source_session": "side", "source_head": src.head, "source_commit": source.id}
    for _ in range(2):
        att = b.runtime("attach", "side branch", meta)
        u = b.user("what did the side branch find?")
        commit = generate_commit(commit, [att, u], session_id="s", head_node_id=u.id,
                                 now=b.now, counter=COUNTER, attachments={att.id: source})
    attached = [i for i in commit.items if i.attached_from == source.id]
    assert len(attached) == len(source.live_items()) + 2  # markers around the items
    assert sum(1 for i in attached if i.source_node_id.endswith("#end")) == 1


def test_unloadable_attach_falls_back_to_one_item() -> None:
    b = ChainBuilder()
    att = b.runtime("attach", "gone", {"source_session": "x", "source_head": "y"})
    commit = generate_commit(None, [att], session_id="s", head_node_id=att.id, now=b.now,
                             counter=COUNTER, attachments={att.id: None})
    assert len(commit.items) == 1 and "could not be loaded" in commit.items[0].rendered


def test_multi_parent_commits_only_from_merge() -> None:
    """Invariant 7: attaches alone keep one parent; the merge node adds the peers and locks
    the base peer's block."""
    src1, peer1 = _source("p1", 2)
    src2, peer2 = _source("p2", 2)
    b = ChainBuilder()
    b.turn("start", "ok")
    base = generate_commit(None, b.nodes, session_id="s", head_node_id=b.head or "",
                           now=b.now, counter=COUNTER)
    a1 = b.runtime("attach", "p1", {"source_session": "p1", "source_head": src1.head,
                                    "source_commit": peer1.id})
    a2 = b.runtime("attach", "p2", {"source_session": "p2", "source_head": src2.head,
                                    "source_commit": peer2.id})
    only_attach = generate_commit(base, [a1, a2], session_id="s", head_node_id=a2.id,
                                  now=b.now, counter=COUNTER,
                                  attachments={a1.id: peer1, a2.id: peer2})
    assert len(only_attach.parent_ids) == 1
    m = b.runtime("merge", "Merge both findings into one plan.",
                  {"peers": [peer1.id, peer2.id], "base_peer": peer1.id})
    merged = generate_commit(base, [a1, a2, m], session_id="s", head_node_id=m.id, now=b.now,
                             counter=COUNTER, attachments={a1.id: peer1, a2.id: peer2})
    assert merged.parent_ids == (base.id, peer1.id, peer2.id)
    assert all(i.locked for i in merged.items if i.attached_from == peer1.id)
    assert not any(i.locked for i in merged.items if i.attached_from == peer2.id)
    assert merged.items[-1].role == "user" and "Merge both" in merged.items[-1].rendered


def test_item_records_round_trip() -> None:
    item = ContextItem(source_node_id="t1", role="tool", state="aged", rendered="stub",
                       tokens=12, tool_name="grep", tool_call_id="c", tool_args="{}",
                       call_of="a1", touched_at=5.0, seq=3, attached_from="cc_x", order=2)
    assert item_from_record(item_record(item)) == item


def test_make_commit_keeps_live_positions_and_tokens_incrementally() -> None:
    b = ChainBuilder()
    commit, _ = _grow(b, None, 8, compaction=CompactionRequest(history_budget=1_500))
    assert commit.live == tuple(i for i, it in enumerate(commit.items) if it.live)
    assert commit.total_tokens == sum(it.tokens for it in commit.items if it.live)
    same = make_commit(commit, commit.items, (), session_id="s",
                       head_node_id=commit.head_node_id, now=b.now)
    assert same.total_tokens == commit.total_tokens


def test_merge_names_its_peers_by_commit_even_after_an_intermediate_commit() -> None:
    src, peer = _source("p", 2)
    b = ChainBuilder()
    b.turn("start", "ok")
    base = generate_commit(None, b.nodes, session_id="s", head_node_id=b.head or "",
                           now=b.now, counter=COUNTER)
    ref = {"source_session": "p", "source_head": src.head, "source_commit": peer.id}
    att = b.runtime("attach", "p", dict(ref))
    at_attach = generate_commit(base, [att], session_id="s", head_node_id=att.id, now=b.now,
                                counter=COUNTER, attachments={att.id: peer})
    m = b.runtime("merge", "Merge.", {"peers": [ref], "base_peer": {"source_head": "x"}})
    merged = generate_commit(at_attach, [m], session_id="s", head_node_id=m.id, now=b.now,
                             counter=COUNTER)
    assert merged.parent_ids == (at_attach.id, peer.id)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["turn", "attach-a", "attach-b"]), min_size=1, max_size=8))
def test_any_sequence_of_attaches_expands_each_source_once(steps: list[str]) -> None:
    """Invariant 6 (dedup of attach), whatever the order and repetition of the pointers: a
    source commit's items appear once, between one pair of markers, from its first attach
    on, and later pointers to it add nothing."""
    sources = {"attach-a": _source("side-a", 2), "attach-b": _source("side-b", 3)}
    b = ChainBuilder()
    b.turn("hello", "hi")
    commit = generate_commit(None, b.nodes, session_id="s", head_node_id=b.head or "",
                             now=b.now, counter=COUNTER)
    for step in steps:
        if step == "turn":
            nodes = b.turn("more", "sure")
            commit = generate_commit(commit, nodes, session_id="s", head_node_id=b.head or "",
                                     now=b.now, counter=COUNTER)
            continue
        src, source = sources[step]
        meta = {"source_session": step, "source_head": src.head, "source_commit": source.id}
        att = b.runtime("attach", step, meta)
        u = b.user(f"what did {step} find?")
        commit = generate_commit(commit, [att, u], session_id="s", head_node_id=u.id,
                                 now=b.now, counter=COUNTER, attachments={att.id: source})
    for step, (_, source) in sources.items():
        attached = [i for i in commit.items if i.attached_from == source.id]
        if step in steps:
            assert len(attached) == len(source.live_items()) + 2
            assert sum(1 for i in attached if i.source_node_id.endswith("#end")) == 1
        else:
            assert attached == []


def test_the_newest_question_is_the_users_own_newest_live_message() -> None:
    items = (ContextItem("u1", "user", rendered="first question", seq=1),
             ContextItem("a1", "assistant", rendered="an answer", seq=2),
             ContextItem("u2", "user", rendered="the newest question", seq=3),
             ContextItem("x", "user", rendered="from another branch", seq=4,
                         attached_from="cc_peer"),
             ContextItem("u3", "user", rendered="   ", seq=5))
    commit = make_commit(None, items, (), session_id="s", head_node_id="u3", now=1.0)
    assert commit.newest_question() == ""  # the newest one says nothing
    shorter = make_commit(None, items[:4], (), session_id="s", head_node_id="x", now=1.0)
    assert shorter.newest_question() == "the newest question"
    assert make_commit(None, items[1:2], (), session_id="s", head_node_id="a1",
                       now=1.0).newest_question() == ""
