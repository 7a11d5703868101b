"""A provider on 127.0.0.1 that speaks OpenAI `/v1/chat/completions` and Anthropic `/v1/messages`.

Usage is computed from the request itself with tiktoken, and prompt caching follows each
provider's published rules, so tests of measurement and cache shaping see honest numbers.
Tests queue what the next replies do (text, tool calls, errors, a cut stream) and read back
every request body that went over the wire.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import tiktoken

from treechat.providers.llm import configure_tokenizer_cache

configure_tokenizer_cache()
_ENCODING = tiktoken.get_encoding("cl100k_base")

DEFAULT_TEXT = (
    "The loopback provider answers every request with this short, deterministic reply so "
    "that tests can count its tokens."
)
OPENAI_MIN_CACHED = 1024
OPENAI_CACHE_STEP = 128
ANTHROPIC_MIN_CACHEABLE = 1024


def encode(text: str) -> list[int]:
    return _ENCODING.encode(text, disallowed_special=())


def count_tokens(text: str) -> int:
    return len(encode(text))


@dataclass
class Reply:
    """What the server does with the next request that reaches it.

    `status` other than 200 answers with that provider's error body; `cut_after` drops the
    connection after that many streamed pieces; `error_after` sends the provider's in-stream
    error event after that many pieces, with `message` ("overflow" for the provider's own
    context-length wording); `usage` is "full", "zeros" or "none" (no usage at all, as some
    OpenAI-compatible servers do).
    """

    text: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    message: str | None = None
    retry_after: float | None = None
    cut_after: int | None = None
    error_after: int | None = None
    usage: str = "full"
    tokens_per_second: float | None = None
    reasoning: str = ""  # streamed before the answer (OpenAI `reasoning_content`, Anthropic
    # `thinking` blocks) and billed as output, as reasoning models do
    finish: str | None = None  # e.g. "length": the reply ran out of tokens
    hold: threading.Event | None = None  # the answer waits until the test sets it
    # after `pause_after` streamed pieces the stream waits until the test sets `resume` (or the
    # server stops), so a test can act mid-reply without racing the reply's end
    pause_after: int | None = None
    resume: threading.Event | None = None
    endless: bool = False  # the text's pieces again and again, never the end of the stream


@dataclass
class Recorded:
    """One request as it arrived, and what the server measured and did about it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    wire: str
    prompt_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    status: int = 200
    pieces_sent: int = 0
    piece_times: list[float] = field(default_factory=list)
    finished: bool = False
    disconnected: bool = False
    done: threading.Event = field(default_factory=threading.Event)


@dataclass
class _Prompt:
    """The request flattened into tokens, with the ends of its cacheable blocks."""

    tokens: list[int]
    block_ends: list[int]
    breakpoints: list[int]


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
                elif block.get("type") == "tool_result":
                    parts.append(_text_of(block.get("content")))
                elif block.get("type") == "tool_use":
                    parts.append(
                        json.dumps({"name": block.get("name"), "input": block.get("input")})
                    )
            else:
                parts.append(str(block))
        return "".join(parts)
    return json.dumps(content)


def _openai_prompt(body: dict[str, Any]) -> _Prompt:
    tokens: list[int] = []
    ends: list[int] = []
    tools = body.get("tools") or []
    if tools:
        tokens += encode("# Tools\n" + json.dumps(tools, sort_keys=True))
        ends.append(len(tokens))
    for message in body.get("messages", []):
        tokens += encode(f"<|start|>{message.get('role', '')}\n")
        tokens += encode(_text_of(message.get("content")))
        for call in message.get("tool_calls") or []:
            tokens += encode(json.dumps(call.get("function", {}), sort_keys=True))
        tokens += encode("<|end|>\n")
        ends.append(len(tokens))
    tokens += encode("<|start|>assistant\n")
    return _Prompt(tokens, ends, [])


