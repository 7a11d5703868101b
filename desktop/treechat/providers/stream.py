"""One streamed model call: typed events out, the provider's usage measured, a context overflow
retried once with the history halved, and the HTTP stream closed when the task is cancelled."""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import copy
import functools
import inspect
import json
import logging
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.budget import leading_system
from . import llm, sse_guard
from .cache_diagnostics import CacheDiagnostics
from .deadline import (
    MAX_REPLY_CHARS,
    StreamDeadline,
    between_chunks_timeout,
    first_byte_timeout,
    no_answer_failure,
    stalled_failure,
    too_long_failure,
    total_timeout,
)
from .errors import ErrorKind, ProviderError, ProviderFailure, classify
from .keys import PLACEHOLDER_API_KEY, remember_secret

log = logging.getLogger(__name__)

Shrink = Callable[[list[dict[str, Any]], int], Sequence[dict[str, Any]]]
"""`shrink(messages, target_tokens)`: the same request with its history (everything after the
leading system messages) cut to fit `target_tokens`; used for the one overflow retry."""

SWITCH_INTERVAL = 0.001
"""GIL switch interval while the provider thread runs (CPython's default is 5 ms)."""

MAX_BREAKPOINTS = 4
"""Anthropic rejects a request with more `cache_control` blocks than this."""



# --- events ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of a tool call as it streams; `ToolCall` follows once it is complete."""

    index: int
    id: str | None
    name: str | None
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    index: int
    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> Any:
        """The arguments as JSON, or the raw string when the model wrote invalid JSON."""
        try:
            return json.loads(self.arguments) if self.arguments else {}
        except json.JSONDecodeError:
            return self.arguments


@dataclass(frozen=True, slots=True)
class Usage:
    """What the provider measured for one request. `prompt_tokens` is the total prompt,
    cached tokens included (a cached token still occupies the window; CTX-008)."""

    prompt_tokens: int
    cache_read: int = 0
    cache_write: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def uncached_prompt_tokens(self) -> int:
        return self.prompt_tokens - self.cache_read - self.cache_write


@dataclass(frozen=True, slots=True)
class OverflowRetry:
    """The provider said the prompt did not fit; the request is being sent once more with
    the history cut to `target_tokens` (half of what was sent)."""

    sent_history_tokens: int
    target_tokens: int
    messages_before: int
    messages_after: int
    failure: ProviderFailure


@dataclass(frozen=True, slots=True)
class Finished:
    """The stream ended normally. `usage` is None when the provider reported none (or an
    empty one): the caller keeps its last measurement."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage | None
    finish_reason: str | None
    attempts: int
    messages_sent: tuple[dict[str, Any], ...]
    unreadable_lines: int = 0  # stream lines that were not valid data (dropped by the parser)


StreamEvent = TextDelta | ReasoningDelta | ToolCallDelta | ToolCall | OverflowRetry | Finished


# --- request and result ---------------------------------------------------------------


@dataclass(frozen=True)
class TurnRequest:
    """One call to a model. `messages` are OpenAI-format dicts whose content blocks may carry
    `cache_control` (kept for Anthropic models only). The key is never shown in a repr."""

    model: str
    messages: Sequence[Mapping[str, Any]]
    tools: Sequence[Mapping[str, Any]] = ()
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    max_tokens: int | None = None
    temperature: float | None = None
    tool_choice: Any = None
    timeout: float | None = 600.0
    session_id: str = ""
    phase: str = "chat"
    lineage: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra headers the connection sends with every request."""
    connect_timeout: float | None = None
    """The connection's own setting: seconds allowed to connect and to receive the first
    byte (None: the default). A local server loading a model may want longer."""
    idle_timeout: float | None = None
    """Seconds the answer may fall silent between two chunks once it streams (None: the
    default for where the server is)."""
    total_timeout: float | None = None
    """Seconds one answer may take in all (None: the default, half an hour)."""

    @property
    def keyless(self) -> bool:
        """A server of our own choosing (api_base) with no key: no Authorization is sent."""
        return bool(self.api_base) and not self.api_key


