"""Pure functions over the conversation DAG: ancestry, active path, siblings, branch tips,
and the git-metaphor operations (send, retry, edit, switch version, branch, hide, purge).

Operations never mutate anything: they return the nodes to append and the new HEAD.
Ids, sequence numbers and clocks are passed in by the caller.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .model import Annotation, GraphError, Node, Role, Session


class Graph:
    """A read-only index over a set of nodes: by id, and children by parent edge.

    Children lists are ordered by `seq` (the only ordering key).
    """

    __slots__ = ("_children", "_nodes", "_roots")

    def __init__(self, nodes: Iterable[Node]) -> None:
        by_id: dict[str, Node] = {}
        for node in sorted(nodes, key=lambda n: n.seq):
            by_id[node.id] = node
        children: dict[str, list[Node]] = {}
        roots: list[Node] = []
        for node in by_id.values():
            parent = node.parent
            if parent is None or parent not in by_id:
                roots.append(node)
            else:
                children.setdefault(parent, []).append(node)
        self._nodes = by_id
        self._children = children
        self._roots = roots

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._nodes

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self) -> Any:
        return iter(self._nodes.values())

    def get(self, node_id: str) -> Node:
        try:
            return self._nodes[node_id]
        except KeyError:
            raise GraphError(f"unknown node {node_id!r}") from None

    def find(self, node_id: str | None) -> Node | None:
        return None if node_id is None else self._nodes.get(node_id)

    @property
    def nodes(self) -> Mapping[str, Node]:
        return self._nodes

    @property
    def roots(self) -> tuple[Node, ...]:
        return tuple(self._roots)

    def children(self, node_id: str) -> tuple[Node, ...]:
        """Every node hanging from `node_id` by either edge, in seq order."""
        return tuple(self._children.get(node_id, ()))

    def conversation_children(self, node_id: str) -> tuple[Node, ...]:
        """Children by predecessor edge only (the next turns, not tool calls)."""
        return tuple(n for n in self._children.get(node_id, ()) if n.predecessor == node_id)

    def tool_children(self, node_id: str) -> tuple[Node, ...]:
        """Children by caller edge (tool calls an assistant made), in seq order."""
        return tuple(n for n in self._children.get(node_id, ()) if n.caller == node_id)

    def with_nodes(self, nodes: Iterable[Node]) -> Graph:
        """This graph and `nodes`. Nodes newer than every node here (a turn's writes) are
        appended to copies of the indexes; anything else rebuilds them."""
        added = sorted(nodes, key=lambda n: n.seq)
        if not added:
            return self
        newest = next(reversed(self._nodes.values()), None)
        ids = {n.id for n in added}
        if ((newest is not None and added[0].seq <= newest.seq) or len(ids) < len(added)
                or any(i in self._nodes for i in ids)
                or any(r.parent in ids for r in self._roots)):
            return Graph([*self._nodes.values(), *added])
        graph = Graph.__new__(Graph)
        by_id = dict(self._nodes)
        by_id.update((n.id, n) for n in added)
        children = dict(self._children)  # the lists are shared until one of them grows
        roots = self._roots
        for node in added:
            parent = node.parent
            if parent is None or parent not in by_id:
                roots = [*roots, node]
            else:
                children[parent] = [*children.get(parent, ()), node]
        graph._nodes = by_id
        graph._children = children
        graph._roots = roots
        return graph


def ancestry(graph: Graph, node_id: str) -> tuple[Node, ...]:
    """The chain from the root down to `node_id` (inclusive), following either edge."""
    chain: list[Node] = []
    seen: set[str] = set()
    current: Node | None = graph.get(node_id)
    while current is not None:
        if current.id in seen:
            raise GraphError(f"cycle through node {current.id}")
        seen.add(current.id)
        chain.append(current)
        current = graph.find(current.parent)
    chain.reverse()
    return tuple(chain)


def is_ancestor(graph: Graph, ancestor_id: str, node_id: str) -> bool:
    return any(n.id == ancestor_id for n in ancestry(graph, node_id))


def active_path(graph: Graph, head: str | None) -> tuple[Node, ...]:
    """What the user sees on the branch ending at `head`: the ancestry with each assistant's
    tool calls hung back after it (caller children, newest run per tool call id)."""
    if head is None:
        return ()
    chain = ancestry(graph, head)
    on_chain = {n.id for n in chain}
    conversation = [
        n for n in chain if not (n.role == "tool" and n.caller is not None and n.caller in on_chain)
    ]
    calls = [n for n in conversation if n.role == "assistant"]
    tools = [t for n in calls for t in newest_runs(graph.tool_children(n.id))]
    return hang_tool_runs(conversation, tools)


def newest_runs(tools: Iterable[Node]) -> list[Node]:
    """Per tool call id only the newest run, in seq order: a re-run replaces the earlier one
    on screen (the request keeps both, the earlier one as text: see `core.render`)."""
    latest: dict[str, Node] = {}
    for tool in sorted(tools, key=lambda n: n.seq):
        latest[str(tool.metadata.get("tool_call_id") or tool.id)] = tool
    return sorted(latest.values(), key=lambda n: n.seq)


def hang_tool_runs(
    conversation: Iterable[Node], tools: Iterable[Node], *, first_caller: str | None = None
) -> tuple[Node, ...]:
    """`conversation` in order, each node followed by the tool results it called, in seq
    order. The results of `first_caller`, a caller that is not in `conversation` (the head a
    context commit already covers), come first. The active path and the context engine's
    history are both put in this order."""
    by_caller: dict[str, list[Node]] = {}
    for tool in sorted(tools, key=lambda n: n.seq):
        if tool.caller is not None:
            by_caller.setdefault(tool.caller, []).append(tool)
    out = list(by_caller.get(first_caller, ())) if first_caller is not None else []
    for node in conversation:
        out.append(node)
        out.extend(by_caller.get(node.id, ()))
    return tuple(out)


def siblings(graph: Graph, node_id: str) -> tuple[Node, ...]:
    """Versions of a node: nodes hanging from the same parent by the same edge kind with the
    same role group (user edits together, assistant retries together), in seq order."""
    node = graph.get(node_id)
    if node.parent is None or node.parent not in graph:
        peers: Sequence[Node] = [
            r for r in graph.roots if r.parent is None or r.parent not in graph
        ]
    elif node.caller is not None:
        peers = graph.tool_children(node.caller)
        key = node.metadata.get("tool_call_id")
        peers = [p for p in peers if p.metadata.get("tool_call_id") == key]
    else:
        peers = graph.conversation_children(node.predecessor or "")
    return tuple(p for p in peers if _same_group(p.role, node.role))


def _same_group(a: Role, b: Role) -> bool:
    return a == b or {a, b} <= {"user", "runtime"}


def version_of(graph: Graph, node_id: str) -> tuple[int, int]:
    """(N, M) for the `< N/M >` switch: this node's 1-based place among its siblings."""
    peers = siblings(graph, node_id)
    ids = [p.id for p in peers]
    return ids.index(node_id) + 1, len(ids)


def descendants(graph: Graph, node_id: str) -> tuple[Node, ...]:
    out: list[Node] = []
    stack = [node_id]
    while stack:
        for child in graph.children(stack.pop()):
            out.append(child)
            stack.append(child.id)
    return tuple(sorted(out, key=lambda n: n.seq))


def branch_tip(graph: Graph, node_id: str, hidden: frozenset[str] = frozenset()) -> str:
    """Where HEAD lands when switching to `node_id`: the most recently written conversation
    node below it (tool nodes are not heads), skipping hidden branches."""
    best = graph.get(node_id)
    stack = [node_id]
    while stack:
        for child in graph.conversation_children(stack.pop()):
            if child.id in hidden:
                continue
            if child.seq > best.seq:
                best = child
            stack.append(child.id)
    return best.id


# --- operations -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Change:
    """What an operation produced: nodes to append (in order) and where HEAD goes."""

    nodes: tuple[Node, ...]
    head: str | None


def send(
    graph: Graph,
    head: str | None,
    *,
    node_id: str,
    seq: int,
    now: float,
    session_id: str,
    text: str,
    role: Role = "user",
    metadata: dict[str, Any] | None = None,
) -> Change:
    """Append a message under HEAD; HEAD advances to it."""
    if head is not None and head not in graph:
        raise GraphError(f"HEAD {head!r} is not in the graph")
    node = Node(
        id=node_id,
        seq=seq,
        created_at=now,
        session_id=session_id,
        role=role,
        output=text,
        predecessor=head,
        metadata=dict(metadata or {}),
    )
    return Change((node,), node.id)


def reply_parent(graph: Graph, node_id: str) -> str | None:
    """Where a retry of `node_id` hangs its new reply: an assistant is re-sampled under its
    own parent; a user message gets a fresh reply under itself."""
    node = graph.get(node_id)
    if node.role == "assistant":
        parent = node.predecessor
        # A reply written after a denied tool call is re-asked from before that call: the
        # retry asks for the tool again instead of reusing the denial.
        while parent is not None and _has_denied_tool_call(graph, parent):
            parent = graph.get(parent).predecessor
        return parent
    if node.role in ("user", "runtime"):
        return node.id
    raise GraphError(f"cannot retry a {node.role} node")


def _has_denied_tool_call(graph: Graph, node_id: str) -> bool:
    node = graph.find(node_id)
    if node is None or node.role != "assistant":
        return False
    return any(t.metadata.get("denied") is True for t in graph.tool_children(node_id))


def edit(
    graph: Graph,
    node_id: str,
    *,
    new_id: str,
    seq: int,
    now: float,
    session_id: str,
    text: str,
) -> Change:
    """A different-content sibling of a user message; HEAD moves to it."""
    node = graph.get(node_id)
    if node.role != "user":
        raise GraphError("only user messages can be edited")
    sibling = Node(
        id=new_id,
        seq=seq,
        created_at=now,
        session_id=session_id,
        role="user",
        output=text,
        predecessor=node.predecessor,
        metadata={"edited_from": node.id},
    )
    return Change((sibling,), sibling.id)


def switch_version(
    graph: Graph, node_id: str, index: int, hidden: frozenset[str] = frozenset()
) -> str:
    """HEAD after choosing version `index` (1-based) of `node_id`: display-only, runs nothing."""
    peers = siblings(graph, node_id)
    if not 1 <= index <= len(peers):
        raise GraphError(f"version {index} out of range 1..{len(peers)}")
    return branch_tip(graph, peers[index - 1].id, hidden)


def branch_session(
    graph: Graph,
    node_id: str,
    *,
    session_id: str,
    now: float,
    title: str,
    model: str,
    forked_from: str | None,
) -> Session:
    """A new session whose HEAD is an existing node: history is shared, not copied."""
    graph.get(node_id)
    return Session(
        id=session_id,
        title=title,
        head=node_id,
        model=model,
        created_at=now,
        forked_from=forked_from,
        updated_at=now,
    )


def _replay(annotations: Iterable[Annotation], on: str, off: str) -> frozenset[str]:
    """Node ids whose latest `on`/`off` annotation, replayed in time order, is `on`."""
    state: dict[str, bool] = {}
    for a in sorted(annotations, key=lambda a: a.created_at):
        if a.kind in (on, off):
            state[a.node_id] = a.kind == on
    return frozenset(k for k, v in state.items() if v)


def hidden_set(annotations: Iterable[Annotation]) -> frozenset[str]:
    """Node ids whose branch is hidden, replaying hide/unhide annotations in order."""
    return _replay(annotations, "hidden", "unhidden")


def pinned_set(annotations: Iterable[Annotation]) -> frozenset[str]:
    """Node ids pinned now, replaying pin/unpin annotations in order."""
    return _replay(annotations, "pin", "unpin")


def hide_branch(node_id: str, *, now: float, session_id: str = "") -> Annotation:
    return Annotation(node_id=node_id, kind="hidden", created_at=now, session_id=session_id)


def unreachable(
    graph: Graph, heads: Iterable[str | None], hidden: frozenset[str] = frozenset()
) -> frozenset[str]:
    """Nodes that no session HEAD and no visible branch reaches: what an explicit purge
    removes. A node is kept if it is an ancestor of a HEAD or of a leaf outside every
    hidden subtree."""
    keep: set[str] = set()

    def keep_chain(node_id: str) -> None:
        for n in ancestry(graph, node_id):
            keep.add(n.id)
        for tool in graph.tool_children(node_id):
            keep.add(tool.id)

    for head in heads:
        if head is not None and head in graph:
            keep_chain(head)
            for n in ancestry(graph, head):
                for tool in graph.tool_children(n.id):
                    keep.add(tool.id)

    hidden_nodes: set[str] = set()
    for h in hidden:
        if h in graph:
            hidden_nodes.add(h)
            hidden_nodes.update(n.id for n in descendants(graph, h))
    for node in graph:
        if node.id in hidden_nodes or graph.children(node.id):
            continue
        keep_chain(node.id)
        for n in ancestry(graph, node.id):
            for tool in graph.tool_children(n.id):
                keep.add(tool.id)
    return frozenset(n.id for n in graph if n.id not in keep)


def renumber(nodes: Sequence[Node], first_seq: int) -> tuple[Node, ...]:
    """Give nodes consecutive seq numbers from `first_seq`, keeping their order."""
    return tuple(replace(n, seq=first_seq + i) for i, n in enumerate(nodes))
