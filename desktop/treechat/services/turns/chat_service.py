"""Chat turns: the typed message is committed first, the context is prepared by the engine,
the reply streams into a draft, tool calls run as nodes in the graph, and the request's usage
lands in the ledger. Views follow along through `TurnEvent`s; a turn's last event carries
its `TurnChanges`. This module holds the verbs; the loop, the requests, the estimates and
the records each have a module of their own beside it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...core import dag
from ...core.clock import SYSTEM_CLOCK, Clock
from ...core.model import Node
from ...core.occupancy import Occupancy
from ...core.reply import can_continue
from ...providers.provider import Provider
from ...store.database import Store
from ..attachments import AttachmentService, PreparedFile
from ..context import ContextEngine
from ..mcp.service import McpService
from ..models.catalog import Endpoint, ModelCatalog
from .agent_loop import AgentLoop
from .chat_settings import ChatSettingsService
from .completion import LastEvent, delivered
from .config import ChatConfig
from .endpoints import Endpoints
from .estimates import Estimates
from .events import EventSink, TurnError, TurnFailed
from .message_fit import MessageFit
from .request import RequestBuilder
from .session_tools import SessionTools
from .sessions import SessionService, SessionView, new_id
from .spending import SpendingService
from .step import ReplyStep, StepParts
from .summarizers import Summarizers
from .tool_runs import ToolRuns
from .turn_queue import TurnQueue
from .turn_records import CostEstimate
from .user_message import Attachment, MessageCommit, UserMessages

if TYPE_CHECKING:  # numpy, usearch and the embedder load on first use, off start-up
    from ..retrieval.knowledge import KnowledgeService

# The verbs' argument types and the service's config, importable with the service.
__all__ = ["Attachment", "ChatConfig", "ChatService", "TurnStart"]

log = logging.getLogger(__name__)

TurnStart = Callable[[], Awaitable[tuple[str | None, Node | None]]]
"""What a turn starts from, written when called: (the node the reply hangs under, the user
message just committed or None)."""


@dataclass
class _Running:
    task: asyncio.Task[Any]
    stopped: bool = False


class ChatService:
    """Runs turns for sessions; at most one turn per session at a time. Its collaborators
    (sessions, settings, spending, attachments, the provider, the queue) are built by the
    composition root and handed in."""

    def __init__(
        self,
        store: Store,
        engine: ContextEngine,
        models: ModelCatalog,
        *,
        sessions: SessionService,
        settings: ChatSettingsService,
        spending: SpendingService,
        attachments: AttachmentService,
        provider: Provider,
        queue: TurnQueue,
        config: ChatConfig | None = None,
        clock: Clock = SYSTEM_CLOCK,
        make_id: Callable[[], str] = new_id,
        mcp: McpService | None = None,
    ) -> None:
        self.store = store
        # Requests wait their turn per server (one at a time to a local one); the chat list
        # shows who is queued.
        self.queue = queue
        self.mcp = mcp  # MCP servers' tools join the built-in ones when given
        self.provider = provider
        self.engine = engine
        self.models = models
        self.config = config or ChatConfig()
        self.clock = clock
        self.make_id = make_id
        self.sessions = sessions
        self.settings = settings
        self.spending = spending  # cost per reply and per chat, usage by day
        # Files in messages: stored before the request, rendered by the engine from the store.
        self.attachments = attachments
        self._running: dict[str, _Running] = {}
        self._claimed: set[str] = set()  # sessions whose turn is being set up
        # The turn engine's own parts, each a module beside this one.
        endpoints = Endpoints(models)
        requests = RequestBuilder(self.config, settings)
        self.tools = SessionTools(store, engine, self.config, endpoints, clock, mcp)
        self.estimates = Estimates(store, engine, endpoints, sessions, settings, requests,
                                   self.tools, clock)
        self.messages = UserMessages(store, sessions, attachments, clock=clock,
                                     make_id=make_id)
        self._endpoints = endpoints
        self._requests = requests
        step = ReplyStep(StepParts(
            store=store, engine=engine, provider=provider, queue=queue, config=self.config,
            settings=settings, endpoints=endpoints, requests=requests,
            summarizers=Summarizers(store, engine, models, provider, queue, self.config),
            estimates=self.estimates,
            tool_runs=ToolRuns(store, clock=clock, make_id=make_id),
            clock=clock, make_id=make_id,
        ))
        self._loop = AgentLoop(store, sessions, endpoints, self.tools, step, self.config)

    # --- the verbs ---------------------------------------------------------------------

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
    ) -> MessageCommit:
        """What commits `text` (with its staged attaches and files) under HEAD when called,
        the files prepared now: a file that cannot be sent raises before anything is written."""
        return await self.messages.writer(session_id, text, attachments, files)

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

    async def fan_out(
        self,
        session_id: str,
        before: TurnStart,
        runs: Sequence[tuple[str, EventSink]],
    ) -> tuple[Node | None, ...]:
        """One turn per (model, sink) from what `before` writes, all at once under one claim
        of the session: the replies are siblings, each request waits its turn at its own
        server, and `stop` stops them all (each keeps what streamed)."""
        if self.is_running(session_id):
            return tuple(self._busy(session_id, sink) for _, sink in runs)

        async def every(parent: str | None, user: Node | None) -> tuple[Node | None, ...]:
            # Each sibling's changes stay as the loop leaves them (no session row): the
            # replies move HEAD in turn and the caller settles it once all are written, so
            # no one sibling's account is the session's, and a view reads it at the end.
            tasks = [asyncio.ensure_future(self._loop.run(session_id, parent, user, m, None, s))
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

    def stop(self, session_id: str) -> None:
        """Stop the running turn: the HTTP stream closes, the text so far is kept."""
        running = self._running.get(session_id)
        if running is not None:
            running.stopped = True
            running.task.cancel()

    async def compact(self, session_id: str, *, model: str | None = None) -> Occupancy:
        """Compact the session's context now (the `/compact` command)."""
        view = await self.sessions.view(session_id)
        if view.head is None:
            return await self.occupancy(session_id, model=model)
        endpoint = await self._endpoints.for_estimate(model or view.session.model or None, None)
        await self.tools.load_chat(session_id)
        prep = await self.engine.prepare(
            session_id,
            model=endpoint.model,
            window=endpoint.window,
            head=view.head,
            tools=self.tools.for_session(session_id, endpoint).specs(),
            system_prompt=await self._requests.session_prompt(session_id),
            situation=self._requests.situation(),
            now=self.clock.now(),
            force_compact=True,
        )
        if not prep.compacted:  # nothing changed: the record as it was, measurement and all
            return await self.occupancy(session_id, model=model, view=view)
        return prep.occupancy

    async def close(self) -> None:
        """Stop every turn (keeping what streamed) and the bundled model."""
        for session_id in list(self._running):
            self.stop(session_id)
        tasks = [r.task for r in self._running.values()]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await self.models.close()

    # --- before sending: estimates (estimates.py) --------------------------------------

    async def occupancy(
        self, session_id: str, *, model: str | None = None, api_base: str | None = None,
        view: SessionView | None = None,
    ) -> Occupancy:
        """What the next request would carry; `view` is the session as the caller shows it
        (read from the store when not given)."""
        return await self.estimates.occupancy(session_id, model=model, api_base=api_base,
                                              view=view)

    async def message_fit(
        self, session_id: str | None, text: str, *, model: str | None = None
    ) -> MessageFit:
        """How `text` would fit as the next message of `session_id` (None: a new chat)."""
        return await self.estimates.message_fit(session_id, text, model=model)

    async def cut_to_fit(self, text: str, fit: MessageFit) -> str:
        """`text` cut to the room `fit` found (the start and the end kept, the cut marked)."""
        return await self.estimates.cut_to_fit(text, fit)

    async def capabilities(self, model: str | None = None, session_id: str | None = None) -> Any:
        """Which parameters `model` takes (`providers.llm.ModelCapabilities`)."""
        return await self.estimates.capabilities(model, session_id)

    async def estimate_next_cost(
        self, session_id: str, draft: str = "", *, model: str | None = None,
        api_base: str | None = None, view: SessionView | None = None,
    ) -> CostEstimate:
        """What the next request would cost if sent now with `draft` typed; `view` is the
        session as the caller shows it (read from the store when not given)."""
        return await self.estimates.next_cost(session_id, draft, model=model,
                                              api_base=api_base, view=view)

    async def sees_images(self, model: str | None = None) -> bool:
        """Whether `model` (the default when None) takes images."""
        return await self.estimates.sees_images(model)

    async def model_endpoint(self, model: str | None = None) -> Endpoint:
        """How `model` (the default when None) would be reached, without starting anything."""
        return await self.estimates.model_endpoint(model)

    # --- knowledge (session_tools.py) --------------------------------------------------

    def knowledge(self) -> KnowledgeService:
        """The knowledge bases (made on first use; the embedder loads on first search)."""
        return self.tools.knowledge()

    async def refresh_knowledge(self, session_id: str) -> list[str]:
        """Which knowledge bases the chat uses, read before its tools are listed."""
        return await self.tools.refresh_knowledge(session_id)

    # --- one turn at a time per session ------------------------------------------------

    async def _guarded(
        self,
        session_id: str,
        before: TurnStart,
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
            session_id, before, lambda parent, user: self._delivered(
                sink, lambda last: self._loop.run(
                    session_id, parent, user, model, api_base, last, continuing)))
        return reply

    def _delivered(
        self, sink: EventSink, run: Callable[[EventSink], Awaitable[Node | None]]
    ) -> Awaitable[Node | None]:
        """`run` with its events going to `sink`, the last one carrying its changes read
        back whole (the session's row, the usage rows), so a view redraws from it alone."""
        last = LastEvent(sink)
        return delivered(run(last), last, self.store)

    async def _claimed_run(
        self, session_id: str,
        before: TurnStart,
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


def _ignore(_: Any) -> None:
    return None