def _anthropic_prompt(body: dict[str, Any]) -> _Prompt:
    tokens: list[int] = []
    ends: list[int] = []
    marks: list[int] = []

    def block(text: str, marked: bool) -> None:
        tokens.extend(encode(text))
        ends.append(len(tokens))
        if marked:
            marks.append(len(tokens))

    for tool in body.get("tools") or []:
        shown = {k: v for k, v in tool.items() if k != "cache_control"}
        block(json.dumps(shown, sort_keys=True), "cache_control" in tool)
    system = body.get("system")
    if isinstance(system, str):
        block("<system>" + system, False)
    elif isinstance(system, list):
        for part in system:
            block("<system>" + _text_of([part]), "cache_control" in part)
    for message in body.get("messages", []):
        role = f"<|{message.get('role', '')}|>"
        content = message.get("content")
        if isinstance(content, str):
            block(role + content, False)
            continue
        for i, part in enumerate(content or []):
            block((role if i == 0 else "") + _text_of([part]), "cache_control" in part)
    tokens.extend(encode("<|assistant|>"))
    return _Prompt(tokens, ends, marks)


def _prefix_key(tokens: list[int], end: int) -> str:
    return hashlib.sha256(json.dumps(tokens[:end]).encode()).hexdigest()


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _pieces(text: str) -> Iterator[str]:
    """The reply split the way a model streams it: about one token per chunk, never
    splitting a multi-byte character."""
    pending = b""
    for token in encode(text):
        pending += _ENCODING.decode_single_token_bytes(token)
        try:
            piece = pending.decode("utf-8")
        except UnicodeDecodeError:
            continue
        pending = b""
        yield piece
    if pending:
        yield pending.decode("utf-8", errors="replace")


class _Cut(Exception):
    """The scripted reply drops the connection here."""


