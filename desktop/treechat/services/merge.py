"""Attach and merge on top of the engine (spec §4): stage another branch's context for the next
send, or merge several branch heads now into one turn with a multi-parent commit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..core import dag
from ..core.clock import Clock
from ..core.commit import ContextCommit
from ..core.dag import Graph
from ..core.model import Annotation, GraphError, Node
from ..store.commit_history import newest_commits_for_heads
from ..store.repository import Repository
from .turns.chat_service import Attachment, ChatService
from .turns.events import EventSink
from .turns.sessions import load_view, new_id

DEFAULT_MERGE_INSTRUCTION = (
    "Merge these branches into one answer: keep what each got right, resolve where they "
    "disagree and say which way you went."
)
PREVIEW_CHARS = 80


@dataclass(frozen=True, slots=True)
class StagedAttach:
    """What an attach chip shows, and what the next send hands to the chat service."""

    attachment: Attachment
    source_title: str
    head_preview: str
    tokens: int
    commit_id: str

    @property
    def source_session(self) -> str:
        return self.attachment.source_session

    @property
    def source_head(self) -> str:
        return self.attachment.source_head


@dataclass(frozen=True, slots=True)
class MergePlan:
    """A merge written to the graph, waiting for its turn."""

    session_id: str
    merge_node: Node
    attach_nodes: tuple[Node, ...]
    peers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class MergeResult:
    """The merge node (carrying the instruction), the reply written under it and the merge's
    multi-parent commit."""

    merge_node: Node
    attach_nodes: tuple[Node, ...]
    reply: Node | None
    commit: ContextCommit | None
    peers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CommitEntry:
    """One commit of a branch's history, oldest first in `commit_history`."""

    commit_id: str
    head_node_id: str
    role: str
    preview: str
    parent_ids: tuple[str, ...]
    total_tokens: int
    item_count: int
    created_at: float
    fork: bool  # the head node has siblings: the branch forked here

    @property
    def is_merge(self) -> bool:
        return len(self.parent_ids) > 1


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def merged_peers(graph: Graph) -> frozenset[str]:
    """Heads that a merge in this graph took in (drawn as merged)."""
    out: set[str] = set()
    for node in graph:
        if node.is_merge:
            for ref in node.metadata.get("peers") or ():
                head = ref.get("source_head") if isinstance(ref, dict) else ref
                if isinstance(head, str):
                    out.add(head)
    return frozenset(out)


