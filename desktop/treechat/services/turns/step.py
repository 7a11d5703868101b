"""One request of a turn, step by step: prepare the context and the request, stream the
reply into a draft, then keep what came back (a stopped reply, a failure with what streamed,
or the finished reply and the tool calls it asked for), recording the request's usage."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...core.budget import shrink_history
from ...core.clock import Clock
from ...core.model import Node
from ...core.reply import with_reasoning
from ...providers import stream as provider_stream
from ...providers.errors import ProviderFailure
from ...providers.provider import Provider
from ...store import usage as ledger
from ...store.database import Store
from ..context import ContextEngine, TurnPrep
from ..store_life.drafts import DraftWriter, store_released
from .chat_settings import ChatSettingsService
from .config import ChatConfig
from .endpoints import Endpoints, address
from .estimates import Estimates
from .events import (
    NodeAdded,
    OccupancyChanged,
    ReasoningDelta,
    TextDelta,
    ToolCallStarted,
    TurnFailed,
    TurnFinished,
)
from .replies import interrupted_node, reply_node
from .request import BuiltRequest, RequestBuilder
from .stopped_usage import StoppedRequest, record_stopped
from .summarizers import Summarizers
from .tool_runs import ToolRuns
from .turn import Turn
from .turn_queue import TurnQueue
from .turn_records import measured_from, reply_usage, turn_error, usage_record

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StepDone:
    """The turn ends here with `node` (None: it failed before anything was kept)."""

    node: Node | None


@dataclass(frozen=True, slots=True)
class StepContinue:
    """The reply called tools: the next request hangs under `assistant`."""

    assistant: Node


@dataclass(frozen=True, slots=True)
class _Request:
    prep: TurnPrep
    built: BuiltRequest


@dataclass(frozen=True, slots=True)
class StepParts:
    """What a step works with (the chat service's own, handed down)."""

    store: Store
    engine: ContextEngine
    provider: Provider
    queue: TurnQueue
    config: ChatConfig
    settings: ChatSettingsService
    endpoints: Endpoints
    requests: RequestBuilder
    summarizers: Summarizers
    estimates: Estimates
    tool_runs: ToolRuns
    clock: Clock
    make_id: Callable[[], str]


class ReplyStep:
    def __init__(self, parts: StepParts) -> None:
        self.p = parts

    async def run(
        self, turn: Turn, head: str | None, continuing: str | None = None
    ) -> StepDone | StepContinue:
        request = await self._prepare(turn, head, continuing)
        draft = await self._open_draft(turn, head)
        reasoning: list[str] = []
        try:
            result = await self._stream(turn, request, draft, reasoning)
        except asyncio.CancelledError:
            return await self._stopped(turn, head, request, draft, "".join(reasoning))
        if result.error is not None:
            return await self._failed(turn, head, request, draft, result, result.error)
        reply = await self._keep_reply(turn, head, request, draft, result)
        if not result.tool_calls:
            return await self._finished(turn, reply, request)
        turn.sink(NodeAdded(turn.session_id, reply))
        if not await self.p.tool_runs.run(turn, reply, result.tool_calls):
            return await self._finished(turn, reply, request)
        turn.sink(OccupancyChanged(
            turn.session_id,
            await self.p.estimates.occupancy_after(turn.session_id, turn.endpoint, reply.id),
        ))
        return StepContinue(reply)

    async def _prepare(self, turn: Turn, head: str | None, continuing: str | None) -> _Request:
        """The context for `head` and the request that carries it; the ring is told what
        the window now holds."""
        p, session_id, endpoint = self.p, turn.session_id, turn.endpoint
        measured = measured_from(await p.store.run(  # the tokenizer's drift: this model's
            lambda r: ledger.last_measurement(r, session_id, model=address(endpoint))))
        # Read before every request: a change of instructions or parameters applies from the
        # next request on, and the reply records the revision it ran under.
        settings = await p.settings.in_effect(session_id)  # with its project's instructions
        sent_params = await p.requests.parameters(endpoint.model, settings)
        prep = await p.engine.prepare(
            session_id,
            model=endpoint.model,
            window=endpoint.window,
            head=head,
            tools=turn.toolbox.specs(),
            system_prompt=p.requests.system_prompt(settings.instructions),
            situation=p.requests.situation(),
            now=p.clock.now(),
            measured=measured,
            # The bundled model cannot call `recall`: quote what it would find instead.
            recall_fallback=p.endpoints.is_bundled(endpoint),
            summarizer=await p.summarizers.for_turn(session_id, endpoint),
        )
        # The request is what the window now holds: the ring and the Context tab show it
        # for as long as the reply takes, not the figure of the head before it.
        turn.sink(OccupancyChanged(session_id, prep.occupancy))
        built = p.requests.build(session_id, endpoint, prep, settings, sent_params, continuing)
        if p.config.request_ready is not None:
            p.config.request_ready()
        return _Request(prep, built)

    async def _open_draft(self, turn: Turn, head: str | None) -> DraftWriter:
        draft = DraftWriter(
            self.p.store,
            draft_id=self.p.make_id(),
            session_id=turn.session_id,
            parent_id=head,
            model=turn.endpoint.model,
            interval=self.p.config.draft_interval,
            clock=self.p.clock,
        )
        await draft.start()
        return draft

    async def _stream(
        self, turn: Turn, request: _Request, draft: DraftWriter, reasoning: list[str]
    ) -> provider_stream.TurnResult:
        """The reply streamed into `draft` and out as events, once the server's queue lets
        the request through."""
        session_id, sink = turn.session_id, turn.sink

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

        endpoint = turn.endpoint
        async with self._network_wait(draft), self.p.queue.slot(
            session_id, endpoint.api_base, endpoint.model
        ):
            result = await self.p.provider.stream_turn(
                request.built.request,
                on_event=on_stream,
                shrink=self._shrink,
            )
            if result.error is None:  # a reply recovered from its draft is not cut short
                draft.mark_complete(result.finish_reason)
        return result

    async def _stopped(
        self, turn: Turn, head: str | None, request: _Request, draft: DraftWriter,
        reasoning: str,
    ) -> StepDone:
        """Stopped while streaming: what came is kept, and the request counted (a hosted
        provider bills it all the same)."""
        p, endpoint = self.p, turn.endpoint
        node = await self._keep_interrupted(
            turn, head, draft, "stopped", extra=with_reasoning(request.built.run_meta, reasoning)
        )
        stopped = StoppedRequest(
            p.make_id(), turn.session_id, request.prep.commit_id, address(endpoint),
            endpoint.model, request.prep.estimated_prompt_tokens, p.clock.now())
        count = p.config.count_stopped_reply or p.engine.counter.count
        if await record_stopped(p.store, count, node, stopped):
            turn.log.recorded(stopped.record_id)
        return await self._finished(turn, node, request)

    async def _failed(
        self, turn: Turn, head: str | None, request: _Request, draft: DraftWriter,
        result: provider_stream.TurnResult, error: ProviderFailure,
    ) -> StepDone:
        """The provider failed: text that streamed is kept as an interrupted reply, the
        draft dropped otherwise; the request is recorded either way."""
        log.warning(
            "request to %s failed (%s): %s", turn.endpoint.model, error.kind.value,
            error.detail or error.message,
        )
        partial = None
        if result.text:
            partial = await self._keep_interrupted(
                turn, head, draft, error.kind.value,
                extra=with_reasoning(request.built.run_meta, result.reasoning),
            )
        else:
            await draft.settle()
            await self.p.store.run(lambda r: r.delete_draft(draft.draft_id))
        await self._record(turn, request, result, partial.id if partial is not None else head)
        turn.sink(TurnFailed(turn.session_id, turn_error(error), partial, turn.changes()))
        return StepDone(partial)

    async def _keep_reply(
        self, turn: Turn, head: str | None, request: _Request, draft: DraftWriter,
        result: provider_stream.TurnResult,
    ) -> Node:
        """The finished reply promoted from its draft to a node, HEAD moved to it."""
        p, session_id = self.p, turn.session_id
        usage = reply_usage(result)
        now = p.clock.now()
        assistant = reply_node(p.make_id(), session_id, head, turn.endpoint, result, usage,
                               request.built.run_meta, now)
        await draft.settle()
        (stored,) = await p.store.run(
            lambda r: r.finish_draft(draft.draft_id, [assistant], session_id, assistant.id, now)
        )
        turn.log.wrote(stored)
        await self._record(turn, request, result, stored.id)
        return stored

    async def _keep_interrupted(
        self, turn: Turn, head: str | None, draft: DraftWriter, reason: str,
        extra: dict[str, Any],
    ) -> Node:
        p, session_id = self.p, turn.session_id
        now = p.clock.now()
        node = interrupted_node(p.make_id(), session_id, head, turn.endpoint, draft.text,
                                reason, extra, now)
        await draft.settle()
        (stored,) = await asyncio.shield(
            p.store.run(
                lambda r: r.finish_draft(draft.draft_id, [node], session_id, node.id, now)
            )
        )
        turn.log.wrote(stored)
        return stored

    async def _record(
        self, turn: Turn, request: _Request, result: provider_stream.TurnResult,
        measured_head: str | None,
    ) -> None:
        # The measurement belongs to the head the turn leaves behind, so the ring reads
        # "measured" until the graph moves again (spec §7).
        row = usage_record(
            self.p.make_id(),
            turn.session_id,
            measured_head,
            request.prep.commit_id,
            address(turn.endpoint),
            result,
            request.prep.estimated_prompt_tokens,
            self.p.clock.now(),
        )
        await self.p.store.run(lambda r: ledger.record_usage(r, row))
        turn.log.recorded(row.id)

    async def _finished(self, turn: Turn, node: Node, request: _Request) -> StepDone:
        occupancy = (
            await self.p.estimates.occupancy_after(turn.session_id, turn.endpoint, node.id)
            if self.p.config.occupancy_after_reply
            else request.prep.occupancy
        )
        turn.sink(TurnFinished(turn.session_id, node, occupancy, turn.changes()))
        return StepDone(node)

    def _network_wait(self, draft: DraftWriter) -> contextlib.AbstractAsyncContextManager[None]:
        """Around the provider's wait and stream: the store released when so configured."""
        release = self.p.config.release_store
        if release is None:
            return contextlib.nullcontext()
        return store_released(draft, release)

    def _shrink(self, messages: list[dict[str, Any]], target: int) -> list[dict[str, Any]]:
        return list(shrink_history(messages, target, self.p.engine.counter))
