"""The conversation DAG's operations and invariants, as a user of `< N/M >`, retry, edit,
branch and hide would see them."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treechat.core import dag
from treechat.core.dag import Graph
from treechat.core.model import Annotation, GraphError, Node


def node(
    nid: str,
    seq: int,
    role: str = "user",
    pred: str | None = None,
    caller: str | None = None,
    text: str = "",
    **meta: object,
) -> Node:
    return Node(
        id=nid,
        seq=seq,
        created_at=float(seq),
        session_id="s",
        role=role,  # type: ignore[arg-type]
        output=text or nid,
        predecessor=pred,
        caller=caller,
        metadata=dict(meta),
    )


def linear() -> Graph:
    return Graph(
        [
            node("u1", 1),
            node("a1", 2, "assistant", "u1"),
            node("u2", 3, pred="a1"),
            node("a2", 4, "assistant", "u2"),
        ]
    )


def test_predecessor_and_caller_are_exclusive() -> None:
    with pytest.raises(GraphError, match="mutually exclusive"):
        node("t", 1, "tool", pred="a", caller="b")


def test_active_path_follows_head_and_hangs_tools_after_their_caller() -> None:
    g = Graph(
        [
            node("u1", 1),
            node("a1", 2, "assistant", "u1"),
            node("t1", 3, "tool", caller="a1", tool_call_id="c1"),
            node("a2", 4, "assistant", "a1"),
        ]
    )
    assert [n.id for n in dag.active_path(g, "a2")] == ["u1", "a1", "t1", "a2"]


def test_a_rerun_tool_replaces_the_earlier_run_of_the_same_call() -> None:
    g = Graph(
        [
            node("u1", 1),
            node("a1", 2, "assistant", "u1"),
            node("t1", 3, "tool", caller="a1", tool_call_id="c1"),
            node("t2", 4, "tool", caller="a1", tool_call_id="c2"),
            node("t1b", 5, "tool", caller="a1", tool_call_id="c1"),
            node("a2", 6, "assistant", "a1"),
        ]
    )
    assert [n.id for n in dag.active_path(g, "a2")] == ["u1", "a1", "t2", "t1b", "a2"]


def test_hang_tool_runs_puts_a_covered_callers_results_first() -> None:
    conversation = [node("u2", 10), node("a3", 12, "assistant", "u2")]
    tools = [
        node("t9", 13, "tool", caller="a3", tool_call_id="x"),
        node("t0", 11, "tool", caller="a0", tool_call_id="y"),
        node("stray", 14, "tool", caller="elsewhere", tool_call_id="z"),
    ]
    ordered = dag.hang_tool_runs(conversation, tools, first_caller="a0")
    assert [n.id for n in ordered] == ["t0", "u2", "a3", "t9"]
    assert [n.id for n in dag.hang_tool_runs(conversation, tools)] == ["u2", "a3", "t9"]
    # Every run is kept in order for the request; only the view keeps the newest per call.
    rerun = [*tools, node("t9b", 15, "tool", caller="a3", tool_call_id="x")]
    assert [n.id for n in dag.hang_tool_runs(conversation, rerun)] == ["u2", "a3", "t9", "t9b"]
    assert [n.id for n in dag.newest_runs(rerun)] == ["t0", "stray", "t9b"]


def test_retry_is_a_sibling_and_switching_versions_runs_nothing() -> None:
    g = linear()
    parent = dag.reply_parent(g, "a2")
    retry = node("a2b", 5, "assistant", parent)
    g = g.with_nodes([retry])
    assert dag.version_of(g, "a2") == (1, 2)
    assert dag.version_of(g, "a2b") == (2, 2)
    before = len(g)
    assert dag.switch_version(g, "a2b", 1) == "a2"
    assert dag.switch_version(g, "a2", 2) == "a2b"
    assert len(g) == before


def test_edit_forks_a_user_sibling_and_switching_lands_on_the_branch_tip() -> None:
    g = linear()
    change = dag.edit(g, "u2", new_id="u2b", seq=5, now=5.0, session_id="s", text="other")
    g = g.with_nodes([*change.nodes, node("a2c", 6, "assistant", "u2b")])
    assert change.head == "u2b"
    assert [n.id for n in dag.siblings(g, "u2")] == ["u2", "u2b"]
    # Going back to version 1 lands on the tip of that branch, not the edited message.
    assert dag.switch_version(g, "u2b", 1) == "a2"
    assert dag.switch_version(g, "u2", 2) == "a2c"


def test_edit_refuses_non_user_nodes() -> None:
    with pytest.raises(GraphError):
        dag.edit(linear(), "a1", new_id="x", seq=9, now=9.0, session_id="s", text="t")


def test_branch_session_shares_history() -> None:
    g = linear()
    s = dag.branch_session(g, "a1", session_id="s2", now=1.0, title="t", model="m", forked_from="s")
    assert s.head == "a1"
    assert [n.id for n in dag.active_path(g, s.head)] == ["u1", "a1"]


def test_hidden_branch_is_skipped_by_tips_and_purged_when_unreachable() -> None:
    g = linear()
    g = g.with_nodes([node("u2b", 5, pred="a1"), node("a2b", 6, "assistant", "u2b")])
    hidden = dag.hidden_set([Annotation("u2b", "hidden", 1.0)])
    assert dag.branch_tip(g, "u1", hidden) == "a2"
    assert dag.unreachable(g, ["a2"], hidden) == {"u2b", "a2b"}
    unhidden = dag.hidden_set(
        [Annotation("u2b", "hidden", 1.0), Annotation("u2b", "unhidden", 2.0)]
    )
    assert dag.unreachable(g, ["a2"], unhidden) == frozenset()


def test_pins_replay_in_order() -> None:
    notes = [
        Annotation("x", "pin", 1.0),
        Annotation("y", "pin", 2.0),
        Annotation("x", "unpin", 3.0),
    ]
    assert dag.pinned_set(notes) == {"y"}


# --- properties ---------------------------------------------------------------------------

OPS = st.lists(
    st.tuples(
        st.sampled_from(["send", "reply", "retry", "edit", "switch", "checkout", "tool"]),
        st.integers(min_value=0, max_value=10_000),
    ),
    max_size=40,
)


def run_ops(ops: list[tuple[str, int]]) -> tuple[list[Graph], list[str | None], list[int]]:
    """Apply random operations like a user would, returning every graph state and head."""
    graph = Graph([])
    head: str | None = None
    seqs = itertools.count(1)
    ids = itertools.count(1)
    graphs, heads, checkout_sizes = [graph], [head], []
    for op, pick in ops:
        nodes = sorted(graph, key=lambda n: n.seq)
        if op == "send":
            ch = dag.send(
                graph,
                head,
                node_id=f"n{next(ids)}",
                seq=next(seqs),
                now=0.0,
                session_id="s",
                text="hi",
            )
            graph, head = graph.with_nodes(ch.nodes), ch.head
        elif op == "reply" and head is not None:
            n = Node(
                id=f"n{next(ids)}",
                seq=next(seqs),
                created_at=0.0,
                session_id="s",
                role="assistant",
                output="ok",
                predecessor=head,
            )
            graph, head = graph.with_nodes([n]), n.id
        elif op == "retry" and nodes:
            target = nodes[pick % len(nodes)]
            if target.role in ("user", "assistant"):
                n = Node(
                    id=f"n{next(ids)}",
                    seq=next(seqs),
                    created_at=0.0,
                    session_id="s",
                    role="assistant",
                    output="again",
                    predecessor=dag.reply_parent(graph, target.id),
                )
                graph, head = graph.with_nodes([n]), n.id
        elif op == "edit" and nodes:
            target = nodes[pick % len(nodes)]
            if target.role == "user":
                ch = dag.edit(
                    graph,
                    target.id,
                    new_id=f"n{next(ids)}",
                    seq=next(seqs),
                    now=0.0,
                    session_id="s",
                    text="edited",
                )
                graph, head = graph.with_nodes(ch.nodes), ch.head
        elif op == "tool" and head is not None and graph.get(head).role == "assistant":
            n = Node(
                id=f"n{next(ids)}",
                seq=next(seqs),
                created_at=0.0,
                session_id="s",
                role="tool",
                caller=head,
                output="result",
                metadata={"tool_call_id": str(pick)},
            )
            graph = graph.with_nodes([n])
        elif op == "switch" and nodes:
            target = nodes[pick % len(nodes)]
            if target.role != "tool":
                peers = dag.siblings(graph, target.id)
                size = len(graph)
                head = dag.switch_version(graph, target.id, pick % len(peers) + 1)
                checkout_sizes.append(len(graph) - size)
        elif op == "checkout" and nodes:
            size = len(graph)
            head = nodes[pick % len(nodes)].id
            checkout_sizes.append(len(graph) - size)
        graphs.append(graph)
        heads.append(head)
    return graphs, heads, checkout_sizes


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_graph_is_append_only_under_any_operations(ops: list[tuple[str, int]]) -> None:
    graphs, _, _ = run_ops(ops)
    for before, after in itertools.pairwise(graphs):
        for nid, n in before.nodes.items():
            assert after.nodes[nid] == n  # nothing rewritten or removed


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_checkout_never_adds_nodes(ops: list[tuple[str, int]]) -> None:
    _, _, sizes = run_ops(ops)
    assert all(s == 0 for s in sizes)


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_seq_strictly_increases_along_every_path_and_edges_stay_exclusive(
    ops: list[tuple[str, int]],
) -> None:
    graphs, _, _ = run_ops(ops)
    final = graphs[-1]
    for n in final:
        assert n.predecessor is None or n.caller is None
        if n.parent is not None:
            assert final.get(n.parent).seq < n.seq
    seqs = [n.seq for n in final]
    assert len(set(seqs)) == len(seqs)


@settings(max_examples=150, deadline=None)
@given(OPS, st.integers(min_value=0, max_value=1000))
def test_switching_versions_round_trips(ops: list[tuple[str, int]], pick: int) -> None:
    graphs, _, _ = run_ops(ops)
    g = graphs[-1]
    candidates = [n for n in g if n.role != "tool" and len(dag.siblings(g, n.id)) > 1]
    if not candidates:
        return
    target = candidates[pick % len(candidates)]
    n, m = dag.version_of(g, target.id)
    other = pick % m + 1
    away = dag.switch_version(g, target.id, other)
    # From wherever we landed, choosing version n of the same sibling group comes back to
    # the same branch tip as choosing it from the start.
    peer_on_path = next(
        x for x in dag.ancestry(g, away) if x.id in {p.id for p in dag.siblings(g, target.id)}
    )
    back = dag.switch_version(g, peer_on_path.id, n)
    assert back == dag.branch_tip(g, target.id)
    assert dag.version_of(g, dag.siblings(g, target.id)[n - 1].id) == (n, m)


def test_renumber_keeps_order() -> None:
    nodes = [node("a", 0), node("b", 0)]
    assert [n.seq for n in dag.renumber(nodes, 7)] == [7, 8]
    assert replace(nodes[0], seq=3).seq == 3


def test_a_retry_after_a_denied_tool_call_asks_from_before_the_call() -> None:
    """Ctrl+R on the reply written after a denial re-asks the question: the model may call
    the tool again and the person is asked again, the denial is not reused."""
    g = Graph([
        node("u1", 1),
        node("a1", 2, "assistant", "u1", tool_calls=[{"id": "c1", "name": "t"}]),
        node("t1", 3, "tool", caller="a1", tool_call_id="c1", denied=True),
        node("a2", 4, "assistant", "a1", text="I could not run it."),
    ])
    assert dag.reply_parent(g, "a2") == "u1"
    allowed = Graph([
        node("u1", 1),
        node("a1", 2, "assistant", "u1", tool_calls=[{"id": "c1", "name": "t"}]),
        node("t1", 3, "tool", caller="a1", tool_call_id="c1"),
        node("a2", 4, "assistant", "a1", text="It says 42."),
    ])
    assert dag.reply_parent(allowed, "a2") == "a1"  # an allowed result is kept


def _same_graph(a: Graph, b: Graph) -> None:
    assert list(a.nodes) == list(b.nodes)
    assert [r.id for r in a.roots] == [r.id for r in b.roots]
    for node in b:
        assert a.children(node.id) == b.children(node.id)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=300), st.integers(min_value=0, max_value=300),
       st.integers(min_value=0, max_value=9))
def test_adding_nodes_gives_the_graph_built_from_all_of_them(
        size: int, cut: int, seed: int) -> None:
    from tests.support.synthetic_graph import conversation

    nodes = conversation(size, seed=seed)
    cut = min(cut, len(nodes))
    whole = Graph(nodes)
    grown = Graph(nodes[:cut]).with_nodes(nodes[cut:])
    _same_graph(grown, whole)
    assert dag.active_path(grown, nodes[-1].id) == dag.active_path(whole, nodes[-1].id)
    # older nodes, or in another order, come out the same too
    shuffled = Graph(nodes[cut:]).with_nodes(reversed(nodes[:cut]))
    _same_graph(shuffled, whole)


def test_adding_nothing_is_the_same_graph_and_the_old_graph_does_not_change() -> None:
    a = Node("a", 1, 0.0, "s", "user")
    b = Node("b", 2, 0.0, "s", "assistant", predecessor="a")
    base = Graph([a])
    assert base.with_nodes([]) is base
    grown = base.with_nodes([b])
    assert grown.children("a") == (b,) and base.children("a") == ()
    assert "b" not in base and len(base) == 1