@dataclass(frozen=True, slots=True)
class TurnResult:
    """The outcome of `stream_turn`. On failure `error` is set and `text`/`tool_calls` hold
    what arrived before it, so nothing streamed is lost."""

    model: str
    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage | None
    cost: llm.Cost | None
    finish_reason: str | None
    attempts: int
    messages_sent: tuple[dict[str, Any], ...]
    error: ProviderFailure | None = None
    reasoning: str = ""
    unreadable_lines: int = 0  # the reply may be missing pieces: the stream had bad lines

    @property
    def ok(self) -> bool:
        return self.error is None


# --- cache shaping --------------------------------------------------------------------


def _marks_in(message: Mapping[str, Any]) -> int:
    content = message.get("content")
    count = 1 if "cache_control" in message else 0
    if isinstance(content, list):
        count += sum(1 for b in content if isinstance(b, dict) and "cache_control" in b)
    return count


def _strip_message(message: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in message.items() if k != "cache_control"}
    content = out.get("content")
    if isinstance(content, list):
        blocks = [
            {k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, dict) else b
            for b in content
        ]
        # Blocks existed only to carry the mark: send plain text, as the provider expects
        # (CTX-005: do not reshape non-Anthropic requests into content blocks).
        if (
            len(blocks) == 1
            and isinstance(blocks[0], dict)
            and blocks[0].get("type") == "text"
            and set(blocks[0]) <= {"type", "text"}
        ):
            out["content"] = blocks[0].get("text", "")
        else:
            out["content"] = blocks
    return out


def _limit_marks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """At most `MAX_BREAKPOINTS` marks: the earliest ones (stable prefix) and the last one
    (rolling), dropping the ones in between."""
    positions: list[tuple[int, int | None]] = []
    for i, message in enumerate(messages):
        if "cache_control" in message:
            positions.append((i, None))
        content = message.get("content")
        if isinstance(content, list):
            positions.extend(
                (i, j)
                for j, b in enumerate(content)
                if isinstance(b, dict) and "cache_control" in b
            )
    if len(positions) <= MAX_BREAKPOINTS:
        return messages
    keep = set(positions[: MAX_BREAKPOINTS - 1]) | {positions[-1]}
    for i, j in positions:
        if (i, j) in keep:
            continue
        if j is None:
            del messages[i]["cache_control"]
        else:
            del messages[i]["content"][j]["cache_control"]
    return messages


