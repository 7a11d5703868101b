"""The one path from graph to request: `ContextEngine.prepare()` finds the head's commit
(nearest ancestor commit + new nodes + rule pipeline, cached in memory so the next one costs
O(new items)), compacts when the budget says so, renders, fits and reports occupancy."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from ...core.attachments import AttachmentPayload, AttachmentRef, Provider
from ...core.budget import BudgetConfig, plan_budget
from ...core.commit import ContextCommit, make_commit
from ...core.model import GraphError, Node
from ...core.occupancy import MeasuredUsage, Occupancy, build_occupancy, trigger_calibration
from ...core.render import Composition
from ...core.rules import (
    CompactionRequest,
    LoopDone,
    RuleConfig,
    advance,
    compaction_loop,
    extend_commit,
)
from ...core.summarize import AsyncSummarizer, DeterministicSummarizer, Summarizer
from ...core.tokens import TokenCounter
from ...providers import llm
from ...store.database import Store
from ...store.fulltext import any_terms_query
from ..retrieval.recall import RECALL_CHARS, RecallResult, fallback_digest, recall_in
from . import sizing
from .commit_cache import CommitCache

FileSource = Callable[
    [Sequence[AttachmentRef], Provider], Awaitable[Mapping[str, AttachmentPayload]]
]


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


class ContextEngine:
    """Owns the in-memory commit cache; every DuckDB read and write goes through the store's
    worker. Calls are serialized so one head's commit is generated once."""

    def __init__(
        self, store: Store, counter: TokenCounter, config: EngineConfig | None = None
    ) -> None:
        self.store = store
        self.counter = counter
        self.config = config if config is not None else EngineConfig()
        self._cache = CommitCache(store, cache_size=lambda: self.config.cache_size,
                                  walk_limit=lambda: self.config.walk_limit)
        self._compositions: dict[str, tuple[str, str, tuple[dict[str, Any], ...]]] = {}
        self._lock = asyncio.Lock()
        self._pinned: frozenset[str] = frozenset()
        # What a model receives for the attachments a request carries (the chat service's
        # attachment store); None renders each as a note naming the file.
        self.files: FileSource | None = None
        # What a model without tools is quoted of the chat's knowledge for the newest user
        # message (the session's tools set it); None quotes nothing but `recall`'s finds.
        self.tail_passages: Callable[[str, ContextCommit], Awaitable[str]] | None = None
        self._summarizer: Summarizer | AsyncSummarizer = (
            self.config.summarizer
            if self.config.summarizer is not None
            else DeterministicSummarizer(counter)
        )

    # --- public API --------------------------------------------------------------------

    def forget(self) -> None:
        """Drop what was learnt of the store's sessions (a restored backup replaced it). The
        commits stay: their ids are their content."""
        self._cache.forget()
        self._compositions.clear()

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
        ordered_tools = sizing.stable_tools(tools)
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
                sizing.fixed_tokens, self.counter, composition, ordered_tools
            )
            budget = plan_budget(window, system_tokens=sys_tokens, tools_tokens=tool_tokens,
                                 config=self.config.budget)
            commit, resolved_head = await self._ensure(session_id, head, now)
            mode = sizing.compaction_mode(
                self.config.rules,
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
                digest = await fallback_digest(self.store, commit, self._cache.get)
                if self.tail_passages is not None:  # the chat's knowledge, quoted as well
                    quoted = await self.tail_passages(session_id, commit)
                    digest = "\n\n".join(t for t in (digest, quoted) if t)
                if digest:
                    composition = replace(composition, digest=digest)
            composition = await self._with_files(composition, commit, model)
            fit, categories = await asyncio.to_thread(
                sizing.fit_request, self.counter, self.config.budget, commit, composition,
                window, tool_tokens, budget.output_reserve,
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
        ordered_tools = last_tools if tools is None else sizing.stable_tools(tools)
        async with self._lock:
            commit, resolved_head = await self._ensure(session_id, head, now)
            composition = await self._with_files(composition, commit, model)
            categories = await asyncio.to_thread(
                sizing.categories, self.counter, commit, composition, ordered_tools
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
        """Search what the request for `head` no longer shows in full (the search itself is
        `retrieval.recall`'s) and return the original text of the best `limit` matches.
        Raises `QueryError` (a ValueError) for a query without words."""
        any_terms_query(query)  # a query with no words is the caller's error
        async with self._lock:
            commit, _ = await self._ensure(session_id, head, now)
            return await recall_in(self.store, commit, self._cache.get, query, limit=limit,
                                   max_chars=max_chars)

    def cached(self, commit_id: str) -> ContextCommit | None:
        return self._cache.get(commit_id)

    async def flush(self) -> None:
        """Wait until every generated commit is stored."""
        pending = self._cache.pending()
        if pending:
            await asyncio.gather(*(asyncio.wrap_future(f) for f in pending),
                                 return_exceptions=True)

    def offline_summarizer(self) -> Summarizer:
        """The deterministic extractive summarizer (what a model summarizer falls back to)."""
        return DeterministicSummarizer(self.counter)

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
                    payloads[sha] = sizing.unseen_image(self.counter, payload,
                                                        names.get(sha, "attachment"))
        return replace(composition, files=payloads)

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
            self._cache.persist(chain)
            for c in chain:
                self._cache.remember(c)
        return current

    async def _summarize(
        self, request: Any, summarizer: Summarizer | AsyncSummarizer | None = None
    ) -> str:
        chosen = summarizer if summarizer is not None else self._summarizer
        summarize = chosen.summarize
        if inspect.iscoroutinefunction(summarize):
            return str(await summarize(request))
        return str(await asyncio.to_thread(cast(Summarizer, chosen).summarize, request))

    async def _ensure(
        self, session_id: str, head: str | None, now: float
    ) -> tuple[ContextCommit | None, str | None]:
        loaded = await self.store.run(lambda repo: self._cache.load(repo, session_id, head))
        for c in loaded.loaded:
            self._cache.remember(c)
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
        self._cache.persist([commit])
        self._cache.remember(commit)
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
