"""One streamed model call: typed events out, the provider's usage measured, a context overflow
retried once with the history halved, and the HTTP stream closed when the task is cancelled.

The call's vocabulary (`TurnRequest`, the events, `TurnResult`) lives in `stream_types` and is
exported from here too, as the face callers use; cache shaping, usage and the provider thread
have modules of their own."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from ..core.budget import leading_system
from ..core.unicode_text import storable
from . import llm, sse_guard
from .cache_diagnostics import CacheDiagnostics
from .cache_shaping import shape_messages, shape_tools
from .deadline import (
    MAX_REPLY_CHARS,
    StreamDeadline,
    between_chunks_timeout,
    first_byte_timeout,
    long_line_failure,
    no_answer_failure,
    stalled_failure,
    too_long_failure,
    total_timeout,
)
from .errors import ErrorKind, ProviderError, ProviderFailure, classify
from .keys import PLACEHOLDER_API_KEY, remember_secret
from .provider_loop import provider_loop, shutdown_provider_loop
from .stream_types import (
    Finished,
    OverflowRetry,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    TurnRequest,
    TurnResult,
    Usage,
)
from .stream_usage import forget_streamed_chunks, provider_reported_usage, usage_from

__all__ = [
    "EventHandler",
    "Finished",
    "OverflowRetry",
    "ReasoningDelta",
    "Shrink",
    "StreamEvent",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "TurnRequest",
    "TurnResult",
    "Usage",
    "default_shrink",
    "shutdown_provider_loop",
    "stream_events",
    "stream_turn",
]

log = logging.getLogger(__name__)

Shrink = Callable[[list[dict[str, Any]], int], Sequence[dict[str, Any]]]
"""`shrink(messages, target_tokens)`: the same request with its history (everything after the
leading system messages) cut to fit `target_tokens`; used for the one overflow retry."""


# --- overflow retry -------------------------------------------------------------------


def _history_tokens(model: str, messages: Sequence[dict[str, Any]]) -> list[int]:
    start = leading_system(messages)
    return [llm.count_message_tokens(model, [m]) for m in messages[start:]]


def default_shrink(model: str) -> Shrink:
    """Keep the leading system messages and the newest history that fits, never starting
    on a tool result whose call was dropped."""

    def shrink(messages: list[dict[str, Any]], target: int) -> list[dict[str, Any]]:
        start = leading_system(messages)
        sizes = _history_tokens(model, messages)
        used = 0
        first = len(messages)
        for i in range(len(messages) - 1, start - 1, -1):
            size = sizes[i - start]
            if used + size > target and first < len(messages):
                break
            used += size
            first = i
        while first < len(messages) and messages[first].get("role") == "tool":
            first += 1
        if first >= len(messages):
            first = len(messages) - 1
        return messages[:start] + messages[first:]

    return shrink


# --- the call -------------------------------------------------------------------------




async def _close(response: Any) -> None:
    """Close the HTTP stream, even while the task is being cancelled."""
    closer = getattr(response, "aclose", None)
    if closer is None:
        return
    with contextlib.suppress(Exception):
        await asyncio.shield(closer())


def _call_kwargs(
    request: TurnRequest, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        # Retrying is ours to decide (one overflow retry, nothing else): no hidden retries.
        "max_retries": 0,
        "num_retries": 0,
    }
    if tools:
        kwargs["tools"] = tools
        if request.tool_choice is not None:
            kwargs["tool_choice"] = request.tool_choice
    if request.api_base:
        kwargs["api_base"] = request.api_base
    if request.api_key:
        kwargs["api_key"] = request.api_key
    elif request.api_base:
        # Not a placeholder and not litellm's fallback to OPENAI_API_KEY: with no key the
        # request carries no Authorization at all (the client drops the header). litellm
        # still wants some value to build the request.
        kwargs["api_key"] = PLACEHOLDER_API_KEY
    if request.headers:
        kwargs["extra_headers"] = dict(request.headers)
    if request.max_tokens is not None:
        kwargs["max_tokens"] = request.max_tokens
    if request.temperature is not None:
        kwargs["temperature"] = request.temperature
    if request.timeout is not None:
        kwargs["timeout"] = request.timeout
    kwargs.update(request.extra)
    return kwargs


_default_diagnostics = CacheDiagnostics()



_END = object()

BATCH_SECONDS = 0.008
"""How long a streamed piece may wait on the provider thread for the pieces after it, so
they reach the caller's loop together: a quarter of a frame (the chat paints every 33 ms,
so no one sees the wait), and a fast model's pieces, a few milliseconds apart, wake the
GUI's loop a few times less often."""


