"""What the chat shows of a turn before the store has it: a pending message, the nodes a
turn reported joined to the view on screen, and what Retry reruns."""

from __future__ import annotations

from treechat.core import dag
from treechat.core.model import Node, Session
from treechat.services.turns.sessions import SessionView
from treechat.ui.controllers.turn_views import (
    PENDING_PREFIX,
    extend_view,
    is_pending,
    retry_target,
)


def node(node_id: str, role: str, predecessor: str | None, seq: int) -> Node:
    return Node(node_id, seq, 1000.0 + seq, "s", role, output=f"{role} {node_id}",
                predecessor=predecessor)


def view_of(nodes: list[Node], head: str | None) -> SessionView:
    graph = dag.Graph(nodes)
    return SessionView(Session("s", "Chat", head, "m", 1000.0), graph,
                       dag.active_path(graph, head), frozenset(), frozenset())


def test_a_message_shown_before_the_store_has_it_is_pending() -> None:
    assert is_pending(f"{PENDING_PREFIX}s")
    assert not is_pending("u1")


def test_nodes_a_turn_reported_join_the_view_and_head_moves_to_the_reply() -> None:
    before = view_of([node("u1", "user", None, 1)], "u1")
    reply = node("a1", "assistant", "u1", 2)
    after = extend_view(before, [reply], "a1")
    assert after.head == "a1" and [n.id for n in after.path] == ["u1", "a1"]
    assert before.head == "u1" and "a1" not in before.graph  # the view shown is not changed
    # a node the view already has is not added twice, and a head it lacks is not taken
    again = extend_view(after, [reply], "elsewhere")
    assert again.head == "a1" and len(again.graph) == 2


def test_retry_reruns_the_last_message_of_the_branch() -> None:
    nodes = [node("u1", "user", None, 1), node("a1", "assistant", "u1", 2),
             node("t1", "tool", "a1", 3)]
    assert retry_target(view_of(nodes, "t1")) == "a1"
    assert retry_target(view_of(nodes[:1], "u1")) == "u1"
    assert retry_target(view_of([], None)) is None