class LoopbackProvider:
    """The server, its scripted replies and the record of what it was sent."""

    def __init__(self, window: int = 128_000, tokens_per_second: float | None = None) -> None:
        self.window = window
        self.tokens_per_second = tokens_per_second
        self.requests: list[Recorded] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._openai_seen: dict[str, list[list[int]]] = {}
        self._anthropic_cache: dict[str, set[str]] = {}
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="loopback-provider", daemon=True
        )
        self._thread.start()

    # --- addresses ----------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_base(self) -> str:
        return self.url + "/v1"

    @property
    def anthropic_base(self) -> str:
        return self.url

    # --- scripting ----------------------------------------------------------------

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def reply_with_tool_calls(self, calls: list[dict[str, Any]], text: str = "") -> None:
        """Next reply calls these tools: each `{"name": ..., "arguments": {...}}`."""
        self.queue(Reply(text=text, tool_calls=calls))

    def fail_next(
        self, status: int, retry_after: float | None = None, message: str | None = None
    ) -> None:
        self.queue(Reply(status=status, retry_after=retry_after, message=message))

    def _next_reply(self) -> Reply:
        with self._lock:
            return self._replies.popleft() if self._replies else Reply()

    def wait_for_requests(self, n: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.requests) < n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {len(self.requests)} of {n} requests arrived")
            time.sleep(0.01)

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # --- measurement --------------------------------------------------------------

    def _measure_openai(self, body: dict[str, Any], rec: Recorded) -> None:
        prompt = _openai_prompt(body)
        model = str(body.get("model", ""))
        with self._lock:
            seen = self._openai_seen.setdefault(model, [])
            best = max((_common_prefix(prompt.tokens, old) for old in seen), default=0)
            seen.append(prompt.tokens)
        cached = 0
        if best >= OPENAI_MIN_CACHED:
            cached = (
                OPENAI_MIN_CACHED
                + (best - OPENAI_MIN_CACHED) // OPENAI_CACHE_STEP * OPENAI_CACHE_STEP
            )
        rec.prompt_tokens = len(prompt.tokens)
        rec.cache_read = min(cached, rec.prompt_tokens)

    def _measure_anthropic(self, body: dict[str, Any], rec: Recorded) -> None:
        prompt = _anthropic_prompt(body)
        model = str(body.get("model", ""))
        total = len(prompt.tokens)
        last_mark = max(prompt.breakpoints, default=0)
        with self._lock:
            cache = self._anthropic_cache.setdefault(model, set())
            # A breakpoint reads the longest earlier-written prefix ending at a block boundary
            # at or before it; it writes what lies between that read and itself.
            read = max(
                (
                    end
                    for end in prompt.block_ends
                    if end <= last_mark and _prefix_key(prompt.tokens, end) in cache
                ),
                default=0,
            )
            write = last_mark - read if last_mark >= ANTHROPIC_MIN_CACHEABLE else 0
            for mark in prompt.breakpoints:
                if mark >= ANTHROPIC_MIN_CACHEABLE:
                    cache.add(_prefix_key(prompt.tokens, mark))
        rec.prompt_tokens = total
        rec.cache_read = read
        rec.cache_write = max(write, 0)

    # --- HTTP ---------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {}
                path = self.path.split("?")[0]
                if path.endswith("/chat/completions"):
                    wire = "openai"
                elif path.endswith("/v1/messages"):
                    wire = "anthropic"
                else:
                    self._send_json(404, {"error": {"message": f"no route {path}"}})
                    return
                rec = Recorded(path=path, headers=dict(self.headers.items()), body=body, wire=wire)
                with provider._lock:
                    provider.requests.append(rec)
                try:
                    provider._serve(self, rec)
                except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
                    rec.disconnected = True
                    self.close_connection = True
                except _Cut:
                    self.close_connection = True
                finally:
                    rec.done.set()

            def _send_json(
                self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

        return Handler

    def _serve(self, handler: Any, rec: Recorded) -> None:
        body = rec.body
        if rec.wire == "openai":
            self._measure_openai(body, rec)
        else:
            self._measure_anthropic(body, rec)
        reply = self._next_reply()
        if reply.hold is not None:
            while not reply.hold.wait(0.05) and not self._stopping.is_set():
                pass
        key = self._presented_key(rec)
        if reply.status == 200 and key == "invalid":
            reply = Reply(status=401)
        if reply.status == 200 and rec.prompt_tokens > self.window:
            reply = Reply(status=400, message="overflow")
        if reply.status != 200:
            rec.status = reply.status
            status, payload, headers = self._error(rec, reply, key)
            handler._send_json(status, payload, headers)
            return
        text = DEFAULT_TEXT if reply.text is None else reply.text
        calls = [
            {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "name": c["name"],
                "arguments": json.dumps(c.get("arguments", {})),
            }
            for c in reply.tool_calls
        ]
        rec.reasoning_tokens = count_tokens(reply.reasoning) if reply.reasoning else 0
        rec.output_tokens = rec.reasoning_tokens + count_tokens(text) + sum(
            count_tokens(c["name"] + c["arguments"]) for c in calls
        )
        stream = bool(body.get("stream"))
        if rec.wire == "openai":
            if stream:
                self._stream_openai(handler, rec, reply, text, calls)
            else:
                handler._send_json(200, self._openai_message(rec, text, calls))
        elif stream:
            self._stream_anthropic(handler, rec, reply, text, calls)
        else:
            handler._send_json(200, self._anthropic_message(rec, text, calls))
        rec.finished = True

    @staticmethod
    def _presented_key(rec: Recorded) -> str:
        auth = rec.headers.get("Authorization") or rec.headers.get("authorization") or ""
        if auth.lower().startswith("bearer "):
            return auth[7:]
        return rec.headers.get("x-api-key") or rec.headers.get("X-Api-Key") or ""

    def _error(
        self, rec: Recorded, reply: Reply, key: str
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        headers: dict[str, str] = {}
        if reply.retry_after is not None:
            headers["retry-after"] = f"{reply.retry_after:g}"
        status = reply.status
        model = rec.body.get("model", "")
        if rec.wire == "openai":
            if reply.message == "overflow":
                message = (
                    f"This model's maximum context length is {self.window} tokens. However, your "
                    f"messages resulted in {rec.prompt_tokens} tokens. Please reduce the length "
                    "of the messages."
                )
                return (
                    400,
                    {
                        "error": {
                            "message": message,
                            "type": "invalid_request_error",
                            "param": "messages",
                            "code": "context_length_exceeded",
                        }
                    },
                    headers,
                )
            kinds = {
                401: (
                    "invalid_request_error",
                    "invalid_api_key",
                    f"Incorrect API key provided: {key}. You can find your API key at your "
                    "account page.",
                ),
                429: (
                    "requests",
                    "rate_limit_exceeded",
                    f"Rate limit reached for {model} on requests per min (RPM): Limit 3, "
                    f"Used 3, Requested 1. Please try again in {reply.retry_after or 1:g}s.",
                ),
                500: (
                    "server_error",
                    None,
                    "The server had an error while processing your request. Sorry about that!",
                ),
                400: ("invalid_request_error", None, "Invalid value for 'messages'."),
            }
            kind, code, message = kinds.get(status, ("server_error", None, "Bad gateway."))
            return (
                status,
                {
                    "error": {
                        "message": reply.message or message,
                        "type": kind,
                        "param": None,
                        "code": code,
                    }
                },
                headers,
            )
        if reply.message == "overflow":
            message = f"prompt is too long: {rec.prompt_tokens} tokens > {self.window} maximum"
            return (
                400,
                {"type": "error", "error": {"type": "invalid_request_error", "message": message}},
                headers,
            )
        kinds_a = {
            401: ("authentication_error", f"invalid x-api-key {key}"),
            429: (
                "rate_limit_error",
                "This request would exceed the rate limit for your "
                "organization of 50 requests per minute.",
            ),
            500: ("api_error", "Internal server error"),
            529: ("overloaded_error", "Overloaded"),
            400: ("invalid_request_error", "messages: field required"),
        }
        kind_a, message_a = kinds_a.get(status, ("api_error", "Internal server error"))
        return (
            status,
            {"type": "error", "error": {"type": kind_a, "message": reply.message or message_a}},
            headers,
        )

    # --- replies ------------------------------------------------------------------

    def _usage_openai(self, rec: Recorded) -> dict[str, Any]:
        return {
            "prompt_tokens": rec.prompt_tokens,
            "completion_tokens": rec.output_tokens,
            "total_tokens": rec.prompt_tokens + rec.output_tokens,
            "prompt_tokens_details": {"cached_tokens": rec.cache_read, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": rec.reasoning_tokens,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        }

    def _usage_anthropic(self, rec: Recorded) -> dict[str, Any]:
        return {
            "input_tokens": rec.prompt_tokens - rec.cache_read - rec.cache_write,
            "cache_creation_input_tokens": rec.cache_write,
            "cache_read_input_tokens": rec.cache_read,
            "output_tokens": rec.output_tokens,
        }

    def _openai_message(
        self, rec: Recorded, text: str, calls: list[dict[str, str]]
    ) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in calls
            ]
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": rec.body.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": self._usage_openai(rec),
        }

    def _anthropic_message(
        self, rec: Recorded, text: str, calls: list[dict[str, str]]
    ) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if text:
            content.append({"type": "text", "text": text})
        for c in calls:
            content.append(
                {
                    "type": "tool_use",
                    "id": c["id"].replace("call_", "toolu_"),
                    "name": c["name"],
                    "input": json.loads(c["arguments"]),
                }
            )
        return {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": rec.body.get("model", ""),
            "content": content,
            "stop_reason": "tool_use" if calls else "end_turn",
            "stop_sequence": None,
            "usage": self._usage_anthropic(rec),
        }

    def _start_stream(self, handler: Any) -> None:
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("cache-control", "no-cache")
        handler.send_header("transfer-encoding", "chunked")
        handler.end_headers()

    def _emitter(self, handler: Any, rec: Recorded, reply: Reply) -> Callable[[str, bool], None]:
        rate = reply.tokens_per_second or self.tokens_per_second
        interval = 1.0 / rate if rate else 0.0
        next_at = time.perf_counter()

        def emit(data: str, is_piece: bool) -> None:
            nonlocal next_at
            if self._stopping.is_set():
                raise _Cut()
            if is_piece:
                if reply.cut_after is not None and rec.pieces_sent >= reply.cut_after:
                    # Drop the connection without the terminating chunk, as a dying proxy does.
                    handler.wfile.flush()
                    handler.connection.shutdown(socket.SHUT_RDWR)
                    raise _Cut()
                if reply.error_after is not None and rec.pieces_sent >= reply.error_after:
                    error = self._stream_error(rec, reply)
                    raw_error = error.encode()
                    handler.wfile.write(f"{len(raw_error):x}\r\n".encode() + raw_error + b"\r\n")
                    self._end_stream(handler)
                    raise _Cut()
                if reply.pause_after is not None and rec.pieces_sent == reply.pause_after:
                    handler.wfile.flush()
                    resume = reply.resume or threading.Event()
                    while not resume.wait(0.05):
                        if self._stopping.is_set():
                            raise _Cut()
                    next_at = time.perf_counter()
                if interval:
                    next_at += interval
                    delay = next_at - time.perf_counter()
                    if delay > 0:
                        time.sleep(delay)
            raw = data.encode()
            handler.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
            handler.wfile.flush()
            if is_piece:
                rec.pieces_sent += 1
                rec.piece_times.append(time.perf_counter())

        return emit

    def _stream_error(self, rec: Recorded, reply: Reply) -> str:
        """The error event a provider sends in place of the rest of a stream."""
        status, payload, _ = self._error(rec, Reply(status=400 if reply.message == "overflow"
                                                    else 500, message=reply.message), "")
        rec.status = status
        if rec.wire == "openai":
            return f"data: {json.dumps(payload)}\n\n"
        return f"event: error\ndata: {json.dumps(payload)}\n\n"

    @staticmethod
    def _end_stream(handler: Any) -> None:
        handler.wfile.write(b"0\r\n\r\n")
        handler.wfile.flush()

    def _stream_openai(
        self, handler: Any, rec: Recorded, reply: Reply, text: str, calls: list[dict[str, str]]
    ) -> None:
        self._start_stream(handler)
        emit = self._emitter(handler, rec, reply)
        ident = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        model = rec.body.get("model", "")
        wants_usage = bool((rec.body.get("stream_options") or {}).get("include_usage"))

        def chunk(delta: dict[str, Any], finish: str | None = None, piece: bool = False) -> None:
            payload: dict[str, Any] = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_loopback",
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
            }
            if wants_usage:
                payload["usage"] = None
            emit(f"data: {json.dumps(payload)}\n\n", piece)

        chunk({"role": "assistant", "content": "", "refusal": None})
        for piece in _pieces(reply.reasoning) if reply.reasoning else ():
            chunk({"reasoning_content": piece}, piece=True)
        for piece in _pieces(text):
            chunk({"content": piece}, piece=True)
        while reply.endless:
            for piece in _pieces(text):
                chunk({"content": piece}, piece=True)
        for index, call in enumerate(calls):
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["name"], "arguments": ""},
                        }
                    ]
                }
            )
            args = call["arguments"]
            for start in range(0, len(args), 8):
                chunk(
                    {
                        "tool_calls": [
                            {"index": index, "function": {"arguments": args[start : start + 8]}}
                        ]
                    },
                    piece=True,
                )
        chunk({}, finish=reply.finish or ("tool_calls" if calls else "stop"))
        if wants_usage and reply.usage != "none":
            usage = self._usage_openai(rec)
            if reply.usage == "zeros":
                usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
            payload = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": "fp_loopback",
                "choices": [],
                "usage": usage,
            }
            emit(f"data: {json.dumps(payload)}\n\n", False)
        emit("data: [DONE]\n\n", False)
        self._end_stream(handler)

    def _stream_anthropic(
        self, handler: Any, rec: Recorded, reply: Reply, text: str, calls: list[dict[str, str]]
    ) -> None:
        self._start_stream(handler)
        emit = self._emitter(handler, rec, reply)

        def event(name: str, data: dict[str, Any], piece: bool = False) -> None:
            emit(f"event: {name}\ndata: {json.dumps(data)}\n\n", piece)

        usage = self._usage_anthropic(rec)
        if reply.usage != "full":
            usage = {
                "input_tokens": 0,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 0,
            }
        start_usage = {**usage, "output_tokens": 1 if reply.usage == "full" else 0}
        event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_{uuid.uuid4().hex[:24]}",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": rec.body.get("model", ""),
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            },
        )
        index = 0
        if reply.reasoning:
            event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "thinking", "thinking": "", "signature": ""},
                },
            )
            for piece in _pieces(reply.reasoning):
                event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "thinking_delta", "thinking": piece},
                    },
                    piece=True,
                )
            event(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "signature_delta", "signature": "loopback-signature"},
                },
            )
            event("content_block_stop", {"type": "content_block_stop", "index": 0})
            index = 1
        if text:
            event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            event("ping", {"type": "ping"})
            for piece in _pieces(text):
                event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                    piece=True,
                )
            event("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        for call in calls:
            event(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": call["id"].replace("call_", "toolu_"),
                        "name": call["name"],
                        "input": {},
                    },
                },
            )
            args = call["arguments"]
            for start in range(0, len(args), 8):
                event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {
                            "type": "input_json_delta",
                            "partial_json": args[start : start + 8],
                        },
                    },
                    piece=True,
                )
            event("content_block_stop", {"type": "content_block_stop", "index": index})
            index += 1
        event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": {"length": "max_tokens"}.get(reply.finish or "", reply.finish)
                    or ("tool_use" if calls else "end_turn"),
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
        event("message_stop", {"type": "message_stop"})
        self._end_stream(handler)