def shape_messages(model: str, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages as they go on the wire: Anthropic models keep up to four `cache_control`
    breakpoints; every other provider gets none, and no content blocks made only for them."""
    if llm.is_anthropic(model):
        return _limit_marks([copy.deepcopy(dict(m)) for m in messages])
    return [
        _strip_message(m) if _marks_in(m) or isinstance(m.get("content"), list) else dict(m)
        for m in messages
    ]


def _tool_name(tool: Mapping[str, Any]) -> str:
    function = tool.get("function")
    if isinstance(function, Mapping):
        return str(function.get("name", ""))
    return str(tool.get("name", ""))


def shape_tools(model: str, tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tools in a stable order (by name), so the same set always makes the same prefix;
    marks only for Anthropic."""
    ordered = sorted((copy.deepcopy(dict(t)) for t in tools), key=_tool_name)
    if not llm.is_anthropic(model):
        for tool in ordered:
            tool.pop("cache_control", None)
    return ordered


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


def _usage_from(raw: Any) -> Usage | None:
    """A `Usage` from litellm's usage object, or None when it is empty."""
    if raw is None:
        return None

    def num(obj: Any, *names: str) -> int:
        for name in names:
            value = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
            if isinstance(value, int | float) and value:
                return int(value)
        return 0

    prompt = num(raw, "prompt_tokens")
    output = num(raw, "completion_tokens")
    if prompt <= 0 and output <= 0:
        return None
    details = (
        raw.get("prompt_tokens_details")
        if isinstance(raw, dict)
        else getattr(raw, "prompt_tokens_details", None)
    )
    read = num(raw, "cache_read_input_tokens") or (num(details, "cached_tokens") if details else 0)
    write = num(raw, "cache_creation_input_tokens") or (
        num(details, "cache_creation_tokens", "cache_write_tokens") if details else 0
    )
    out_details = (
        raw.get("completion_tokens_details")
        if isinstance(raw, dict)
        else getattr(raw, "completion_tokens_details", None)
    )
    reasoning = num(out_details, "reasoning_tokens") if out_details else 0
    read, write = llm.clamp_cache_details(prompt, read, write)
    return Usage(prompt, read, write, output, reasoning)


def _provider_reported_usage(response: Any) -> bool:
    """Whether the usage came from the provider. litellm fills in its own estimate when a
    server sends none; an estimate is not a measurement."""
    chunks = getattr(response, "chunks", None)
    if not isinstance(chunks, list):
        return True
    return any(getattr(c, "usage", None) is not None for c in chunks)


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


class _ProviderLoop:
    """A background thread running its own event loop, where every provider call is made.

    litellm and the SDK under it spend a few milliseconds of Python per streamed chunk and
    more at the end of a stream; on the GUI's loop that is visible lag. Here the GIL is
    handed back every switch interval, so the GUI's loop stays responsive. litellm caches
    HTTP clients per loop, and this loop lives as long as the process.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                # While this thread parses a stream, the GUI thread waits for the GIL up to
                # one switch interval per wake-up; 5 ms of that is visible as lag.
                sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL))
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(
                    target=run, name="treechat-provider-loop", daemon=True
                )
                self._thread.start()
                ready.wait()
                self._loop = loop
                atexit.register(self.shutdown)
            return self._loop

    def shutdown(self, timeout: float = 10.0) -> None:
        """Close litellm's HTTP clients on the loop, then stop and close it."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        done = asyncio.run_coroutine_threadsafe(llm.aclose_clients(), loop)
        with contextlib.suppress(Exception):
            done.result(timeout)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        if not thread.is_alive():
            loop.close()


_provider_loop = _ProviderLoop()


def shutdown_provider_loop() -> None:
    """Close provider connections and stop the provider thread (at application exit). A later
    call starts a fresh one."""
    _provider_loop.shutdown()


_END = object()


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
    events are delivered on the caller's loop.
    """
    here = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    pending: collections.deque[Any] = collections.deque()
    scheduled = threading.Event()

    def drain() -> None:
        # Everything that arrived since the last wake-up, in one pass of the caller's loop:
        # a fast stream wakes that loop once per batch, not once per token.
        scheduled.clear()
        while pending:
            queue.put_nowait(pending.popleft())

    def deliver(item: Any) -> None:
        pending.append(item)
        if not scheduled.is_set():
            scheduled.set()
            with contextlib.suppress(RuntimeError):  # the caller's loop already closed
                here.call_soon_threadsafe(drain)

    async def pump() -> None:
        try:
            async for event in _stream_on_this_loop(request, shrink, diagnostics):
                deliver(event)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            deliver(exc)
        else:
            deliver(_END)

    work = asyncio.run_coroutine_threadsafe(pump(), _provider_loop.get())
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
                reasoning = getattr(delta, "reasoning_content", None)
                if reasoning:
                    streamed = True
                    yield ReasoningDelta(str(reasoning))
                content = getattr(delta, "content", None)
                if content:
                    streamed = True
                    text_parts.append(str(content))
                    yield TextDelta(str(content))
                received += len(content or "") + len(reasoning or "")
                if received > MAX_REPLY_CHARS:
                    failure = too_long_failure(received, request.api_base, request.model)
                    break
                for tc in getattr(delta, "tool_calls", None) or []:
                    streamed = True
                    index = int(getattr(tc, "index", 0) or 0)
                    function = getattr(tc, "function", None)
                    name = getattr(function, "name", None) if function is not None else None
                    args = getattr(function, "arguments", None) if function is not None else None
                    slot = calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
                    if getattr(tc, "id", None):
                        slot["id"] = str(tc.id)
                    if name:
                        slot["name"] = str(name)
                    if args:
                        slot["arguments"] += str(args)
                    yield ToolCallDelta(index, getattr(tc, "id", None), name, str(args or ""))
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
        usage = _usage_from(raw_usage) if _provider_reported_usage(response) else None
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
