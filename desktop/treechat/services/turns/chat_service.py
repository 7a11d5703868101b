"""Chat turns: the typed message is committed first, the context is prepared by the engine,
the reply streams into a draft, tool calls run as nodes in the graph, and the request's usage
lands in the ledger. Views follow along through `TurnEvent`s."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core import dag
from ...core.attachments import AttachmentRef, node_attachments, with_attachments
from ...core.budget import shrink_history
from ...core.chat_settings import SessionSettings, join_instructions
from ...core.model import GraphError, Node
from ...core.reply import CONTINUES_KEY, can_continue, with_reasoning
from ...core.summarize import AsyncSummarizer, ModelSummarizer
from ...providers import stream as provider_stream
from ...providers.llm import supports_vision as llm_supports_vision
from ...providers.provider import LiteLLMProvider, Provider
from ...store import usage as ledger
from ...store.database import Store
from ...store.repository import Repository
from ...tools.base import ToolBox, ToolResult
from ...tools.files import Workspace, file_tools
from ...tools.knowledge import SearchKnowledgeTool
from ...tools.recall import RecallTool
from ...tools.todo import todo_tools
from ...tools.workspace import WorkspaceInstructions
from ..attachments import AttachmentService, PreparedFile
from ..clock import SYSTEM_CLOCK, Clock
from ..context import ContextEngine
from ..drafts import DraftWriter, StoreRelease, store_released
from ..mcp import McpService
from ..models import BUNDLED_ID, Endpoint, ModelCatalog, ModelUnavailable
from ..store_release import StoreFreeSummarizer, StoreNotBackError
from .chat_settings import ChatSettingsService
from .events import (
    EventSink,
    NodeAdded,
    OccupancyChanged,
    ReasoningDelta,
    TextDelta,
    ToolCallStarted,
    TurnError,
    TurnFailed,
    TurnFinished,
    TurnStarted,
)
from .message_fit import MessageFit, cut_to_fit, measure_fit
from .sessions import SessionService, SessionView, new_id, title_first
from .spending import SpendingService
from .stopped_usage import StoppedRequest, record_stopped
from .turn_queue import TurnQueue
from .turn_records import (
    CostEstimate,
    measured_from,
    reply_usage,
    turn_error,
    usage_record,
)

if TYPE_CHECKING:  # numpy, usearch and the embedder load on first use, off start-up
    from ..retrieval.knowledge import KnowledgeService

log = logging.getLogger(__name__)

IDENTITY = (
    "You are Treechat's assistant: accurate, direct and friendly. Answer in Markdown. "
    "When you use tools, say briefly what you found."
)

CONTINUE_PROMPT = (
    "Your previous reply was cut off. Continue it from exactly where it stopped, without "
    "repeating anything or commenting on the interruption."
)
"""Sent after a cut-short reply to have it carried on (the request only: the graph keeps the
partial reply and its continuation as two nodes)."""

@dataclass
class ChatConfig:
    max_steps: int = 8  # model calls per turn when tools keep being called
    global_instructions: str = ""
    workspace: Path | None = None
    draft_interval: float = 1.0
    # Who writes the summaries of folded history: "" the offline extractive summarizer,
    # "session" the session's own model, or a model id (a cheaper model of the same
    # connection, the bundled one). Each summary is made once and kept in its commit.
    summarizer: str = ""
    # Set by a command-line turn: the store is let go of while the provider is awaited (the
    # draft goes to a journal meanwhile), so other processes can open it. The window keeps it.
    release_store: StoreRelease | None = None


@dataclass
class _Running:
    task: asyncio.Task[Any]
    stopped: bool = False


@dataclass(frozen=True, slots=True)
class Attachment:
    """A staged attach: another branch's context to bring into the next request."""

    source_session: str
    source_head: str
    label: str = ""
    tokens: int = 0
    metadata: Mapping[str, Any] = field(default_factory=dict)


class TodoStore:
    """Per-session todo list kept in the settings table."""

    def __init__(self, store: Store, session_id: str) -> None:
        self.store = store
        self.key = f"todos:{session_id}"

    async def load(self) -> Sequence[Mapping[str, Any]]:
        value = await self.store.run(lambda r: r.get_setting(self.key, []))
        return list(value or [])

    async def save(self, items: Sequence[Mapping[str, Any]]) -> None:
        data = [dict(i) for i in items]
        await self.store.run(lambda r: r.set_setting(self.key, data))


