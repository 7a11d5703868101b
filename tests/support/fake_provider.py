"""A designed double of the `Provider` protocol, for services tests that do not need the wire.

Modelled on httpx's `MockTransport`: give it a handler that turns each `TurnRequest` into a
`FakeReply` (or queue replies), and it streams the reply's text as events, reports usage the
way a provider does (prompt tokens counted from the request with tiktoken, output tokens
from the reply), and records every request. Model lists come from a mapping of connection
id to models, or raise `ConnectionProblem` like an unreachable server. The loopback HTTP
servers stay for the wire-format tests.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.support.loopback_server import count_tokens

from treechat.providers.connections import Connection, ConnectionModel, ConnectionProblem
from treechat.providers.errors import MESSAGES, ErrorKind, ProviderFailure
from treechat.providers.stream import (
    EventHandler,
    Finished,
    Shrink,
    TextDelta,
    ToolCall,
    TurnRequest,
    TurnResult,
    Usage,
)

DEFAULT_REPLY = "A reply from the fake provider."


@dataclass(frozen=True)
class FakeReply:
    """What the fake provider does with one request: stream `text` (and `tool_calls`, each
    `{"name": ..., "arguments": {...}}`), or fail with `error` (an `ErrorKind`) and the
    provider's own words in `detail`, after streaming `text`. `usage=False` reports none."""

    text: str = DEFAULT_REPLY
    tool_calls: Sequence[Mapping[str, Any]] = ()
    error: ErrorKind | None = None
    detail: str = ""
    usage: bool = True
    pieces: int = 0  # split the text into this many events (0: one per word)


Handler = Callable[[TurnRequest], FakeReply]


@dataclass
class FakeProvider:
    """A `Provider` without a network. `handler` answers each request; without one the
    queued replies are used in order, then `FakeReply()`."""

    handler: Handler | None = None
    models: Mapping[str, Sequence[ConnectionModel]] = field(default_factory=dict)
    requests: list[TurnRequest] = field(default_factory=list)
    listed: list[tuple[str, str | None]] = field(default_factory=list)
    _queue: deque[FakeReply] = field(default_factory=deque)

    def queue(self, *replies: FakeReply) -> None:
        self._queue.extend(replies)

    def _reply_for(self, request: TurnRequest) -> FakeReply:
        if self.handler is not None:
            return self.handler(request)
        return self._queue.popleft() if self._queue else FakeReply()

    # --- the protocol ---------------------------------------------------------------

    async def stream_turn(
        self,
        request: TurnRequest,
        *,
        on_event: EventHandler | None = None,
        shrink: Shrink | None = None,
    ) -> TurnResult:
        self.requests.append(request)
        reply = self._reply_for(request)

        async def emit(event: Any) -> None:
            if on_event is not None:
                outcome = on_event(event)
                if inspect.isawaitable(outcome):
                    await outcome
            await asyncio.sleep(0)  # as a stream would, give the loop a turn

        for piece in _split(reply.text, reply.pieces):
            await emit(TextDelta(piece))
        sent = tuple(dict(m) for m in request.messages)
        if reply.error is not None:
            failure = ProviderFailure(reply.error, reply.error is not ErrorKind.AUTH,
                                      MESSAGES[reply.error], detail=reply.detail)
            return TurnResult(request.model, reply.text, (), None, None, None, 1, sent, failure)
        calls = tuple(
            ToolCall(i, f"call_{i}", str(c["name"]), json.dumps(c.get("arguments", {})))
            for i, c in enumerate(reply.tool_calls)
        )
        for call in calls:
            await emit(call)
        usage = self.usage_for(request, reply) if reply.usage else None
        finish = "tool_calls" if calls else "stop"
        await emit(Finished(reply.text, calls, usage, finish, 1, sent))
        return TurnResult(request.model, reply.text, calls, usage, None, finish, 1, sent)

    async def list_models(
        self, connection: Connection, api_key: str | None = None
    ) -> tuple[ConnectionModel, ...]:
        self.listed.append((connection.id, api_key))
        if connection.id not in self.models:
            where = connection.base_url or connection.id
            raise ConnectionProblem(f"nothing is listening on {where}")
        return tuple(self.models[connection.id])

    def count_tokens(self, model: str, messages: Sequence[Mapping[str, Any]]) -> int:
        return sum(count_tokens(_flat(m)) for m in messages)

    # --- what it measured -----------------------------------------------------------

    def usage_for(self, request: TurnRequest, reply: FakeReply) -> Usage:
        output = count_tokens(reply.text) + sum(
            count_tokens(str(c["name"]) + json.dumps(c.get("arguments", {})))
            for c in reply.tool_calls
        )
        # the whole prompt, as a provider counts it: the messages and the tool definitions
        tools = sum(count_tokens(json.dumps(t, sort_keys=True)) for t in request.tools or ())
        return Usage(prompt_tokens=self.count_tokens(request.model, request.messages) + tools,
                     output_tokens=output)


def _flat(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return f"<|{message.get('role', '')}|>{content}"
    return f"<|{message.get('role', '')}|>{json.dumps(content)}"


def _split(text: str, pieces: int) -> list[str]:
    if not text:
        return []
    if pieces <= 0:
        words = text.split(" ")
        return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)]