def _piece(value: Any) -> str:
    """A streamed piece as text that can be stored ("" for none; a server may send a number
    or a half of a surrogate pair where text belongs)."""
    if value is None:
        return ""
    return storable(value if isinstance(value, str) else str(value))


def joined(batch: Sequence[Any]) -> list[Any]:
    """`batch` with each run of text pieces (and of reasoning pieces) made one piece."""
    out: list[Any] = []
    for item in batch:
        last = out[-1] if out else None
        if isinstance(item, TextDelta) and isinstance(last, TextDelta):
            out[-1] = TextDelta(last.text + item.text)
        elif isinstance(item, ReasoningDelta) and isinstance(last, ReasoningDelta):
            out[-1] = ReasoningDelta(last.text + item.text)
        else:
            out.append(item)
    return out


async def stream_events(
    request: TurnRequest,
    *,
    shrink: Shrink | None = None,
    diagnostics: CacheDiagnostics | None = None,
) -> AsyncIterator[StreamEvent]:
    """Stream one model call as typed events, ending with `Finished`.

    Raises `ProviderError` (kind, retry flag, message) on failure; its `partial_text` holds
    the text that arrived first. A context overflow is retried exactly once, with the
    history cut to half of what was sent, and only if nothing has streamed yet. Cancelling
    the consuming task closes the HTTP stream. The call itself runs on the provider thread;
    events are delivered on the caller's loop, at most every `BATCH_SECONDS`, the text pieces
    that arrived together joined into one.
    """
    here = asyncio.get_running_loop()
    there = provider_loop.get()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    pending: collections.deque[Any] = collections.deque()
    waking: list[asyncio.TimerHandle] = []  # the provider side's timed wake-up, if one is set
    woken = [0.0]  # when the provider side last woke the caller's loop (its loop's clock)
    seen: set[type] = set()

    def drain() -> None:
        # Everything that arrived since the last wake-up, in one pass of the caller's loop,
        # its text pieces joined: the caller handles a batch as one piece, not one a token.
        batch: list[Any] = []
        while pending:
            batch.append(pending.popleft())
        for item in joined(batch):
            queue.put_nowait(item)

    def wake() -> None:
        for timer in waking:
            timer.cancel()
        waking.clear()
        woken[0] = there.time()
        with contextlib.suppress(RuntimeError):  # the caller's loop already closed
            here.call_soon_threadsafe(drain)

    def deliver(item: Any, *, now: bool = False) -> None:
        # The first event of each kind (the first token) and the end go at once; the rest
        # wait up to `BATCH_SECONDS` for the ones after them, so the caller's loop (the
        # GUI's) is woken at most every few milliseconds, not once a chunk. A stream read from
        # a full buffer never lets this loop run a timer, so the clock is looked at here too.
        pending.append(item)
        if now or type(item) not in seen or there.time() - woken[0] >= BATCH_SECONDS:
            seen.add(type(item))
            wake()
        elif not waking:
            waking.append(there.call_at(woken[0] + BATCH_SECONDS, wake))

    async def pump() -> None:
        try:
            async for event in _stream_on_this_loop(request, shrink, diagnostics):
                deliver(event, now=isinstance(event, Finished))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            deliver(exc, now=True)
        else:
            deliver(_END, now=True)

    work = asyncio.run_coroutine_threadsafe(pump(), there)
    try:
        while True:
            item = await queue.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        if not work.done():
            work.cancel()
            # Wait until the provider side has closed the HTTP stream.
            with contextlib.suppress(BaseException):
                await asyncio.shield(asyncio.wrap_future(work))


