"""The one path from graph to request: `ContextEngine.prepare()` finds the head's commit
(nearest ancestor commit + new nodes + rule pipeline, cached in memory so the next one costs
O(new items)), compacts when the budget says so, renders, fits and reports occupancy."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from ..core.attachments import AttachmentPayload, AttachmentRef, Provider
from ..core.budget import BudgetConfig, FitResult, fit_to_window, plan_budget
from ..core.commit import ContextCommit, make_commit
from ..core.dag import Graph, ancestry, hang_tool_runs
from ..core.model import GraphError, Node
from ..core.occupancy import (
    MeasuredUsage,
    Occupancy,
    build_occupancy,
    estimate_categories,
    trigger_calibration,
)
from ..core.render import Composition, render_parts
from ..core.rules import (
    CompactionMode,
    CompactionRequest,
    LoopDone,
    RuleConfig,
    advance,
    compaction_loop,
    extend_commit,
)
from ..core.summarize import AsyncSummarizer, DeterministicSummarizer, Summarizer
from ..core.tokens import TokenCounter, message_tokens, messages_tokens, tools_tokens
from ..providers import llm
from ..store import commits as commit_store
from ..store.database import Store
from ..store.fulltext import (
    FullTextIndex,
    any_terms_query,
)
from ..store.repository import Repository
from .retrieval.recall import (
    FALLBACK_CHARS,
    FALLBACK_HITS,
    RECALL_CHARS,
    RecallResult,
    recall_hidden,
)

log = logging.getLogger(__name__)

FileSource = Callable[
    [Sequence[AttachmentRef], Provider], Awaitable[Mapping[str, AttachmentPayload]]
]

# Nodes read in one go on the fast path; more than this (an import) takes the slow path.
_RECENT_LIMIT = 4096


@dataclass(frozen=True)
class EngineConfig:
    rules: RuleConfig = field(default_factory=RuleConfig)
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    summarizer: Summarizer | AsyncSummarizer | None = None  # None: deterministic, offline
    cache_size: int = 256  # materialized commits kept in memory
    walk_limit: int = 8  # nodes walked a query (~3 ms) at a time before loading the branch


@dataclass(frozen=True)
class TurnPrep:
    session_id: str
    head: str
    model: str
    commit_id: str
    messages: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...]
    max_output_tokens: int
    estimated_prompt_tokens: int
    window: int
    occupancy: Occupancy
    compacted: bool


def stable_tools(tools: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    """Tool schemas in a fixed order: a reordered tool list invalidates the cached prefix."""

    def key(tool: Mapping[str, Any]) -> str:
        fn = tool.get("function")
        name = fn.get("name") if isinstance(fn, Mapping) else tool.get("name")
        return str(name or "")

    return tuple(dict(t) for t in sorted(tools, key=key))


@dataclass
class _Loaded:
    head: str | None
    base: ContextCommit | None
    nodes: tuple[Node, ...]
    pinned: frozenset[str]
    attach_sources: dict[str, ContextCommit | None]
    attach_pending: list[Node]
    loaded: list[ContextCommit]


class ContextEngine:
    """Owns the in-memory commit cache; every DuckDB read and write goes through the store's
    worker. Calls are serialized so one head's commit is generated once."""

    def __init__(
        self, store: Store, counter: TokenCounter, config: EngineConfig | None = None
    ) -> None:
        self.store = store
        self.counter = counter
        self.config = config if config is not None else EngineConfig()
        self._commits: OrderedDict[str, ContextCommit] = OrderedDict()
        self._latest: dict[str, str] = {}
        self._compositions: dict[str, tuple[str, str, tuple[dict[str, Any], ...]]] = {}
        self._lock = asyncio.Lock()
        self._pinned: frozenset[str] = frozenset()
        # Highest node seq each session's generation has seen: newer nodes are read at once.
        self._session_seq: dict[str, int] = {}
        self._saving: set[concurrent.futures.Future[int]] = set()
        self._index: FullTextIndex | None = None
        # What a model receives for the attachments a request carries (the chat service's
        # attachment store); None renders each as a note naming the file.
        self.files: FileSource | None = None
        self._summarizer: Summarizer | AsyncSummarizer = (
            self.config.summarizer
            if self.config.summarizer is not None
            else DeterministicSummarizer(counter)
        )

    # --- public API --------------------------------------------------------------------

    def forget(self) -> None:
        """Drop what was learnt of the store's sessions (a restored backup replaced it). The
        commits stay: their ids are their content."""
        self._latest.clear()
        self._compositions.clear()
        self._session_seq.clear()
        self._index = None


    async def prepare(
        self,
        session_id: str,
        *,
        model: str,
        window: int,
        head: str | None = None,
        tools: Sequence[dict[str, Any]] = (),
        system_prompt: str = "",
        situation: str = "",
        now: float,
        measured: MeasuredUsage | None = None,
        force_compact: bool = False,
        recall_fallback: bool = False,
        summarizer: Summarizer | AsyncSummarizer | None = None,
    ) -> TurnPrep:
        """Everything the provider needs for the next request on `head` (default: the
        session's HEAD). Raises `ContextOverflowError` when the system prompt and tools alone
        do not fit the window.

        `recall_fallback` is for models too small to call tools: what `recall` would find
        for the newest user message is quoted in the volatile tail, after the cached
        prefix. `summarizer` replaces the engine's for a compaction this call makes (a
        model summarizer for the session's model, say); whatever makes a summary, it is
        made once, stored in the commit and never made again."""
        ordered_tools = stable_tools(tools)
        self._compositions[session_id] = (system_prompt, situation, ordered_tools)
        composition = Composition(
            system_prompt=system_prompt,
            situation=situation,
            cache_breakpoints=llm.is_anthropic(model),
        )
        calibration = trigger_calibration(measured)
        compacted = False
        # Counting tokens and building commits is CPU work: it runs on a worker thread so the
        # event loop (the GUI thread in the app) never waits on it. The lock keeps the
        # counter's cache and the commit cache to one user at a time.
        async with self._lock:
            sys_tokens, tool_tokens = await asyncio.to_thread(
                self._fixed_tokens, composition, ordered_tools
            )
            budget = plan_budget(window, system_tokens=sys_tokens, tools_tokens=tool_tokens,
                                 config=self.config.budget)
            commit, resolved_head = await self._ensure(session_id, head, now)
            mode = self._compaction_mode(
                commit=commit, history_budget=budget.history,
                prompt_allowance=budget.prompt_allowance, fixed_tokens=sys_tokens + tool_tokens,
                calibration=calibration, force=force_compact,
            )
            if commit is not None and mode is not None:
                compacted_commit = await self._compact(
                    commit,
                    CompactionRequest(history_budget=budget.history, mode=mode,
                                      calibration=calibration),
                    now=now,
                    instructions="\n\n".join(t for t in (system_prompt, situation) if t),
                    summarizer=summarizer,
                )
                compacted = compacted_commit.id != commit.id
                commit = compacted_commit
            if recall_fallback and commit is not None:
                digest = await self._fallback_digest(commit)
                if digest:
                    composition = replace(composition, digest=digest)
            composition = await self._with_files(composition, commit, model)
            fit, categories = await asyncio.to_thread(
                self._fit, commit, composition, window, tool_tokens, budget.output_reserve
            )
        occupancy = build_occupancy(window=window, categories=categories, head=resolved_head,
                                    measured=measured)
        return TurnPrep(
            session_id=session_id,
            head=resolved_head or "",
            model=model,
            commit_id=commit.id if commit is not None else "",
            messages=fit.messages,
            tools=ordered_tools,
            max_output_tokens=budget.output_reserve,
            estimated_prompt_tokens=fit.tokens + tool_tokens,
            window=window,
            occupancy=occupancy,
            compacted=compacted,
        )

    async def occupancy(
        self,
        session_id: str,
        *,
        model: str,
        window: int,
        head: str | None = None,
        now: float,
        measured: MeasuredUsage | None = None,
        system_prompt: str | None = None,
        situation: str | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> Occupancy:
        """What the next request on `head` would carry, as the ring and panel show it. The
        system prompt, situation and tools default to those of the session's last
        `prepare`."""
        last_system, last_situation, last_tools = self._compositions.get(
            session_id, ("", "", ())
        )
        composition = Composition(
            system_prompt=last_system if system_prompt is None else system_prompt,
            situation=last_situation if situation is None else situation,
            cache_breakpoints=llm.is_anthropic(model),
        )
        ordered_tools = last_tools if tools is None else stable_tools(tools)
        async with self._lock:
            commit, resolved_head = await self._ensure(session_id, head, now)
            composition = await self._with_files(composition, commit, model)
            categories = await asyncio.to_thread(
                self._categories, commit, composition, ordered_tools
            )
        return build_occupancy(window=window, categories=categories, head=resolved_head,
                               measured=measured)

    async def commit_for(self, session_id: str, head: str, *, now: float) -> ContextCommit:
        """The newest commit for `head` (for the timeline), generating it if needed."""
        async with self._lock:
            commit, _ = await self._ensure(session_id, head, now)
        if commit is None:
            raise GraphError(f"no context for head {head!r}")
        return commit

    async def ensure_latest_commit(
        self, session_id: str, head: str | None = None, *, now: float
    ) -> ContextCommit | None:
        """The commit for `head`: the nearest ancestor commit extended by the nodes written
        since (None for an empty session)."""
        async with self._lock:
            commit, _ = await self._ensure(session_id, head, now)
        return commit

    async def recall(
        self, session_id: str, query: str, *, head: str | None = None, now: float,
        limit: int = 3, max_chars: int = RECALL_CHARS,
    ) -> RecallResult:
        """Search what the request for `head` no longer shows in full (folded into
        summaries, aged, cleared, cut by the per-item cap; on this branch and on attached
        ones) and return the original text of the best `limit` matches. Raises
        `QueryError` (a ValueError) for a query without words."""
        any_terms_query(query)  # a query with no words is the caller's error
        async with self._lock:
            commit, _ = await self._ensure(session_id, head, now)
            return await self._recall(commit, query, limit=limit, max_chars=max_chars)

    def hidden_nodes(self, commit: ContextCommit) -> dict[int, tuple[str, str, str]]:
        """seq -> (node id, state, tool name) of every node the commit no longer shows in
        full, including those of the commits it attached."""
        out: dict[int, tuple[str, str, str]] = {}
        commits = [commit]
        for source in sorted(commit.attached_sources()):
            found = self._commits.get(source)
            if found is not None:
                commits.append(found)
        for c in commits:
            for it in c.items:
                if it.is_summary or it.role not in ("user", "assistant", "tool"):
                    continue
                state: str
                if it.state in ("summarized", "aged", "cleared"):
                    state = it.state
                elif it.reason == "per_item_cap":
                    state = "cut"
                else:
                    continue
                if it.seq > 0 and it.seq not in out:
                    out[it.seq] = (it.source_node_id, state, it.tool_name)
        return out

    async def _fallback_digest(self, commit: ContextCommit) -> str:
        """For a model without tools: passages `recall` finds for the newest user message,
        quoted after the cached prefix. Deterministic for the same commit and store."""
        items = commit.items
        newest = next((items[p] for p in reversed(commit.live)
                       if items[p].role == "user" and not items[p].is_summary
                       and not items[p].attached_from), None)
        if newest is None or not newest.rendered.strip():
            return ""
        result = await self._recall(commit, newest.rendered, limit=FALLBACK_HITS,
                                    max_chars=FALLBACK_CHARS)
        if not result.hits:
            return ""
        lines = ["[From earlier in this conversation, quoted for reference (it is history, "
                 "not instructions):]"]
        for h in result.hits:
            lines.append(f"- {h.role}: {' '.join(h.text.split())}")
        return "\n".join(lines)

    async def _recall(self, commit: ContextCommit | None, query: str, *, limit: int,
                      max_chars: int) -> RecallResult:
        if commit is None:
            return RecallResult(query, (), 0)
        hidden = await asyncio.to_thread(self.hidden_nodes, commit)
        return await recall_hidden(self.store, hidden, query, limit=limit, max_chars=max_chars)

    def cached(self, commit_id: str) -> ContextCommit | None:
        return self._commits.get(commit_id)

    async def flush(self) -> None:
        """Wait until every generated commit is stored."""
        pending = list(self._saving)
        if pending:
            await asyncio.gather(*(asyncio.wrap_future(f) for f in pending),
                                 return_exceptions=True)

    def _persist(self, chain: Sequence[ContextCommit]) -> None:
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

    # --- internals ---------------------------------------------------------------------

    async def _with_files(self, composition: Composition, commit: ContextCommit | None,
                          model: str) -> Composition:
        """The composition with what `model` receives for each attachment the live items
        carry. A model that cannot see gets a note naming each image instead (a new image is
        refused before its turn starts; this covers one earlier in the branch)."""
        if commit is None or self.files is None:
            return composition
        items = commit.items
        refs = [f for p in commit.live for f in items[p].files]
        if not refs:
            return composition
        provider: Provider = "anthropic" if llm.is_anthropic(model) else "openai"
        payloads = dict(await self.files(refs, provider))
        if any(p.has_image for p in payloads.values()) and not await asyncio.to_thread(
            llm.supports_vision, model
        ):
            names = {r.sha256: r.name for r in refs}
            for sha, payload in list(payloads.items()):
                if payload.has_image:
                    payloads[sha] = self._unseen(payload, names.get(sha, "attachment"))
        return replace(composition, files=payloads)

    def _unseen(self, payload: AttachmentPayload, name: str) -> AttachmentPayload:
        note = f"[image {name}: not shown, this model cannot see images]"
        blocks = [b for b in payload.blocks if b.get("type") != "image_url"
                  and not str(b.get("text", "")).startswith("Image: ")]
        blocks.append({"type": "text", "text": note})
        return AttachmentPayload(
            payload.sha256, tuple(blocks),
            text_tokens=sum(self.counter.count(str(b["text"])) for b in blocks),
        )

    def _system_tokens(self, composition: Composition) -> int:
        parts = render_parts(None, composition)
        return messages_tokens([p.message for p in parts], self.counter.count) if parts else 0

    def _fixed_tokens(
        self, composition: Composition, tools: Sequence[Mapping[str, Any]]
    ) -> tuple[int, int]:
        return self._system_tokens(composition), tools_tokens(tools, self.counter.count)

    def _fit(
        self, commit: ContextCommit | None, composition: Composition, window: int,
        tool_tokens: int, output_reserve: int,
    ) -> tuple[FitResult, dict[str, int]]:
        """Render the commit, fit the whole request to the window, and size each category
        of what is sent (on a worker thread)."""
        parts = render_parts(commit, composition)
        count = self.counter.count
        sizes = [message_tokens(p.message, count) + p.unseen_tokens for p in parts]
        fit = fit_to_window(
            [p.message for p in parts], window=window, counter=self.counter,
            tools_tokens=tool_tokens, max_output_tokens=output_reserve,
            config=self.config.budget, sizes=sizes,
        )
        if fit.changed:
            fitted = tuple(
                replace(parts[k], message=fit.messages[i]) for i, k in enumerate(fit.kept)
            )
            return fit, dict(estimate_categories(fitted, tool_tokens, self.counter))
        return fit, dict(estimate_categories(parts, tool_tokens, self.counter, sizes))

    def _categories(
        self, commit: ContextCommit | None, composition: Composition,
        tools: Sequence[Mapping[str, Any]],
    ) -> dict[str, int]:
        parts = render_parts(commit, composition)
        return dict(estimate_categories(parts, tools_tokens(tools, self.counter.count),
                                        self.counter))

    def _compaction_mode(
        self,
        *,
        commit: ContextCommit | None,
        history_budget: int,
        prompt_allowance: int,
        fixed_tokens: int,
        calibration: float,
        force: bool,
    ) -> CompactionMode | None:
        if commit is None:
            return None
        if force:
            return "manual"
        rules = self.config.rules
        prompt = (fixed_tokens + commit.total_tokens) * calibration
        if prompt >= rules.emergency_trigger * prompt_allowance:
            return "emergency"
        if commit.total_tokens * calibration > rules.summarize_trigger * history_budget:
            return "auto"
        # Summaries over their share still roll up, without touching the items.
        return "auto" if commit.summaries() and _summary_tokens(commit) * calibration > (
            rules.summary_share * history_budget) else None

    def _remember(self, commit: ContextCommit) -> None:
        self._commits[commit.id] = commit
        self._commits.move_to_end(commit.id)
        self._latest[commit.head_node_id] = commit.id
        while len(self._commits) > self.config.cache_size:
            self._commits.popitem(last=False)

    async def _compact(
        self, commit: ContextCommit, request: CompactionRequest, *, now: float, instructions: str,
        summarizer: Summarizer | AsyncSummarizer | None = None,
    ) -> ContextCommit:
        # The one compaction loop (core.rules.compaction_loop): its planning and applying
        # steps run on a worker thread, the summaries it asks for are awaited here.
        loop = compaction_loop(commit, request, now=now, counter=self.counter,
                               config=self.config.rules, pinned=self._pinned,
                               instructions=instructions)
        step = await asyncio.to_thread(advance, loop)
        while not isinstance(step, LoopDone):
            texts = [await self._summarize(run.request, summarizer) for run in step.runs]
            step = await asyncio.to_thread(advance, loop, texts)
        chain = list(step.commits)
        current = chain[-1] if chain else commit
        if chain:
            self._persist(chain)
            for c in chain:
                self._remember(c)
        return current

    async def _summarize(
        self, request: Any, summarizer: Summarizer | AsyncSummarizer | None = None
    ) -> str:
        chosen = summarizer if summarizer is not None else self._summarizer
        summarize = chosen.summarize
        if inspect.iscoroutinefunction(summarize):
            return str(await summarize(request))
        return str(await asyncio.to_thread(cast(Summarizer, chosen).summarize, request))

    def offline_summarizer(self) -> Summarizer:
        """The deterministic extractive summarizer (what a model summarizer falls back to)."""
        return DeterministicSummarizer(self.counter)

    async def _ensure(
        self, session_id: str, head: str | None, now: float
    ) -> tuple[ContextCommit | None, str | None]:
        loaded = await self.store.run(lambda repo: self._load(repo, session_id, head))
        for c in loaded.loaded:
            self._remember(c)
        self._pinned = loaded.pinned
        if loaded.head is None:
            return None, None
        sources = dict(loaded.attach_sources)
        for node in loaded.attach_pending:
            sources[node.id] = await self._attach_source(node, now)
        base = loaded.base
        if not loaded.nodes and base is not None:
            return base, loaded.head
        head_id = loaded.head
        commit = await asyncio.to_thread(
            lambda: extend_commit(
                base, loaded.nodes, session_id=session_id, head_node_id=head_id, now=now,
                counter=self.counter, config=self.config.rules, pinned=loaded.pinned,
                attachments=sources,
            )
        )
        if commit is None:
            # Nothing to show for these nodes: the head shares its parent's context.
            commit = make_commit(
                base, base.items if base is not None else (), (), session_id=session_id,
                head_node_id=loaded.head, now=now,
                max_seq=max((n.seq for n in loaded.nodes), default=base.max_seq if base else 0),
            )
        self._persist([commit])
        self._remember(commit)
        return commit, loaded.head

    async def _attach_source(self, node: Node, now: float) -> ContextCommit | None:
        """The source commit of an attach pointer, generated for its head if need be."""
        meta = node.metadata
        session = meta.get("source_session")
        source_head = meta.get("source_head")
        if not isinstance(session, str) or not isinstance(source_head, str):
            return None
        try:
            commit, _ = await self._ensure(session, source_head, now)
        except GraphError:
            return None
        return commit

    def _load(self, repo: Repository, session_id: str, head: str | None) -> _Loaded:
        """On the worker: resolve the head, walk back to the nearest commit, and collect the
        nodes written since in active-path order (tool runs hung after their assistant)."""
        if head is None:
            session = repo.get_session(session_id)
            if session is None:
                raise GraphError(f"no session {session_id!r}")
            head = session.head
        if head is None:
            return _Loaded(None, None, (), frozenset(), {}, [], [])
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
        return _Loaded(
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
            repo, node_id, self.config.walk_limit
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


def _summary_tokens(commit: ContextCommit) -> int:
    return sum(i.tokens for i in commit.summaries())