class ChatService:
    """Runs turns for sessions; at most one turn per session at a time."""

    def __init__(
        self,
        store: Store,
        engine: ContextEngine,
        models: ModelCatalog,
        *,
        config: ChatConfig | None = None,
        clock: Clock = SYSTEM_CLOCK,
        make_id: Callable[[], str] = new_id,
        provider: Provider | None = None,
        mcp: McpService | None = None,
        queue: TurnQueue | None = None,
    ) -> None:
        self.store = store
        # Requests wait their turn per server (one at a time to a local one); the chat list
        # shows who is queued.
        self.queue = queue or TurnQueue()
        self.mcp = mcp  # MCP servers' tools join the built-in ones when given
        self.provider: Provider = provider or LiteLLMProvider()
        self.engine = engine
        self.models = models
        self.config = config or ChatConfig()
        self.clock = clock
        self.make_id = make_id
        self.sessions = SessionService(store, clock=clock, make_id=make_id)
        self.settings = ChatSettingsService(
            store, clock=clock, make_id=make_id,
            on_global_instructions=self._set_global_instructions,
        )
        self.spending = SpendingService(store)  # cost per reply and per chat, usage by day
        self._running: dict[str, _Running] = {}
        self._claimed: set[str] = set()  # sessions whose turn is being set up
        self._instructions: WorkspaceInstructions | None = None
        # Files in messages: stored before the request, rendered by the engine from the store.
        self.attachments = AttachmentService(store, engine.counter, clock=clock)
        engine.files = self.attachments.payloads
        self._knowledge: KnowledgeService | None = None
        self._knowledge_of: dict[str, list[str]] = {}  # session -> knowledge bases it uses

    # --- public operations -------------------------------------------------------------

    def is_running(self, session_id: str) -> bool:
        return session_id in self._running or session_id in self._claimed

    async def send(
        self,
        session_id: str,
        text: str,
        *,
        model: str | None = None,
        api_base: str | None = None,
        attachments: Sequence[Attachment] = (),
        on_event: EventSink | None = None,
        files: Sequence[PreparedFile | str | os.PathLike[str]] = (),
    ) -> Node | None:
        """Commit `text` under HEAD, then run a turn for it. Returns the final reply node.

        `attachments` are staged branch attaches; `files` the files the message carries
        (prepared ones, or paths prepared here). A file that cannot be sent raises
        `AttachmentError` before anything is written."""
        commit = await self.message_writer(session_id, text, attachments, files)
        return await self._guarded(session_id, commit, model, api_base, on_event)

    async def message_writer(
        self, session_id: str, text: str, attachments: Sequence[Attachment] = (),
        files: Sequence[PreparedFile | str | os.PathLike[str]] = (),
    ) -> Callable[[], Awaitable[tuple[str, Node]]]:
        """What commits `text` (with its staged attaches and files) under HEAD when called,
        the files prepared now: a file that cannot be sent raises before anything is written."""
        text = text.strip()
        prepared = await self._prepared(files)
        if not text and not attachments and not prepared:
            raise ValueError("nothing to send")

        async def commit() -> tuple[str, Node]:
            # The bytes are stored before the node that names them, and before the request.
            await self.attachments.save(prepared)
            refs = await asyncio.to_thread(self.attachments.refs, prepared)
            user = await self._commit_user(session_id, text, attachments, refs,
                                           [f.meta() for f in prepared])
            return user.id, user

        return commit

    async def retry(
        self,
        session_id: str,
        node_id: str,
        *,
        model: str | None = None,
        api_base: str | None = None,
        on_event: EventSink | None = None,
    ) -> Node | None:
        """A new reply beside `node_id` (an assistant) or to it (a user message)."""

        async def locate() -> tuple[str | None, Node | None]:
            view = await self.sessions.view(session_id)
            return dag.reply_parent(view.graph, node_id), None

        return await self._guarded(session_id, locate, model, api_base, on_event)

    async def edit(
        self,
        session_id: str,
        node_id: str,
        text: str,
        *,
        model: str | None = None,
        api_base: str | None = None,
        on_event: EventSink | None = None,
    ) -> Node | None:
        """A different-content sibling of a user message, then a reply to it."""

        async def fork() -> tuple[str | None, Node | None]:
            user = await self.sessions.edit(session_id, node_id, text)
            return user.id, user

        return await self._guarded(session_id, fork, model, api_base, on_event)

    async def continue_reply(
        self,
        session_id: str,
        node_id: str,
        *,
        model: str | None = None,
        api_base: str | None = None,
        on_event: EventSink | None = None,
    ) -> Node | None:
        """Carry on a reply that was stopped, interrupted or ran out of reply tokens. The
        continuation is a new assistant node after the partial one (nothing is rewritten),
        its metadata naming the reply it continues (`core.reply.continuation_of`), so a
        view shows the two joined. Raises `ValueError` for a reply that is not cut short."""

        async def locate() -> tuple[str | None, Node | None]:
            view = await self.sessions.view(session_id)
            partial = view.graph.get(node_id)
            if not can_continue(partial):
                raise ValueError("only a reply that was cut short can be continued")
            return partial.id, None

        return await self._guarded(
            session_id, locate, model, api_base, on_event, continuing=node_id
        )

    async def _guarded(
        self,
        session_id: str,
        before: Callable[[], Awaitable[tuple[str | None, Node | None]]],
        model: str | None,
        api_base: str | None,
        on_event: EventSink | None,
        continuing: str | None = None,
    ) -> Node | None:
        """The one turn of a send, retry, edit or continuation, after `before`."""
        sink = on_event if on_event is not None else _ignore
        if self.is_running(session_id):
            return self._busy(session_id, sink)
        reply: Node | None = await self._claimed_run(
            session_id, before, lambda parent, user: self._turn(
                session_id, parent, user, model, api_base, sink, continuing))
        return reply

    async def fan_out(
        self,
        session_id: str,
        before: Callable[[], Awaitable[tuple[str | None, Node | None]]],
        runs: Sequence[tuple[str, EventSink]],
    ) -> tuple[Node | None, ...]:
        """One turn per (model, sink) from what `before` writes, all at once under one claim
        of the session: the replies are siblings, each request waits its turn at its own
        server, and `stop` stops them all (each keeps what streamed)."""
        if self.is_running(session_id):
            return tuple(self._busy(session_id, sink) for _, sink in runs)

        async def every(parent: str | None, user: Node | None) -> tuple[Node | None, ...]:
            tasks = [asyncio.ensure_future(self._turn(session_id, parent, user, m, None, s))
                     for m, s in runs]
            try:
                done = await asyncio.gather(*tasks, return_exceptions=True)
            except asyncio.CancelledError:  # stopped: each turn writes what it has
                done = await asyncio.gather(*tasks, return_exceptions=True)
            for outcome, (_, sink) in zip(done, runs, strict=True):
                if isinstance(outcome, Exception):  # one sibling's fault is not the others'
                    log.error("a reply failed", exc_info=outcome)
                    sink(TurnFailed(session_id, TurnError(
                        "internal", f"The reply could not be finished: {outcome}", True,
                        action="retry"), None))
            return tuple(n if isinstance(n, Node) else None for n in done)

        replies: tuple[Node | None, ...] = await self._claimed_run(session_id, before, every)
        return replies

    async def _claimed_run(
        self, session_id: str,
        before: Callable[[], Awaitable[tuple[str | None, Node | None]]],
        turn: Callable[[str | None, Node | None], Awaitable[Any]],
    ) -> Any:
        """Claim the session, write what the turn starts from, run it. The claim is taken
        before the first await, so a double-clicked send cannot start two turns."""
        self._claimed.add(session_id)
        try:
            parent, user = await before()
            return await self._start(session_id, turn(parent, user))
        finally:
            self._claimed.discard(session_id)

    def stop(self, session_id: str) -> None:
        """Stop the running turn: the HTTP stream closes, the text so far is kept."""
        running = self._running.get(session_id)
        if running is not None:
            running.stopped = True
            running.task.cancel()

    async def occupancy(
        self, session_id: str, *, model: str | None = None, api_base: str | None = None,
        view: SessionView | None = None,
    ) -> Any:
        """What the next request would carry; `view` is the session as the caller shows it
        (read from the store when not given)."""
        if view is None or view.session.id != session_id:
            view = await self.sessions.view(session_id)
        endpoint = await self._endpoint_for_estimate(model or view.session.model or None, api_base)
        measured = measured_from(await self.store.run(lambda r: ledger.last_measurement(
            r, session_id, head=view.head, model=_address(endpoint))))
        if self.mcp is not None:
            await self.mcp.load_chat(session_id)
        return await self.engine.occupancy(
            session_id,
            model=endpoint.model,
            window=endpoint.window,
            head=view.head,
            now=self.clock.now(),
            measured=measured,
            system_prompt=await self._session_prompt(session_id),
            situation=self._situation(),
            tools=self._tools(session_id, endpoint).specs(),
        )

    async def message_fit(
        self, session_id: str | None, text: str, *, model: str | None = None
    ) -> MessageFit:
        """How `text` would fit as the next message of `session_id` (None: a new chat) on
        `model`: asked before sending, so a message too big is cut or kept by the user's
        choice, never silently."""
        endpoint = await self._endpoint_for_estimate(model, None)
        system = tools = 0
        if session_id is not None:
            parts = dict((await self.occupancy(session_id, model=model)).breakdown)
            system, tools = parts.get("system", 0), parts.get("tools", 0)
        return await asyncio.to_thread(
            measure_fit, text, self.engine.counter, window=endpoint.window,
            system_tokens=system, tools_tokens=tools, config=self.engine.config.budget,
        )

    async def cut_to_fit(self, text: str, fit: MessageFit) -> str:
        """`text` cut to the room `fit` found (the start and the end kept, the cut marked)."""
        return await asyncio.to_thread(cut_to_fit, text, fit, self.engine.counter)

    async def compact(self, session_id: str, *, model: str | None = None) -> Any:
        """Compact the session's context now (the `/compact` command)."""
        view = await self.sessions.view(session_id)
        if view.head is None:
            return await self.occupancy(session_id, model=model)
        endpoint = await self._endpoint_for_estimate(model or view.session.model or None, None)
        if self.mcp is not None:
            await self.mcp.load_chat(session_id)
        prep = await self.engine.prepare(
            session_id,
            model=endpoint.model,
            window=endpoint.window,
            head=view.head,
            tools=self._tools(session_id, endpoint).specs(),
            system_prompt=await self._session_prompt(session_id),
            situation=self._situation(),
            now=self.clock.now(),
            force_compact=True,
        )
        return prep.occupancy

    async def capabilities(self, model: str | None = None, session_id: str | None = None) -> Any:
        """Which parameters `model` (default: the session's, else the default model) takes,
        as `providers.llm.ModelCapabilities`: the chat header shows only those controls."""
        from ...providers import llm

        if model is None and session_id is not None:
            session = await self.store.run(lambda r: r.get_session(session_id))
            model = session.model if session is not None and "/" in session.model else None
        endpoint = await self._endpoint_for_estimate(model, None)
        return await asyncio.to_thread(llm.model_capabilities, endpoint.model)

    async def estimate_next_cost(
        self, session_id: str, draft: str = "", *, model: str | None = None,
        api_base: str | None = None,
    ) -> CostEstimate:
        """What the next request would cost if sent now with `draft` typed: its prompt (the
        occupancy of HEAD plus the draft) at the uncached price, and the ceiling with a
        full reply. A cache hit is never assumed (CTX-008)."""
        from ...providers import llm

        view = await self.sessions.view(session_id)
        chosen = model or (view.session.model if "/" in view.session.model else None)
        endpoint = await self._endpoint_for_estimate(chosen, api_base)
        occupancy = await self.occupancy(session_id, model=endpoint.choice or endpoint.model,
                                         api_base=api_base, view=view)
        settings = await self.settings.current(session_id)
        extra = await asyncio.to_thread(self.engine.counter.count, draft) if draft else 0
        # The last measurement is of the prompt before the reply it wrote: the local estimate
        # of the branch as it is now may be larger, and a reservation takes the larger one.
        prompt = max(int(occupancy.total_used), int(occupancy.estimated)) + extra
        reply = settings.parameters.max_tokens or endpoint.reply_cap or endpoint.max_output
        prompt_cost = await asyncio.to_thread(llm.reservation_cost, endpoint.model, prompt, 0)
        ceiling = await asyncio.to_thread(llm.reservation_cost, endpoint.model, prompt, reply)
        return CostEstimate(
            model=endpoint.model,
            prompt_tokens=prompt,
            max_reply_tokens=reply,
            prompt_usd=prompt_cost.usd,
            ceiling_usd=ceiling.usd,
            priced=ceiling.priced,
        )

    async def close(self) -> None:
        """Stop every turn (keeping what streamed) and the bundled model."""
        for session_id in list(self._running):
            self.stop(session_id)
        tasks = [r.task for r in self._running.values()]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await self.models.close()

    # --- the turn ----------------------------------------------------------------------

    async def _prepared(
        self, files: Sequence[PreparedFile | str | os.PathLike[str]]
    ) -> tuple[PreparedFile, ...]:
        ready = [f for f in files if isinstance(f, PreparedFile)]
        paths = [f for f in files if not isinstance(f, PreparedFile)]
        if paths:
            ready.extend(await self.attachments.prepare(paths))
        return tuple(ready)

    async def _commit_user(
        self, session_id: str, text: str, attachments: Sequence[Attachment],
        files: Sequence[AttachmentRef] = (),
        details: Sequence[Mapping[str, Any]] = (),
    ) -> Node:
        """`details` (per file, in order) add what the chat shows of each: pages, size in
        pixels."""
        if not attachments and not files:
            return await self.sessions.append_message(session_id, text)
        now = self.clock.now()
        ids = [self.make_id() for _ in range(len(attachments) + 1)]

        def work(repo: Repository) -> Node:
            session = repo.get_session(session_id)
            if session is None:
                raise GraphError(f"no session {session_id!r}")
            nodes: list[Node] = []
            parent = session.head
            for att, nid in zip(attachments, ids, strict=False):
                nodes.append(
                    Node(
                        id=nid,
                        seq=0,
                        created_at=now,
                        session_id=session_id,
                        role="runtime",
                        name="attach",
                        output=att.label or "attached context",
                        predecessor=parent,
                        metadata={
                            "source_session": att.source_session,
                            "source_head": att.source_head,
                            **dict(att.metadata),
                        },
                    )
                )
                parent = nid
            user = Node(
                id=ids[-1],
                seq=0,
                created_at=now,
                session_id=session_id,
                role="user",
                output=text,
                predecessor=parent,
                metadata=_with_details(with_attachments({}, files), details),
            )
            nodes.append(user)
            stored = repo.apply_change(session_id, dag.Change(tuple(nodes), user.id), now)
            title_first(repo, session, text, [f.name for f in files])
            return stored[-1]

        return await self.store.run(work)

    async def _unseen_images(self, user: Node | None, endpoint: Endpoint) -> str:
        """Why `endpoint` cannot take the images `user` carries ("" when it can)."""
        if user is None:
            return ""
        images = [r.name for r in node_attachments(user.metadata)
                  if r.kind == "image" or r.page_images]
        if not images or await asyncio.to_thread(llm_supports_vision, endpoint.model):
            return ""
        return (f"{endpoint.label} cannot see images, and this message carries "
                f"{', '.join(images)}. Choose a model that accepts images and retry the "
                "message, or edit it without them.")

    def _busy(self, session_id: str, sink: EventSink) -> Node | None:
        sink(
            TurnFailed(
                session_id,
                TurnError(
                    "busy",
                    "A reply is still being written in this chat. Stop it first, or wait.",
                ),
                None,
            )
        )
        return None

    async def _start(self, session_id: str, turn: Awaitable[Any]) -> Any:
        task = asyncio.ensure_future(turn)
        running = _Running(task)
        self._running[session_id] = running
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            # Our caller was cancelled (e.g. the window closing): stop the turn as well.
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            raise
        finally:
            if self._running.get(session_id) is running:
                del self._running[session_id]

    async def _turn(
        self,
        session_id: str,
        parent: str | None,
        user: Node | None,
        model: str | None,
        api_base: str | None,
        sink: EventSink,
        continuing: str | None = None,
    ) -> Node | None:
        session = await self.store.run(lambda r: r.get_session(session_id))
        try:
            endpoint = await self._resolve(model, session.model if session else "", api_base)
        except ModelUnavailable as exc:
            sink(TurnStarted(session_id, parent, user, model or ""))
            sink(
                TurnFailed(
                    session_id, TurnError("unavailable", str(exc), False, action="settings"), None
                )
            )
            return None
        except Exception as exc:  # the bundled model failed to start, a broken setting...
            log.exception("could not reach the model")
            sink(TurnStarted(session_id, parent, user, model or ""))
            sink(
                TurnFailed(
                    session_id,
                    TurnError(
                        "offline",
                        f"Could not start or reach the model: {exc}",
                        True,
                        action="retry",
                    ),
                    None,
                )
            )
            return None
        if session is not None and endpoint.choice and session.model != endpoint.choice:
            await self.sessions.set_model(session_id, endpoint.choice)
        if user is None and parent is not None:  # a retry of a message: check what it carries
            replied = await self.store.run(lambda r: r.get_node(parent))
            blind = await self._unseen_images(
                replied if replied is not None and replied.role == "user" else None, endpoint)
        else:
            blind = await self._unseen_images(user, endpoint)
        if blind:
            # The message and its files are kept: retry it on a model that can see, or edit it.
            sink(TurnStarted(session_id, parent, user, _address(endpoint)))
            sink(TurnFailed(session_id, TurnError("unavailable", blind, False,
                                                  action="settings"), None))
            return None
        sink(TurnStarted(session_id, parent, user, _address(endpoint)))
        if self.mcp is not None and self._tools_for_model(endpoint):
            # Servers start before the first request, so the tool list is whole from it on.
            await self.mcp.prepare(session_id)
        await self.refresh_knowledge(session_id)
        toolbox = self._tools(session_id, endpoint)
        head = parent
        for step in range(self.config.max_steps):
            outcome = await self._step(
                session_id, head, endpoint, toolbox, sink, step,
                continuing=continuing if step == 0 else None,
            )
            if isinstance(outcome, _StepDone):
                return outcome.node
            head = outcome.assistant.id
        sink(
            TurnFailed(
                session_id,
                TurnError(
                    "internal",
                    f"Stopped after {self.config.max_steps} tool steps.",
                    True,
                    action="retry",
                ),
                None,
            )
        )
        return None

    async def _step(
        self,
        session_id: str,
        head: str | None,
        endpoint: Endpoint,
        toolbox: ToolBox,
        sink: EventSink,
        step: int,
        continuing: str | None = None,
    ) -> _StepDone | _StepContinue:
        measured = measured_from(await self.store.run(  # the tokenizer's drift: this model's
            lambda r: ledger.last_measurement(r, session_id, model=_address(endpoint))))
        # Read before every request: a change of instructions or parameters applies from the
        # next request on, and the reply records the revision it ran under.
        settings = await self.settings.current(session_id)
        sent_params = await self._request_parameters(endpoint.model, settings)
        prep = await self.engine.prepare(
            session_id,
            model=endpoint.model,
            window=endpoint.window,
            head=head,
            tools=toolbox.specs(),
            system_prompt=self._system_prompt(settings.instructions),
            situation=self._situation(),
            now=self.clock.now(),
            measured=measured,
            # The bundled model cannot call `recall`: quote what it would find instead.
            recall_fallback=self.models.bundled is not None
            and endpoint.model == self.models.bundled.model_id,
            summarizer=await self._summarizer_for(session_id, endpoint),
        )
        # The request is what the window now holds: the ring and the Context tab show it
        # for as long as the reply takes, not the figure of the head before it.
        sink(OccupancyChanged(session_id, prep.occupancy))
        draft = DraftWriter(
            self.store,
            draft_id=self.make_id(),
            session_id=session_id,
            parent_id=head,
            model=endpoint.model,
            interval=self.config.draft_interval,
            clock=self.clock,
        )
        await draft.start()
        reasoning: list[str] = []

        def on_stream(event: provider_stream.StreamEvent) -> None:
            if isinstance(event, provider_stream.TextDelta):
                draft.add(event.text)
                sink(TextDelta(session_id, event.text))
            elif isinstance(event, provider_stream.ReasoningDelta):
                reasoning.append(event.text)
                draft.add_reasoning(event.text)
                sink(ReasoningDelta(session_id, event.text))
            elif isinstance(event, provider_stream.ToolCall):
                args = event.parsed_arguments()
                sink(
                    ToolCallStarted(
                        session_id,
                        event.id,
                        event.name,
                        args if isinstance(args, dict) else {"raw": args},
                    )
                )

        messages = prep.messages
        if continuing is not None:
            messages = (*messages, {"role": "user", "content": CONTINUE_PROMPT})
        max_tokens = sent_params.pop("max_tokens", None)
        request = provider_stream.TurnRequest(
            model=endpoint.model,
            messages=messages,
            tools=prep.tools,
            api_base=endpoint.api_base,
            api_key=endpoint.api_key,
            max_tokens=(max_tokens or endpoint.reply_cap or prep.max_output_tokens
                        or endpoint.max_output),
            session_id=session_id,
            phase="chat",
            lineage=session_id,
            extra=sent_params,
            headers=dict(endpoint.headers),
            connect_timeout=endpoint.timeout,
        )
        run_meta: dict[str, Any] = {}
        if settings.revision:
            run_meta["settings_revision"] = settings.id
        if continuing is not None:
            run_meta[CONTINUES_KEY] = continuing
        if sent_params or max_tokens is not None:
            run_meta["parameters"] = {
                **sent_params, **({"max_tokens": max_tokens} if max_tokens is not None else {})
            }
        try:
            async with self._network_wait(draft), self.queue.slot(
                session_id, endpoint.api_base, endpoint.model
            ):
                result = await self.provider.stream_turn(
                    request,
                    on_event=on_stream,
                    shrink=self._shrink,
                )
                if result.error is None:  # a reply recovered from its draft is not cut short
                    draft.mark_complete(result.finish_reason)
        except asyncio.CancelledError:
            node = await self._finish_interrupted(
                session_id, head, endpoint, draft, "stopped",
                extra=with_reasoning(run_meta, "".join(reasoning)),
            )
            await record_stopped(self.store, self.engine.counter.count, node, StoppedRequest(
                self.make_id(), session_id, prep.commit_id, _address(endpoint), endpoint.model,
                prep.estimated_prompt_tokens, self.clock.now()))  # billed all the same
            occupancy = await self._occupancy_after(session_id, endpoint, node.id)
            sink(TurnFinished(session_id, node, occupancy))
            return _StepDone(node)

        usage_meta = reply_usage(result)

        async def record(measured_head: str | None) -> None:
            # The measurement belongs to the head the turn leaves behind, so the ring reads
            # "measured" until the graph moves again (spec §7).
            row = usage_record(
                self.make_id(),
                session_id,
                measured_head,
                prep.commit_id,
                _address(endpoint),
                result,
                prep.estimated_prompt_tokens,
                self.clock.now(),
            )
            await self.store.run(lambda r: ledger.record_usage(r, row))

        if result.error is not None:
            log.warning(
                "request to %s failed (%s): %s", endpoint.model, result.error.kind.value,
                result.error.detail or result.error.message,
            )
            partial = None
            if result.text:
                partial = await self._finish_interrupted(
                    session_id, head, endpoint, draft, result.error.kind.value,
                    extra=with_reasoning(run_meta, result.reasoning),
                )
            else:
                await draft.settle()
                await self.store.run(lambda r: r.delete_draft(draft.draft_id))
            await record(partial.id if partial is not None else head)
            sink(TurnFailed(session_id, turn_error(result.error), partial))
            return _StepDone(partial)

        now = self.clock.now()
        assistant = Node(
            id=self.make_id(),
            seq=0,
            created_at=now,
            session_id=session_id,
            role="assistant",
            name=_address(endpoint),
            output=result.text,
            predecessor=head,
            metadata=with_reasoning({
                **_model_meta(endpoint),
                "finish_reason": result.finish_reason,
                "usage": usage_meta,
                **run_meta,
                **(
                    {
                        "tool_calls": [
                            {"id": c.id, "name": c.name, "arguments": c.arguments}
                            for c in result.tool_calls
                        ]
                    }
                    if result.tool_calls
                    else {}
                ),
                **({"overflow_retried": True} if result.attempts > 1 else {}),
                # the provider sent lines that were not valid data: pieces may be missing
                **(
                    {"unreadable_stream_lines": result.unreadable_lines}
                    if result.unreadable_lines
                    else {}
                ),
            }, result.reasoning),
        )
        await draft.settle()
        (stored,) = await self.store.run(
            lambda r: r.finish_draft(draft.draft_id, [assistant], session_id, assistant.id, now)
        )
        await record(stored.id)
        if not result.tool_calls:
            occupancy = await self._occupancy_after(session_id, endpoint, stored.id)
            sink(TurnFinished(session_id, stored, occupancy))
            return _StepDone(stored)

        sink(NodeAdded(session_id, stored))
        for call in result.tool_calls:
            try:
                tool_result = await toolbox.call(call.name, call.arguments)
                if self.store.released:  # a remote tool's answer, and the store held elsewhere
                    raise StoreNotBackError(tool_result.text)
            except asyncio.CancelledError:
                # Stopped while the call ran or awaited approval: the call is cancelled with
                # the turn (as a stopped stream is), and the graph says so.
                cancelled = ToolResult.error(f"{call.name}: cancelled, the turn was stopped")
                (saved,) = await asyncio.shield(
                    self.store.run(_appender(self._tool_node(session_id, stored, call, cancelled)))
                )
                sink(NodeAdded(session_id, saved))
                occupancy = await self._occupancy_after(session_id, endpoint, stored.id)
                sink(TurnFinished(session_id, stored, occupancy))
                return _StepDone(stored)
            tool_node = self._tool_node(session_id, stored, call, tool_result)
            (saved,) = await self.store.run(_appender(tool_node))
            sink(NodeAdded(session_id, saved))
        sink(
            OccupancyChanged(
                session_id, await self._occupancy_after(session_id, endpoint, stored.id)
            )
        )
        return _StepContinue(stored)

    def _network_wait(self, draft: DraftWriter) -> contextlib.AbstractAsyncContextManager[None]:
        """Around the provider's wait and stream: the store released when so configured."""
        release = self.config.release_store
        if release is None:
            return contextlib.nullcontext()
        return store_released(draft, release)

    def _tool_node(
        self, session_id: str, caller: Node, call: Any, result: ToolResult
    ) -> Node:
        return Node(
            id=self.make_id(),
            seq=0,
            created_at=self.clock.now(),
            session_id=session_id,
            role="tool",
            name=call.name,
            input=_json_or_raw(call.arguments),
            output=result.text,
            caller=caller.id,
            metadata={"tool_call_id": call.id, "ok": result.ok, **result.metadata},
        )

    def _shrink(self, messages: list[dict[str, Any]], target: int) -> list[dict[str, Any]]:
        return list(shrink_history(messages, target, self.engine.counter))

    async def _resolve(
        self, explicit: str | None, remembered: str, api_base: str | None
    ) -> Endpoint:
        """The model asked for, else the one the session last used, else the default. An
        imported chat remembers its source app's name (`gpt-4`, not a litellm id): that gives
        way to the default instead of failing the turn."""
        if explicit:
            return await self.models.resolve(explicit, api_base)
        if remembered and "/" in remembered:
            return await self.models.resolve(remembered, api_base)
        return await self.models.resolve(None, api_base)

    async def _finish_interrupted(
        self,
        session_id: str,
        head: str | None,
        endpoint: Endpoint,
        draft: DraftWriter,
        reason: str,
        extra: Mapping[str, Any] | None = None,
    ) -> Node:
        now = self.clock.now()
        node = Node(
            id=self.make_id(),
            seq=0,
            created_at=now,
            session_id=session_id,
            role="assistant",
            name=_address(endpoint),
            output=draft.text,
            predecessor=head,
            metadata={
                **_model_meta(endpoint), "interrupted": True, "reason": reason, **(extra or {})
            },
        )
        await draft.settle()
        (stored,) = await asyncio.shield(
            self.store.run(
                lambda r: r.finish_draft(draft.draft_id, [node], session_id, node.id, now)
            )
        )
        return stored

    async def _occupancy_after(self, session_id: str, endpoint: Endpoint, head: str) -> Any:
        measured = measured_from(await self.store.run(lambda r: ledger.last_measurement(
            r, session_id, head=head, model=_address(endpoint))))
        return await self.engine.occupancy(
            session_id,
            model=endpoint.model,
            window=endpoint.window,
            head=head,
            now=self.clock.now(),
            measured=measured,
            system_prompt=await self._session_prompt(session_id),
            situation=self._situation(),
            tools=self._tools(session_id, endpoint).specs(),
        )

    async def _endpoint_for_estimate(self, model: str | None, api_base: str | None) -> Endpoint:
        """The model's window without starting anything: the bundled model reports its
        window only once running, so an estimate falls back to its configured size."""
        try:
            catalog_default = (await asyncio.to_thread(self.models.default)).id
        except ModelUnavailable:
            catalog_default = None
        chosen = model or catalog_default
        if chosen == BUNDLED_ID or (
            self.models.bundled is not None and chosen == self.models.bundled.model_id
        ):
            return self.models.estimate_endpoint()
        try:
            return await self.models.resolve(chosen, api_base)
        except ModelUnavailable:
            from ...providers import llm

            name = chosen or "unknown"
            known = await asyncio.to_thread(llm.known_window, name)
            return Endpoint(
                model=name, label=self.models.display_name(name),
                window=known or llm.FALLBACK_WINDOW, max_output=4096,
                window_estimated=known is None, choice=name,
            )

    async def sees_images(self, model: str | None = None) -> bool:
        """Whether `model` (the default when None) takes images, asked before a message with
        images is sent so the user can choose what to do."""
        endpoint = await self._endpoint_for_estimate(model, None)
        return await asyncio.to_thread(llm_supports_vision, endpoint.model)

    async def model_endpoint(self, model: str | None = None) -> Endpoint:
        """How `model` (the default when None) would be reached, without starting anything:
        its display name, its window and whether that window is estimated (the /context
        dialog says so). Never raises for an unknown model."""
        return await self._endpoint_for_estimate(model, None)

    # --- prompt layers -----------------------------------------------------------------

    def _system_prompt(self, chat_instructions: str = "") -> str:
        """L0: identity, the global instructions, then the chat's own."""
        return join_instructions(IDENTITY, self.config.global_instructions, chat_instructions)

    async def _session_prompt(self, session_id: str) -> str:
        return self._system_prompt((await self.settings.current(session_id)).instructions)

    def _set_global_instructions(self, text: str) -> None:
        self.config.global_instructions = text

    async def _request_parameters(self, model: str, settings: SessionSettings) -> dict[str, Any]:
        """The chat's parameters as completion arguments, only those `model` takes
        (`max_tokens` included when set)."""
        params = settings.parameters
        if not params.as_dict():
            return {}
        from ...providers import llm

        out = await asyncio.to_thread(
            functools.partial(
                llm.request_parameters,
                model,
                temperature=params.temperature,
                top_p=params.top_p,
                reasoning_effort=params.reasoning_effort,
                thinking_budget=params.thinking_budget,
            )
        )
        if params.max_tokens is not None:
            caps = await asyncio.to_thread(llm.model_capabilities, model)
            if caps.max_tokens:
                out["max_tokens"] = params.max_tokens
        return out

    def _situation(self) -> str:
        folder = self.config.workspace
        if folder is None:
            return ""
        where = Path(folder).expanduser()
        if self._instructions is None or self._instructions.path.parent != where:
            self._instructions = WorkspaceInstructions(where)
        found = self._instructions.read()
        if not found.present:
            return ""
        return f"Workspace: {folder}\n\nInstructions from AGENTS.md:\n{found.text}"

    async def _summarizer_for(self, session_id: str, endpoint: Endpoint) -> AsyncSummarizer | None:
        """The model summarizer the `summarizer` setting names (None: the engine's offline
        one). A failed or empty model reply falls back to the offline summary. With
        `release_store` its request is awaited with the store let go of, like the reply's."""
        choice = self.config.summarizer.strip()
        if not choice:
            return None
        target = endpoint
        if choice != "session":
            try:
                target = await self.models.resolve(choice, None)
            except ModelUnavailable:
                log.warning("summarizer model %s is not available; summarizing offline", choice)
                return None

        async def complete(messages: list[dict[str, Any]]) -> str:
            # a summary is a request like any other: it waits its turn at the server
            async with self.queue.slot(session_id, target.api_base, target.model):
                result = await self.provider.stream_turn(provider_stream.TurnRequest(
                    model=target.model, messages=messages, api_base=target.api_base,
                    api_key=target.api_key, max_tokens=min(2048, target.max_output),
                    session_id=session_id, phase="summary",
                    lineage=f"{session_id}:summary",
                ))
            if result.error is not None:
                raise RuntimeError(result.error.message)
            return result.text

        summarizer = ModelSummarizer(complete, self.engine.offline_summarizer())
        release = self.config.release_store
        if release is None:
            return summarizer
        return StoreFreeSummarizer(summarizer, self.store, release, session_id)

    def _recaller(self, session_id: str) -> Callable[[str, int], Awaitable[str]]:
        """`recall` for one session: searches what its HEAD's request no longer shows."""

        async def search(query: str, limit: int) -> str:
            result = await self.engine.recall(session_id, query, now=self.clock.now(),
                                              limit=limit)
            return result.text()

        return search

    def knowledge(self) -> KnowledgeService:
        """The knowledge bases (made on first use; the embedder loads on first search)."""
        if self._knowledge is None:
            from ..retrieval.knowledge import KnowledgeService

            self._knowledge = KnowledgeService(self.store)
        return self._knowledge

    async def refresh_knowledge(self, session_id: str) -> list[str]:
        """Which knowledge bases the chat uses, read before its tools are listed."""
        names = await self.knowledge().for_session(session_id)
        self._knowledge_of[session_id] = names
        return names

    def _knowledge_searcher(self, session_id: str) -> Callable[[str, int], Awaitable[str]]:
        async def search(query: str, limit: int) -> str:
            names = self._knowledge_of.get(session_id, [])
            from ..retrieval.knowledge import cited

            hits = await self.knowledge().search(names, query, limit=limit)
            return cited(hits, query)

        return search

    def _tools_for_model(self, endpoint: Endpoint) -> bool:
        # A 135M model cannot use tools, and a downloaded one only when its template renders
        # them; offering them otherwise only confuses it.
        return self.models.supports_tools(endpoint)

    def _tools(self, session_id: str, endpoint: Endpoint) -> ToolBox:
        if not self._tools_for_model(endpoint):
            return ToolBox()
        box = ToolBox(todo_tools(TodoStore(self.store, session_id)))
        box.add(RecallTool(self._recaller(session_id)))
        if self._knowledge_of.get(session_id):
            box.add(SearchKnowledgeTool(self._knowledge_searcher(session_id)))
        if self.config.workspace is not None:
            for tool in file_tools(Workspace(self.config.workspace)):
                box.add(tool)
        if self.mcp is not None:
            for mcp_tool in self.mcp.tools_for(session_id, taken=box.names):
                box.add(mcp_tool)
        return box