async def _stream_on_this_loop(
    request: TurnRequest, shrink: Shrink | None, diagnostics: CacheDiagnostics | None
) -> AsyncIterator[StreamEvent]:
    litellm = await llm.ensure_loaded()
    remember_secret(request.api_key)
    diag = diagnostics if diagnostics is not None else _default_diagnostics
    messages = shape_messages(request.model, request.messages)
    tools = shape_tools(request.model, request.tools)
    attempt = 0
    while True:
        attempt += 1
        if diag.enabled:
            await asyncio.to_thread(
                functools.partial(
                    diag.observe,
                    session_id=request.session_id,
                    phase=request.phase,
                    model=request.model,
                    messages=messages,
                    tools=tools,
                    count=functools.partial(llm.count_text_tokens, request.model),
                    lineage=request.lineage,
                )
            )
        text_parts: list[str] = []
        streamed = False
        calls: dict[int, dict[str, str]] = {}
        finish_reason: str | None = None
        raw_usage: Any = None
        response: Any = None
        keyless: Any = None
        failure: ProviderFailure | None = None
        wait = first_byte_timeout(request.connect_timeout, request.api_base)
        deadline = StreamDeadline(
            wait,
            # a connection's own timeout is its word on how slow the server may be: the
            # silence between chunks gets it too
            idle=between_chunks_timeout(request.idle_timeout or request.connect_timeout,
                                        request.api_base),
            total=total_timeout(request.total_timeout),
        )
        unreadable = sse_guard.begin()
        received = 0
        try:
            kwargs = _call_kwargs(request, messages, tools)
            if request.keyless:
                keyless = llm.keyless_client(request.timeout)
                kwargs["client"] = keyless
            response = await litellm.acompletion(**kwargs)
            async for chunk in response:
                deadline.arrived()
                forget_streamed_chunks(response)
                usage_obj = getattr(chunk, "usage", None)
                if usage_obj is not None:
                    raw_usage = usage_obj
                choices = getattr(chunk, "choices", None) or []
                if not choices:
                    continue
                choice = choices[0]
                if getattr(choice, "finish_reason", None):
                    finish_reason = str(choice.finish_reason)
                delta = getattr(choice, "delta", None)
                if delta is None:
                    continue
                reasoning = _piece(getattr(delta, "reasoning_content", None))
                if reasoning:
                    streamed = True
                    yield ReasoningDelta(reasoning)
                content = _piece(getattr(delta, "content", None))
                if content:
                    streamed = True
                    text_parts.append(content)
                    yield TextDelta(content)
                received += len(content) + len(reasoning)
                if received > MAX_REPLY_CHARS:
                    failure = too_long_failure(received, request.api_base, request.model)
                    break
                for tc in getattr(delta, "tool_calls", None) or []:
                    streamed = True
                    index = int(getattr(tc, "index", 0) or 0)
                    function = getattr(tc, "function", None)
                    name = _piece(getattr(function, "name", None))
                    args = _piece(getattr(function, "arguments", None))
                    slot = calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
                    if getattr(tc, "id", None):
                        slot["id"] = str(tc.id)
                    if name:
                        slot["name"] = name
                    if args:
                        slot["arguments"] += args
                    yield ToolCallDelta(index, getattr(tc, "id", None), name or None, args)
        except asyncio.CancelledError:
            if not deadline.absorb():
                raise
            if deadline.which == "first_byte":
                failure = no_answer_failure(wait, request.api_base, request.model)
            else:
                failure = stalled_failure(
                    deadline.which, deadline.seconds, request.api_base, request.model
                )
        except ProviderError:
            raise
        except Exception as exc:
            failure = classify(exc)
        finally:
            deadline.done()
            if unreadable.too_long:  # whatever litellm made of the error it raised
                failure = long_line_failure(sse_guard.MAX_LINE_CHARS, request.api_base,
                                            request.model)
            if response is not None:
                await _close(response)
            if keyless is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(keyless.close())
                keyless = None
        if failure is not None:
            if failure.kind is ErrorKind.OVERFLOW and attempt == 1 and not streamed:
                counted = await asyncio.to_thread(_history_tokens, request.model, messages)
                sent = sum(counted)
                target = sent // 2
                cut = shrink or default_shrink(request.model)
                shrunk = list(await asyncio.to_thread(cut, [dict(m) for m in messages], target))
                if shrunk and len(shrunk) <= len(messages) and shrunk != messages:
                    yield OverflowRetry(sent, target, len(messages), len(shrunk), failure)
                    messages = shape_messages(request.model, shrunk)
                    continue
            raise ProviderError(failure, partial_text="".join(text_parts)) from None
        complete = tuple(
            ToolCall(i, c["id"] or f"call_{i}", c["name"], c["arguments"])
            for i, c in sorted(calls.items())
        )
        for call in complete:
            yield call
        usage = usage_from(raw_usage) if provider_reported_usage(response) else None
        if unreadable.count:
            log.warning(
                "%s: %d line(s) of the stream could not be read and were dropped (first: %r)",
                request.model,
                unreadable.count,
                unreadable.samples[0],
            )
        yield Finished(
            text="".join(text_parts),
            tool_calls=complete,
            usage=usage,
            finish_reason=finish_reason,
            attempts=attempt,
            messages_sent=tuple(messages),
            unreadable_lines=unreadable.count,
        )
        return