class AttachService:
    """Stages attaches (resolved to their source commit and token cost) and runs merges."""

    def __init__(
        self,
        chat: ChatService,
        *,
        clock: Clock | None = None,
        make_id: Callable[[], str] = new_id,
    ) -> None:
        self.chat = chat
        self.store = chat.store
        self.engine = chat.engine
        self.clock = clock or chat.clock
        self.make_id = make_id

    async def stage(self, source_session: str, source_head: str | None = None) -> StagedAttach:
        """Resolve what attaching `source_head` of `source_session` (default: its HEAD) would
        bring in. Nothing is written: removing the chip before sending leaves no trace."""

        def read(repo: Repository) -> tuple[str, Node]:
            session = repo.get_session(source_session)
            if session is None:
                raise GraphError(f"no session {source_session!r}")
            head_id = source_head or session.head
            if head_id is None:
                raise GraphError(f"“{session.title}” has no messages to attach")
            node = repo.get_node(head_id)
            if node is None:
                raise GraphError(f"unknown node {head_id!r}")
            if node.role == "tool" and node.caller is not None:
                caller = repo.get_node(node.caller)
                node = caller if caller is not None else node
            return session.title, node

        title, head = await self.store.run(read)
        commit = await self.engine.commit_for(source_session, head.id, now=self.clock.now())
        shown = preview(head.text) or head.role
        attachment = Attachment(
            source_session=source_session,
            source_head=head.id,
            label=f"“{title}” at: {shown}",
            tokens=commit.total_tokens,
            metadata={"source_commit": commit.id},
        )
        return StagedAttach(attachment, title, shown, commit.total_tokens, commit.id)

    async def start_merge(
        self,
        session_id: str,
        heads: Sequence[str],
        *,
        base: str,
        instruction: str = DEFAULT_MERGE_INSTRUCTION,
    ) -> MergePlan:
        """Write the merge of branch `heads` onto `base` (one of them): an attach pointer per
        other head after `base`, then the merge node carrying the instruction; HEAD moves to
        it and the peers are marked merged. `continue_merge` then runs the turn."""
        heads = list(dict.fromkeys(heads))
        if base not in heads:
            heads.insert(0, base)
        if len(heads) < 2:
            raise GraphError("a merge needs at least two branch heads")
        if self.chat.is_running(session_id):
            raise GraphError("a reply is still being written in this chat")
        view = await self.chat.sessions.view(session_id)
        resolved = [_conversation_head(view.graph, h) for h in heads]
        base = _conversation_head(view.graph, base)
        peers = [h for h in dict.fromkeys(resolved) if h != base]
        if not peers:
            raise GraphError("pick at least two different branches to merge")
        for a in [base, *peers]:
            for b in [base, *peers]:
                if a != b and dag.is_ancestor(view.graph, a, b):
                    raise GraphError("one of the chosen heads is already part of another")
        now = self.clock.now()
        commits = [await self.engine.commit_for(session_id, p, now=now) for p in peers]
        refs = [
            {"source_session": session_id, "source_head": p, "source_commit": c.id}
            for p, c in zip(peers, commits, strict=True)
        ]
        merge_id = self.make_id()
        attach_ids = [self.make_id() for _ in peers]
        text = instruction.strip() or DEFAULT_MERGE_INSTRUCTION

        def write(repo: Repository) -> tuple[Node, ...]:
            nodes: list[Node] = []
            parent = base
            for nid, ref, peer in zip(attach_ids, refs, peers, strict=True):
                label = preview(view.graph.get(peer).text) or "branch"
                nodes.append(Node(
                    id=nid, seq=0, created_at=now, session_id=session_id, role="runtime",
                    name="attach", output=f"the branch “{label}”", predecessor=parent,
                    metadata={**ref, "merge": merge_id},
                ))
                parent = nid
            nodes.append(Node(
                id=merge_id, seq=0, created_at=now, session_id=session_id, role="runtime",
                name="merge", output=text, predecessor=parent,
                metadata={"peers": refs, "base_peer": {"source_head": base}},
            ))
            with repo.transaction():
                stored = repo.apply_change(session_id, dag.Change(tuple(nodes), merge_id), now)
                for peer in peers:
                    repo.add_annotation(Annotation(
                        node_id=peer, kind="merged", created_at=now, session_id=session_id,
                        value=merge_id,
                    ))
            return stored

        stored = await self.store.run(write)
        return MergePlan(session_id, stored[-1], tuple(stored[:-1]), tuple(peers))

    async def continue_merge(
        self,
        plan: MergePlan,
        *,
        model: str | None = None,
        on_event: EventSink | None = None,
    ) -> MergeResult:
        """Run the turn that answers a written merge; its context commit (made when the
        turn prepares the merge node) has the base line and every peer as parents."""
        reply = await self.chat.retry(
            plan.session_id, plan.merge_node.id, model=model, on_event=on_event
        )
        commit = await self.engine.commit_for(
            plan.session_id, plan.merge_node.id, now=self.clock.now()
        )
        return MergeResult(plan.merge_node, plan.attach_nodes, reply, commit, plan.peers)

    async def merge(
        self,
        session_id: str,
        heads: Sequence[str],
        *,
        base: str,
        instruction: str = DEFAULT_MERGE_INSTRUCTION,
        model: str | None = None,
        on_event: EventSink | None = None,
    ) -> MergeResult:
        """`start_merge` then `continue_merge`: the whole merge turn (spec §4)."""
        plan = await self.start_merge(session_id, heads, base=base, instruction=instruction)
        return await self.continue_merge(plan, model=model, on_event=on_event)

    async def commit_history(self, session_id: str, head: str) -> tuple[CommitEntry, ...]:
        """The commits along the branch ending at `head`, oldest first; `fork` marks heads
        with sibling versions and merges have several parents."""

        def read(repo: Repository) -> tuple[CommitEntry, ...]:
            view = load_view(repo, session_id)
            graph = view.graph
            if head not in graph:
                raise GraphError(f"unknown node {head!r}")
            chain = dag.ancestry(graph, head)
            records = newest_commits_for_heads(repo, [n.id for n in chain])
            out: list[CommitEntry] = []
            for node in chain:
                rec = records.get(node.id)
                if rec is None:
                    continue
                out.append(CommitEntry(
                    commit_id=rec.id,
                    head_node_id=node.id,
                    role="merge" if node.is_merge else node.role,
                    preview=preview(node.text),
                    parent_ids=rec.parent_ids,
                    total_tokens=rec.total_tokens,
                    item_count=rec.item_count,
                    created_at=rec.created_at,
                    fork=len(dag.siblings(graph, node.id)) > 1,
                ))
            return tuple(out)

        return await self.store.run(read)


def _conversation_head(graph: Graph, node_id: str) -> str:
    """A tool call stands for the assistant step that made it."""
    node = graph.get(node_id)
    if node.role == "tool" and node.caller is not None and node.caller in graph:
        return node.caller
    return node.id