@dataclass(frozen=True, slots=True)
class _StepDone:
    node: Node | None


@dataclass(frozen=True, slots=True)
class _StepContinue:
    assistant: Node


def _address(endpoint: Endpoint) -> str:
    """The name a reply is recorded under: the address it was asked for (`ollama/llama3.2`),
    not litellm's id, which two servers can share (`openai/qwen2.5`)."""
    return endpoint.choice or endpoint.model


def _model_meta(endpoint: Endpoint) -> dict[str, Any]:
    """A reply's model in its metadata: the address, its display name and litellm's id."""
    meta: dict[str, Any] = {"model": _address(endpoint), "model_label": endpoint.label}
    if endpoint.model != _address(endpoint):
        meta["litellm_model"] = endpoint.model
    return meta


def _appender(node: Node) -> Callable[[Repository], tuple[Node, ...]]:
    return lambda repo: repo.append_nodes([node])


def _with_details(metadata: dict[str, Any], details: Sequence[Mapping[str, Any]]
                  ) -> dict[str, Any]:
    for entry, more in zip(metadata.get("attachments") or (), details, strict=False):
        entry.update({k: more[k] for k in ("pages", "width", "height") if k in more})
    return metadata


def _ignore(_: Any) -> None:
    return None


def _json_or_raw(arguments: str) -> Any:
    try:
        return json.loads(arguments) if arguments else {}
    except json.JSONDecodeError:
        return arguments