EventHandler = Callable[[StreamEvent], Awaitable[None] | None]


async def stream_turn(
    request: TurnRequest,
    *,
    on_event: EventHandler | None = None,
    shrink: Shrink | None = None,
    diagnostics: CacheDiagnostics | None = None,
) -> TurnResult:
    """Run one model call to the end, handing each event to `on_event` (sync or async) as it
    arrives. Provider failures come back in `TurnResult.error` with the partial text;
    cancelling the task raises `CancelledError` as usual, after the stream is closed."""
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    attempts = 1
    sent: tuple[dict[str, Any], ...] = tuple(dict(m) for m in request.messages)
    try:
        async for event in stream_events(request, shrink=shrink, diagnostics=diagnostics):
            if isinstance(event, TextDelta):
                text.append(event.text)
            elif isinstance(event, ReasoningDelta):
                reasoning.append(event.text)
            elif isinstance(event, ToolCall):
                calls.append(event)
            elif isinstance(event, OverflowRetry):
                attempts = 2
            if on_event is not None:
                outcome = on_event(event)
                if inspect.isawaitable(outcome):
                    await outcome
            if isinstance(event, Finished):
                cost = None
                if event.usage is not None:
                    u = event.usage
                    cost = llm.request_cost(
                        request.model, u.prompt_tokens, u.output_tokens, u.cache_read, u.cache_write
                    )
                return TurnResult(
                    model=request.model,
                    text=event.text,
                    tool_calls=event.tool_calls,
                    usage=event.usage,
                    cost=cost,
                    finish_reason=event.finish_reason,
                    attempts=event.attempts,
                    messages_sent=event.messages_sent,
                    reasoning="".join(reasoning),
                    unreadable_lines=event.unreadable_lines,
                )
    except ProviderError as exc:
        return TurnResult(
            model=request.model,
            text="".join(text),
            tool_calls=tuple(calls),
            usage=None,
            cost=None,
            finish_reason=None,
            attempts=attempts,
            messages_sent=sent,
            error=exc.failure,
            reasoning="".join(reasoning),
        )
    raise RuntimeError("the stream ended without a Finished event")
