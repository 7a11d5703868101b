"""The bundled server's HTTP side: OpenAI's chat completions (streamed or not), model list,
props and tokenize endpoints, with tool calls held to the end of a reply and sent as one
delta."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .generation import Engine, Generation
from .messages import (
    TOOL_CALL_OPEN,
    RequestError,
    normalize_messages,
    parse_tool_calls,
    positive_int,
    stop_sequences,
    tool_messages,
)

MAX_BODY_BYTES = 64 * 1024 * 1024


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "TreechatLocalModel/1"
    engine: Engine
    quiet = True
    _body_read = False

    def log_message(self, format: str, *args: Any) -> None:
        if not self.quiet:
            super().log_message(format, *args)

    # routing

    def do_GET(self) -> None:
        routes: dict[str, Callable[[], Any]] = {
            "/v1/models": self._models,
            "/models": self._models,
            "/props": self._props,
            "/health": lambda: {"status": "ok"},
        }
        self._dispatch(routes.get(self.path.split("?", 1)[0]))

    def do_POST(self) -> None:
        routes: dict[str, Callable[[], Any]] = {
            "/v1/chat/completions": self._chat,
            "/chat/completions": self._chat,
            "/tokenize": self._tokenize,
        }
        self._dispatch(routes.get(self.path.split("?", 1)[0]))

    def _dispatch(self, route: Callable[[], Any] | None) -> None:
        self._body_read = False
        try:
            if route is None:
                raise RequestError(
                    f"Unknown endpoint {self.command} {self.path}", status=404, code="not_found"
                )
            body = route()
            if body is not None:
                self._send_json(200, body)
        except RequestError as exc:
            if not self._body_read and int(self.headers.get("Content-Length") or 0) > 0:
                # Unread body bytes would be parsed as the next request on this connection.
                self.close_connection = True
            self._send_json(exc.status, exc.body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:
            self._send_json(
                500,
                {"error": {"message": f"{type(exc).__name__}: {exc}", "type": "server_error",
                           "param": None, "code": None}},
            )

    # plumbing

    def _read_json(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        if length <= 0:
            raise RequestError("request body is empty; expected a JSON object")
        if length > MAX_BODY_BYTES:
            raise RequestError("request body is too large", status=413)
        raw = self.rfile.read(length)
        self._body_read = True
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise RequestError(f"request body is not valid JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise RequestError("request body must be a JSON object")
        return body

    def _send_json(self, status: int, body: Any) -> None:
        data = json.dumps(body, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))

    def _send_event(self, payload: Any) -> None:
        text = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
        self._write_chunk(f"data: {text}\n\n".encode())

    # endpoints

    def _models(self) -> dict[str, Any]:
        engine = self.engine
        return {
            "object": "list",
            "data": [
                {
                    "id": engine.name,
                    "object": "model",
                    "created": engine.created,
                    "owned_by": "treechat",
                    "meta": engine.meta(),
                }
            ],
        }

    def _props(self) -> dict[str, Any]:
        engine = self.engine
        last = engine.last
        return {
            "model_alias": engine.name,
            "model_path": engine.model_path,
            "n_ctx": engine.n_ctx,
            "default_generation_settings": {"n_ctx": engine.n_ctx},
            "total_slots": 1,
            "busy": engine.lock.locked(),
            "last_generation": None if last is None else {
                "finish_reason": last.finish_reason, "usage": last.usage(),
                "timings": last.timings(),
            },
        }

    def _tokenize(self) -> dict[str, Any]:
        body = self._read_json()
        if "messages" in body:
            tools = self._tools(body)
            messages = (tool_messages(body["messages"]) if tools
                        else normalize_messages(body["messages"]))
            with self.engine.lock:
                tokens = self.engine.prompt_tokens(messages, tools)
        elif isinstance(body.get("content"), str):
            with self.engine.lock:
                tokens = self.engine.tokenize_text(body["content"], bool(body.get("add_special")))
        else:
            raise RequestError("give 'content' (a string) or 'messages'", param="content")
        return {"tokens": tokens, "count": len(tokens)}

    def _tools(self, body: Mapping[str, Any]) -> list[Any] | None:
        tools = body.get("tools")
        if not self.engine.takes_tools or not isinstance(tools, list) or not tools:
            return None
        if body.get("tool_choice") == "none":
            return None
        return tools

    def _chat(self) -> dict[str, Any] | None:
        body = self._read_json()
        engine = self.engine
        tools = self._tools(body)
        raw = body.get("messages")
        messages: Sequence[Mapping[str, Any]] = (
            tool_messages(raw) if tools else normalize_messages(raw)
        )
        if body.get("n", 1) != 1:
            raise RequestError("only n=1 is supported", param="n")
        max_tokens = positive_int(body, "max_completion_tokens", "max_tokens")
        stops = stop_sequences(body)
        stream = bool(body.get("stream"))
        options = body.get("stream_options") or {}
        include_usage = bool(isinstance(options, Mapping) and options.get("include_usage"))
        sampling = {
            key: body[key]
            for key in ("temperature", "top_p", "presence_penalty", "frequency_penalty", "seed")
            if body.get(key) is not None
        }
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        created = int(time.time())
        with engine.lock:
            tokens = engine.prompt_tokens(messages, tools)
            budget = engine.check_window(len(tokens), max_tokens)
            result = Generation(prompt_tokens=len(tokens))
            pieces = engine.generate(tokens, budget, sampling, stops, result)
            if not stream:
                text = "".join(pieces)
                message: dict[str, Any] = {"role": "assistant", "content": text}
                if tools:
                    content, calls = parse_tool_calls(text)
                    if calls:
                        message = {"role": "assistant", "content": content or None,
                                   "tool_calls": calls}
                        result.finish_reason = "tool_calls"
                return {
                    "id": completion_id,
                    "object": "chat.completion",
                    "created": created,
                    "model": engine.name,
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": result.finish_reason,
                        }
                    ],
                    "usage": result.usage(),
                    "timings": result.timings(),
                }
            streamed: Iterator[str | ToolCalls] = (
                hold_tool_calls(pieces, result) if tools else pieces
            )
            self._stream(completion_id, created, streamed, result, include_usage)
        return None

    def _stream(
        self,
        completion_id: str,
        created: int,
        pieces: Iterator[str | ToolCalls],
        result: Generation,
        include_usage: bool,
    ) -> None:
        name = self.engine.name

        def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
            return {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": name,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            self._send_event(chunk({"role": "assistant", "content": ""}, None))
            try:
                for piece in pieces:
                    if isinstance(piece, ToolCalls):
                        self._send_event(chunk({"tool_calls": [
                            {"index": i, **call} for i, call in enumerate(piece.calls)
                        ]}, None))
                    else:
                        self._send_event(chunk({"content": piece}, None))
            except (BrokenPipeError, ConnectionResetError):
                raise
            except Exception as exc:
                # Headers are gone already: report the failure in the stream, OpenAI-style.
                self._send_event({"error": {"message": f"{type(exc).__name__}: {exc}",
                                            "type": "server_error", "param": None,
                                            "code": None}})
                self._send_event("[DONE]")
                self._write_chunk(b"")
                return
            self._send_event(chunk({}, result.finish_reason))
            if include_usage:
                self._send_event(
                    {
                        "id": completion_id,
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": name,
                        "choices": [],
                        "usage": result.usage(),
                        "timings": result.timings(),
                    }
                )
            self._send_event("[DONE]")
            self._write_chunk(b"")
        finally:
            # A client that hung up (the user pressed stop) ends generation here.
            close = getattr(pieces, "close", None)
            if close is not None:
                close()


@dataclass(frozen=True)
class ToolCalls:
    """The tool calls a streamed reply ended with, sent as one `tool_calls` delta."""

    calls: list[dict[str, Any]]


def hold_tool_calls(pieces: Iterator[str], result: Generation) -> Iterator[str | ToolCalls]:
    """Stream text as it comes, except a reply that opens with `<tool_call>`: that one is held
    to its end and sent as tool calls (finish reason `tool_calls`)."""
    held = ""
    deciding = True
    try:
        for piece in pieces:
            if not deciding:
                yield piece
                continue
            held += piece
            start = held.lstrip()
            if start.startswith(TOOL_CALL_OPEN):
                continue  # a tool call: hold everything
            if TOOL_CALL_OPEN.startswith(start):
                continue  # too early to tell
            deciding = False
            yield held
            held = ""
        if held:
            content, calls = parse_tool_calls(held)
            if calls:
                result.finish_reason = "tool_calls"
                if content:
                    yield content
                yield ToolCalls(calls)
            else:
                yield held
    finally:
        close = getattr(pieces, "close", None)
        if close is not None:
            close()


def serve(engine: Engine, host: str, port: int, *, quiet: bool = True) -> ThreadingHTTPServer:
    handler = type("BoundHandler", (Handler,), {"engine": engine, "quiet": quiet})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server
