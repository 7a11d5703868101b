"""Session operations through the store: create, send, edit, switch version, checkout, branch,
hide, pin, purge. Each returns what changed so a view can redraw from it."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeGuard, get_args

from ...core import dag
from ...core.clock import SYSTEM_CLOCK, Clock
from ...core.dag import Graph
from ...core.model import Annotation, AnnotationKind, GraphError, Node, Role, Session
from .changes import HeadChanges

if TYPE_CHECKING:  # named only: a view is built at start from a file, before DuckDB loads
    from ...store.database import Store
    from ...store.repository import Repository


def new_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True, slots=True)
class SessionView:
    """A session as the user sees it: the graph it can reach, HEAD and the path to HEAD."""

    session: Session
    graph: Graph
    path: tuple[Node, ...]
    hidden: frozenset[str]
    pinned: frozenset[str]
    # Set when the view holds only the end of the path (`load_tail_view`): how many messages
    # the whole path has. None: the view is whole.
    whole_messages: int | None = None

    @property
    def head(self) -> str | None:
        return self.session.head

    @property
    def is_tail(self) -> bool:
        return self.whole_messages is not None

    def version(self, node_id: str) -> tuple[int, int]:
        """(N, M) for the `< N/M >` control of a node on the path."""
        return dag.version_of(self.graph, node_id)


# Nodes of a long path's end read first (`load_tail_view`): more than a tall screen shows.
TAIL_NODES = 60


def load_view(repo: Repository, session_id: str) -> SessionView:
    session = repo.get_session(session_id)
    if session is None:
        raise GraphError(f"no session {session_id!r}")
    graph = Graph(repo.session_nodes(session_id, session))
    notes = repo.annotations(graph.nodes.keys()) if len(graph) else ()
    head = session.head if session.head in graph else None
    return SessionView(
        session=session,
        graph=graph,
        path=dag.active_path(graph, head),
        hidden=dag.hidden_set(notes),
        pinned=dag.pinned_set(notes),
    )


def load_tail_view(repo: Repository, session_id: str, nodes: int = TAIL_NODES) -> SessionView:
    """The end of the session's path, read without the rest of it: the last `nodes` nodes of
    the chain to HEAD with their tool calls and their other versions, found from the
    session's edges alone, so that a long chat shows its end at once (`load_view` follows
    with the whole). A short session, or a path that leaves the session's own nodes (a
    branch of another chat), is read whole."""
    session = repo.get_session(session_id)
    if session is None:
        raise GraphError(f"no session {session_id!r}")
    edges = repo.session_edges(session_id) if session.head is not None else []
    if len(edges) <= 2 * nodes:
        return load_view(repo, session_id)  # as quick to read whole
    parent_of = {node_id: parent for node_id, parent, _, _ in edges}
    is_message = {node_id for node_id, _, role, _ in edges if role in ("user", "assistant")}
    chain: list[str] = []
    current = session.head
    while current is not None:
        if current not in parent_of or len(chain) > len(edges):
            return load_view(repo, session_id)  # another session's history, or a cycle
        chain.append(current)
        current = parent_of[current]
    if len(chain) <= nodes:
        return load_view(repo, session_id)  # a short path among many branches
    tail = chain[:nodes]
    wanted = set(tail)
    wanted.update(n for n, parent in parent_of.items() if parent in wanted)
    oldest_parent = parent_of[tail[-1]]
    wanted.update(n for n, parent in parent_of.items()
                  if parent is not None and parent == oldest_parent)  # the oldest's versions
    seqs = [seq for node_id, _, _, seq in edges if node_id in wanted]
    graph = Graph(repo.get_nodes(wanted, (min(seqs), max(seqs))))
    notes = repo.annotations(graph.nodes.keys())
    return SessionView(
        session=session,
        graph=graph,
        path=dag.active_path(graph, session.head),
        hidden=dag.hidden_set(notes),
        pinned=dag.pinned_set(notes),
        whole_messages=sum(1 for n in chain if n in is_message),
    )


class SessionService:
    """The git-metaphor operations of a conversation, run on the store's worker."""

    def __init__(
        self,
        store: Store,
        *,
        clock: Clock = SYSTEM_CLOCK,
        make_id: Callable[[], str] = new_id,
    ) -> None:
        self.store = store
        self.clock = clock
        self.make_id = make_id

    async def list(self, include_hidden: bool = False) -> tuple[Session, ...]:
        return await self.store.run(lambda r: r.list_sessions(include_hidden))

    async def create(self, title: str = "New chat", model: str = "") -> Session:
        now = self.clock.now()
        session = Session(
            id=self.make_id(),
            title=title,
            head=None,
            model=model,
            created_at=now,
            updated_at=now,
        )
        return await self.store.run(lambda r: r.create_session(session))

    async def view(self, session_id: str) -> SessionView:
        return await self.store.run(lambda r: load_view(r, session_id))

    async def tail_view(self, session_id: str) -> SessionView:
        """The end of a long session's path (whole when it is short): see `load_tail_view`."""
        return await self.store.run(lambda r: load_tail_view(r, session_id))

    async def append_message(
        self,
        session_id: str,
        text: str,
        *,
        role: Role = "user",
        metadata: dict[str, Any] | None = None,
        parent: str | None = None,
        use_parent: bool = False,
    ) -> Node:
        """Commit a message under HEAD (or under `parent`) and advance HEAD to it.

        This write completes before anything else happens with the message, so what a
        person typed is on disk before any provider is called."""
        now = self.clock.now()
        node_id = self.make_id()

        def work(repo: Repository) -> Node:
            session = _session(repo, session_id)
            under = parent if use_parent else session.head
            node = Node(
                id=node_id,
                seq=0,
                created_at=now,
                session_id=session_id,
                role=role,
                output=text,
                predecessor=under,
                metadata=dict(metadata or {}),
            )
            (stored,) = repo.apply_change(session_id, dag.Change((node,), node.id), now)
            title_first(repo, session, text)
            return stored

        return await self.store.run(work)

    async def edit(self, session_id: str, node_id: str, text: str) -> Node:
        """A different-content sibling of a user message; HEAD moves to it."""
        now = self.clock.now()
        fresh = self.make_id()

        def work(repo: Repository) -> Node:
            graph = Graph(repo.session_nodes(session_id))
            change = dag.edit(
                graph, node_id, new_id=fresh, seq=0, now=now, session_id=session_id, text=text
            )
            (stored,) = repo.apply_change(session_id, change, now)
            return stored

        return await self.store.run(work)

    async def switch_version(self, session_id: str, node_id: str, index: int) -> SessionView:
        """Show version `index` of a node: HEAD moves to that branch's tip; nothing runs."""
        now = self.clock.now()

        def work(repo: Repository) -> SessionView:
            view = load_view(repo, session_id)
            head = dag.switch_version(view.graph, node_id, index, view.hidden)
            repo.set_head(session_id, head, now)
            return load_view(repo, session_id)

        return await self.store.run(work)

    async def switch_version_of(self, view: SessionView, node_id: str, index: int
                                ) -> HeadChanges:
        """Version `index` of a node of `view` (the session as the caller shows it): HEAD
        moves to that branch's tip, found in the view's graph; nothing runs and the session
        is not read again, only its row once HEAD has moved."""
        head = dag.switch_version(view.graph, node_id, index, view.hidden)
        now = self.clock.now()
        session_id = view.session.id

        def work(repo: Repository) -> HeadChanges:
            repo.set_head(session_id, head, now)
            return HeadChanges(_session(repo, session_id))

        return await self.store.run(work)

    async def checkout(self, session_id: str, node_id: str) -> SessionView:
        """Move HEAD to any node of the session's graph (display only)."""
        now = self.clock.now()

        def work(repo: Repository) -> SessionView:
            view = load_view(repo, session_id)
            target = view.graph.get(node_id)
            if target.role == "tool" and target.caller is not None:
                target = view.graph.get(target.caller)
            repo.set_head(session_id, target.id, now)
            return load_view(repo, session_id)

        return await self.store.run(work)

    async def show_branch_of(self, session_id: str, node_id: str) -> SessionView:
        """The session showing the branch that holds `node_id` (display only: nothing runs).
        HEAD stays put when the node is on the active path already; otherwise it moves to
        that branch's newest message below the node, as switching to its version does."""
        now = self.clock.now()

        def work(repo: Repository) -> SessionView:
            view = load_view(repo, session_id)
            target = view.graph.get(node_id)
            if target.role == "tool" and target.caller is not None:
                target = view.graph.get(target.caller)
            if any(node.id == target.id for node in view.path):
                return view
            repo.set_head(session_id, dag.branch_tip(view.graph, target.id, view.hidden), now)
            return load_view(repo, session_id)

        return await self.store.run(work)

    async def branch(self, session_id: str, node_id: str, title: str | None = None) -> Session:
        """A new session whose HEAD is `node_id`; the history is shared, not copied."""
        now = self.clock.now()
        fresh = self.make_id()

        def work(repo: Repository) -> Session:
            source = _session(repo, session_id)
            graph = Graph(repo.session_nodes(session_id))
            session = dag.branch_session(
                graph,
                node_id,
                session_id=fresh,
                now=now,
                title=title or f"{source.title} (branch)",
                model=source.model,
                forked_from=session_id,
            )
            return repo.create_session(session)

        return await self.store.run(work)

    async def annotate(self, session_id: str, node_id: str, kind: str) -> SessionView:
        """Pin/unpin a node or hide/unhide a branch. Hiding the branch HEAD is on moves HEAD
        to the nearest visible ancestor."""
        now = self.clock.now()
        if not _is_annotation_kind(kind):
            raise ValueError(f"unknown annotation {kind!r}")

        def work(repo: Repository) -> SessionView:
            view = load_view(repo, session_id)
            view.graph.get(node_id)
            repo.add_annotation(
                Annotation(
                    node_id=node_id,
                    kind=kind,
                    created_at=now,
                    session_id=session_id,
                )
            )
            if kind == "hidden" and view.head is not None:
                chain = dag.ancestry(view.graph, view.head)
                ids = [n.id for n in chain]
                if node_id in ids:
                    cut = ids.index(node_id)
                    repo.set_head(session_id, ids[cut - 1] if cut > 0 else None, now)
            return load_view(repo, session_id)

        return await self.store.run(work)

    async def rename(self, session_id: str, title: str) -> None:
        await self.store.run(
            lambda r: r.update_session(session_id, title=title.strip() or "Untitled")
        )

    async def delete(self, session_id: str) -> None:
        """Hide a session from the list (its nodes stay until an explicit purge)."""
        await self.store.run(lambda r: r.update_session(session_id, hidden=True))

    async def restore(self, session_id: str) -> None:
        """Show a deleted session in the list again (undo of `delete`)."""
        await self.store.run(lambda r: r.update_session(session_id, hidden=False))

    async def get(self, session_id: str) -> Session | None:
        """The session's row as stored now (title, HEAD, model), or None."""
        return await self.store.run(lambda r: r.get_session(session_id))

    async def set_model(self, session_id: str, model: str) -> None:
        await self.store.run(lambda r: r.update_session(session_id, model=model))

    async def purge(self) -> int:
        """Delete nodes no visible session or branch reaches (like `git gc`)."""

        def work(repo: Repository) -> int:
            sessions = repo.list_sessions(include_hidden=True)
            visible_heads = [s.head for s in sessions if not s.hidden]
            nodes: dict[str, Node] = {}
            for s in sessions:
                if not s.hidden:
                    for n in repo.session_nodes(s.id):
                        nodes[n.id] = n
            all_ids = repo.all_node_ids()
            graph = Graph(nodes.values())
            hidden = dag.hidden_set(repo.annotations(graph.nodes.keys()))
            doomed = set(dag.unreachable(graph, visible_heads, hidden))
            doomed |= all_ids - set(nodes)  # nodes of deleted sessions
            return repo.purge_nodes(doomed)

        return await self.store.run(work)


def _session(repo: Repository, session_id: str) -> Session:
    session = repo.get_session(session_id)
    if session is None:
        raise GraphError(f"no session {session_id!r}")
    return session


def title_from(text: str, limit: int = 60) -> str:
    line = " ".join(text.split())
    if len(line) <= limit:
        return line or "New chat"
    return line[: limit - 1].rstrip() + "…"


def title_first(repo: Repository, session: Session, text: str,
                file_names: Sequence[str] = ()) -> None:
    """Give a chat that still has the default title the title of its first message: from its
    text, or from the names of the files it carries when it has no text. `session` is the
    chat as it was before the message was written (an empty chat has no HEAD)."""
    if session.head is not None or session.title not in ("", "New chat"):
        return
    words = text if text.strip() else ", ".join(n for n in file_names if n.strip())
    repo.update_session(session.id, title=title_from(words))


def _is_annotation_kind(kind: str) -> TypeGuard[AnnotationKind]:
    return kind in get_args(AnnotationKind)
