"""What the chat shows of a turn before the store has it: a pending message, the nodes a
turn reported joined to the view on screen, the view a finished turn's changes leave, and
what Retry reruns."""

from __future__ import annotations

from treechat.core import dag
from treechat.core.model import Node, Session
from treechat.services.turns.changes import TurnChanges
from treechat.services.turns.sessions import SessionView
from treechat.ui.controllers.turn_views import (
    PENDING_PREFIX,
    applied_view,
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


def tool(node_id: str, caller: str, seq: int) -> Node:
    return Node(node_id, seq, 1000.0 + seq, "s", "tool", output="ran", caller=caller,
                metadata={"tool_call_id": node_id})


def changes_to(nodes: list[Node], head: str) -> TurnChanges:
    return TurnChanges("s", tuple(nodes), head,
                       session=Session("s", "Chat", head, "m", 1000.0, updated_at=2000.0))


def as_loaded(view: SessionView) -> SessionView:
    """The same session as a fresh read of the store would give it."""
    return view_of(list(view.graph), view.head)


def test_a_finished_turn_leaves_the_view_a_fresh_read_would_give() -> None:
    base = [node("u1", "user", None, 1), node("a1", "assistant", "u1", 2),
            node("u2", "user", "a1", 3)]
    shown = view_of(base, "u2")
    cases = {
        "a reply after the message": [node("a2", "assistant", "u2", 4)],
        "a step with tools, then the reply": [
            node("a2", "assistant", "u2", 4), tool("t1", "a2", 5),
            node("a3", "assistant", "a2", 6)],
        "a new version of an earlier reply": [node("a1b", "assistant", "u1", 4)],
        "a new version of the message and its reply": [
            node("u2b", "user", "a1", 4), node("a2b", "assistant", "u2b", 5)],
    }
    for what, wrote in cases.items():
        after = applied_view(shown, changes_to(wrote, wrote[-1].id))
        fresh = as_loaded(after)
        assert after.path == fresh.path, what
        assert after.head == wrote[-1].id and after.session.updated_at == 2000.0, what
        assert list(after.graph.nodes) == list(fresh.graph.nodes), what
    assert "a2" not in shown.graph and shown.head == "u2"  # the view shown is not changed


def test_a_turn_on_a_branch_the_user_left_keeps_the_branch_on_screen() -> None:
    nodes = [node("u1", "user", None, 1), node("a1", "assistant", "u1", 2),
             node("a1b", "assistant", "u1", 3)]
    shown = view_of(nodes, "a1")  # the user went back to the first version
    after = applied_view(shown, changes_to([node("u2", "user", "a1b", 4),
                                            node("a2", "assistant", "u2", 5)], "a2"),
                         keep_head=True)
    assert after.head == "a1" and [n.id for n in after.path] == ["u1", "a1"]
    assert "a2" in after.graph and after.path == as_loaded(after).path
