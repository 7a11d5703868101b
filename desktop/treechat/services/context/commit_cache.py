"""The engine's memory of commits: the materialized commits it has made or read (the newest
few hundred), which commit each head has, how far each session's nodes have been read, and
the walk from a head back to its nearest commit. Saves go to the store's worker without
waiting; every read runs on the worker too."""

from __future__ import annotations

import concurrent.futures
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ...core.commit import ContextCommit
from ...core.dag import Graph, ancestry, hang_tool_runs
from ...core.model import GraphError, Node
from ...store import commits as commit_store
from ...store.database import Store
from ...store.repository import Repository

log = logging.getLogger(__name__)

# Nodes read in one go on the fast path; more than this (an import) takes the slow path.
_RECENT_LIMIT = 4096


@dataclass
class Loaded:
    """A head as read on the worker: its nearest commit, the nodes written since (in
    active-path order), the pins, and the commits its attach pointers name."""

    head: str | None
    base: ContextCommit | None
    nodes: tuple[Node, ...]
    pinned: frozenset[str]
    attach_sources: dict[str, ContextCommit | None]
    attach_pending: list[Node]
    loaded: list[ContextCommit]


class CommitCache:
    def __init__(self, store: Store, *, cache_size: Callable[[], int],
                 walk_limit: Callable[[], int]) -> None:
        self.store = store
        self._cache_size = cache_size  # read at each use: the engine's config can change
        self._walk_limit = walk_limit
        self._commits: OrderedDict[str, ContextCommit] = OrderedDict()
        self._latest: dict[str, str] = {}
        # Highest node seq each session's generation has seen: newer nodes are read at once.
        self._session_seq: dict[str, int] = {}
        self._saving: set[concurrent.futures.Future[int]] = set()

    def forget(self) -> None:
        """Drop what was learnt of the store's sessions; the commits stay (their ids are
        their content)."""
        self._latest.clear()
        self._session_seq.clear()

    def get(self, commit_id: str) -> ContextCommit | None:
        return self._commits.get(commit_id)

    def remember(self, commit: ContextCommit) -> None:
        self._commits[commit.id] = commit
        self._commits.move_to_end(commit.id)
        self._latest[commit.head_node_id] = commit.id
        while len(self._commits) > self._cache_size():
            self._commits.popitem(last=False)

    def persist(self, chain: Sequence[ContextCommit]) -> None:
        """Store commits on the worker without waiting: the memory cache already serves them
        and the worker runs the save before any later read, so the request is not delayed
        by the write."""
        commits = list(chain)
        future = self.store.submit(lambda repo: commit_store.save_commits(repo, commits))
        self._saving.add(future)

        def done(f: concurrent.futures.Future[int]) -> None:
            self._saving.discard(f)
            if not f.cancelled() and f.exception() is not None:
                log.error("could not store context commits", exc_info=f.exception())

        future.add_done_callback(done)

    def pending(self) -> list[concurrent.futures.Future[int]]:
        """The saves not yet done."""
        return list(self._saving)

    def load(self, repo: Repository, session_id: str, head: str | None) -> Loaded:
        """On the worker: resolve the head, walk back to the nearest commit, and collect the
        nodes written since in active-path order (tool runs hung after their assistant)."""
        if head is None:
            session = repo.get_session(session_id)
            if session is None:
                raise GraphError(f"no session {session_id!r}")
            head = session.head
        if head is None:
            return Loaded(None, None, (), frozenset(), {}, [], [])
        loaded: list[ContextCommit] = []
        since = self._session_seq.get(session_id)
        recent: dict[str, Node] = {}
        if since is not None:
            fresh = commit_store.nodes_after(repo, since, _RECENT_LIMIT)
            if len(fresh) < _RECENT_LIMIT:
                recent = {n.id: n for n in fresh}
        base_id, chain = self._walk(repo, session_id, head, recent)
        base: ContextCommit | None = None
        if base_id is not None:
            base = self._commits.get(base_id)
            if base is None:
                base = commit_store.load_commit(repo, base_id, known=self._commits)
                if base is not None:
                    loaded.append(base)
        chain_ids = {n.id for n in chain}
        base_head = base.head_node_id if base is not None else None
        conversation = [
            n for n in chain
            if not (n.role == "tool" and n.caller is not None
                    and (n.caller in chain_ids or n.caller == base_head))
        ]
        # Tool results may land after the base commit was made for its assistant head.
        callers = ([base_head] if base_head is not None else []) + [
            n.id for n in conversation if n.role == "assistant"
        ]
        after = base.max_seq if base is not None else 0
        if since is not None and recent and after >= since:
            wanted = set(callers)
            tools: Sequence[Node] = [
                n for n in recent.values()
                if n.role == "tool" and n.caller in wanted and n.seq > after
            ]
            tools = sorted(tools, key=lambda n: n.seq)
        else:
            tools = commit_store.tool_children(repo, callers, after)
        ordered = hang_tool_runs(conversation, tools, first_caller=base_head)
        attach_sources: dict[str, ContextCommit | None] = {}
        pending: list[Node] = []
        for n in ordered:
            if not n.is_attach:
                continue
            source_id = n.metadata.get("source_commit")
            source = None
            if isinstance(source_id, str):
                source = self._commits.get(source_id) or commit_store.load_commit(
                    repo, source_id, known=self._commits
                )
                if source is not None:
                    loaded.append(source)
            if source is not None:
                attach_sources[n.id] = source
            else:
                pending.append(n)
        top = max([after, *(n.seq for n in ordered), *(n.seq for n in recent.values())])
        self._session_seq[session_id] = max(self._session_seq.get(session_id, 0), top)
        return Loaded(
            head=head,
            base=base,
            nodes=tuple(ordered),
            pinned=commit_store.pinned_nodes(repo),
            attach_sources=attach_sources,
            attach_pending=pending,
            loaded=loaded,
        )

    def _walk(
        self, repo: Repository, session_id: str, head: str, recent: Mapping[str, Node]
    ) -> tuple[str | None, list[Node]]:
        """(nearest commit on the head's chain, nodes after it oldest first). Nodes written
        since this session's last generation come from `recent` (one read for all of them);
        beyond that the walk goes to the store a step at a time, then in bulk."""
        newest_first: list[Node] = []
        node_id: str | None = head
        while node_id is not None:
            known = self._latest.get(node_id)
            if known is not None:
                return known, newest_first[::-1]
            node = recent.get(node_id)
            if node is None:
                break
            newest_first.append(node)
            node_id = node.parent
        if node_id is None:
            return None, newest_first[::-1]
        base_id, older, complete = commit_store.walk_to_commit(
            repo, node_id, self._walk_limit()
        )
        if not complete:
            base_id, older = self._walk_bulk(repo, session_id, node_id)
        return base_id, older + newest_first[::-1]

    def _walk_bulk(
        self, repo: Repository, session_id: str, head: str
    ) -> tuple[str | None, list[Node]]:
        """A long stretch without commits (an import, a first open): load the branch at once."""
        graph = Graph(repo.session_nodes(session_id))
        if head not in graph:
            node = repo.get_node(head)
            if node is None:
                raise GraphError(f"unknown node {head!r}")
            graph = Graph(repo.session_nodes(node.session_id))
        nodes = ancestry(graph, head)
        ids = [n.id for n in nodes]
        found = commit_store.commits_for_heads(repo, ids)
        found.update({i: self._latest[i] for i in ids if i in self._latest})
        for k in range(len(nodes) - 1, -1, -1):
            cid = found.get(nodes[k].id)
            if cid is not None:
                return cid, list(nodes[k + 1:])
        return None, list(nodes)
