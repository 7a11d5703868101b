"""What the chat shows of a turn before the store has it: the message at once (pending), the
nodes a turn reported added to the view shown, the view a finished turn's changes (or a
version switch) leave, and what Retry reruns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ...core import dag
from ...core.model import Node
from ...services.turns.changes import HeadChanges, TurnChanges
from ...services.turns.sessions import SessionView

PENDING_PREFIX = "pending-"


def is_pending(node_id: str) -> bool:
    """A message the chat shows before the store has it: never an id to look up."""
    return node_id.startswith(PENDING_PREFIX)


def extend_view(view: SessionView, nodes: Sequence[Node], head: str | None) -> SessionView:
    """The view after `nodes` were written and HEAD moved, without asking the store."""
    graph = view.graph.with_nodes([n for n in nodes if n.id not in view.graph])
    head = head if head is not None and head in graph else view.head
    session = replace(view.session, head=head)
    return SessionView(session, graph, dag.active_path(graph, head), view.hidden, view.pinned)


def retry_target(view: SessionView) -> str | None:
    """What Retry without a target reruns: the last message of the branch."""
    for node in reversed(view.path):
        if node.role in ("assistant", "user"):
            return node.id
    return None


def applied_view(view: SessionView, changes: TurnChanges, *, keep_head: bool = False
                 ) -> SessionView:
    """The view after a turn whose `changes` are complete, without asking the store: the
    nodes it wrote in the graph, the session's row as the turn left it, and HEAD where the
    turn left it (where the view has it with `keep_head`: the user went to another branch
    while the turn ran)."""
    stored = changes.session if changes.session is not None else view.session
    added = [n for n in changes.nodes if n.id not in view.graph]
    graph = view.graph.with_nodes(added)
    head = view.head if keep_head else stored.head
    if head is not None and head not in graph:
        head = view.head
    session = replace(stored, head=head)
    path = _grown_path(view, added, head)
    if path is None:
        path = dag.active_path(graph, head)
    return SessionView(session, graph, path, view.hidden, view.pinned)


def _grown_path(view: SessionView, added: Sequence[Node], head: str | None
                ) -> tuple[Node, ...] | None:
    """The path to `head` when the turn only went on from the view's HEAD (what the path
    shows is then the path shown and what was added after it, in order); None otherwise
    (a new version, tool results, another branch), when the path is walked afresh."""
    if head == view.head:
        return view.path if not added else None
    chain = [n for n in added if n.role != "tool"]
    if not chain or len(chain) != len(added) or chain[-1].id != head:
        return None
    above = view.head
    for node in chain:
        if node.predecessor != above or node.caller is not None:
            return None
        above = node.id
    return (*view.path, *chain)


def moved_view(view: SessionView, changes: HeadChanges) -> SessionView:
    """The view after HEAD moved across its own graph (a version switch): the same graph,
    the session's row as stored, the path to the new HEAD."""
    head = changes.head if changes.head in view.graph else None
    return SessionView(changes.session, view.graph, dag.active_path(view.graph, head),
                       view.hidden, view.pinned)
