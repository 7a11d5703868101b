"""A small OpenAI-compatible HTTP server for one GGUF model, run as Treechat's child process.

Run as a script (`python local_server.py --model M.gguf --parent-pid P`); it needs only the
standard library and llama_cpp, so it never imports the rest of Treechat. It prints one JSON
line (port, window) on stdout when it is ready, and exits when its parent goes away.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import ctypes
import json
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

_PR_SET_PDEATHSIG = 1
MAX_BODY_BYTES = 64 * 1024 * 1024

# SmolLM2's model card recommends a low temperature; a tiny model rambles at 1.0.
DEFAULT_TEMPERATURE = 0.2
DEFAULT_TOP_P = 0.9


class RequestError(Exception):
    """A client error, reported in OpenAI's error shape."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        kind: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"error": {"message": message, "type": kind, "param": param, "code": code}}


# --- staying alive only as long as the parent -------------------------------------------------


def _exit_now(reason: str) -> None:
    print(f"local model server: {reason}; exiting", file=sys.stderr, flush=True)
    os._exit(0)


def watch_parent(parent_pid: int, poll_seconds: float = 0.5) -> None:
    """Make sure this process ends when the process that started it ends, however it ends.

    Three independent guards, because each has a gap: PR_SET_PDEATHSIG (Linux; the kernel
    signals us when the parent dies), EOF on stdin (every OS: the parent holds the write end
    of our stdin pipe and the OS closes it when the parent dies) and polling the parent pid
    (POSIX, where an orphan is re-parented).
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    # The parent may have died before prctl took effect.
    if os.name == "posix" and os.getppid() != parent_pid:
        _exit_now("parent already gone")

    def stdin_eof() -> None:
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except (OSError, ValueError):
            pass
        _exit_now("parent closed the pipe")

    def poll_ppid() -> None:
        while True:
            time.sleep(poll_seconds)
            if os.getppid() != parent_pid:
                _exit_now("parent is gone")

    threading.Thread(target=stdin_eof, name="watch-stdin", daemon=True).start()
    if os.name == "posix":
        threading.Thread(target=poll_ppid, name="watch-ppid", daemon=True).start()


# --- the model ---------------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    """Message content as plain text (OpenAI allows a string or a list of typed parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "".join(parts)
    return json.dumps(content, ensure_ascii=False)


def normalize_messages(messages: Any) -> list[dict[str, str]]:
    """Messages reduced to role + text, the only thing a plain chat template can render.

    Tool calls and their results are kept as text so that the model still sees them.
    """
    if not isinstance(messages, list) or not messages:
        raise RequestError("'messages' must be a non-empty array", param="messages")
    out: list[dict[str, str]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise RequestError(f"messages[{index}] must be an object with a role", param="messages")
        role = message["role"]
        role = "system" if role == "developer" else role
        text = _text_of(message.get("content"))
        calls = message.get("tool_calls") or []
        for call in calls if isinstance(calls, list) else []:
            function = call.get("function", {}) if isinstance(call, Mapping) else {}
            text += f"\n[tool call {function.get('name', '?')}({function.get('arguments', '')})]"
        out.append({"role": role, "content": text})
    return out


def tool_messages(messages: Any) -> list[dict[str, Any]]:
    """Messages for a template that renders tools: tool calls keep their structure (with
    arguments as objects, as Hugging Face templates expect) and tool results their id."""
    flat = normalize_messages(messages)
    out: list[dict[str, Any]] = []
    for message, plain in zip(messages, flat, strict=True):
        entry: dict[str, Any] = {"role": plain["role"], "content": _text_of(message.get("content"))}
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            entry["tool_calls"] = [_call_for_template(call) for call in calls]
        for key in ("tool_call_id", "name"):
            if isinstance(message.get(key), str):
                entry[key] = message[key]
        out.append(entry)
    return out


def _call_for_template(call: Any) -> dict[str, Any]:
    function = call.get("function", {}) if isinstance(call, Mapping) else {}
    arguments: Any = function.get("arguments", "{}")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except ValueError:
            arguments = {"input": arguments}
    return {
        "id": call.get("id", "") if isinstance(call, Mapping) else "",
        "type": "function",
        "function": {"name": str(function.get("name", "")), "arguments": arguments},
    }


TOOL_CALL_OPEN, TOOL_CALL_CLOSE = "<tool_call>", "</tool_call>"


def parse_tool_calls(text: str) -> tuple[str, list[dict[str, Any]]]:
    """Split a reply into its text and its tool calls, in the `<tool_call>{"name": ...,
    "arguments": {...}}</tool_call>` form that Hermes-style templates (Qwen2.5, Hermes,
    SmolLM3 and others) teach their models. A block that is not valid JSON stays text."""
    calls: list[dict[str, Any]] = []
    kept: list[str] = []
    rest = text
    while (start := rest.find(TOOL_CALL_OPEN)) >= 0:
        end = rest.find(TOOL_CALL_CLOSE, start)
        body = rest[start + len(TOOL_CALL_OPEN): end if end >= 0 else len(rest)]
        try:
            parsed = json.loads(body.strip())
            name = parsed["name"]
            arguments = parsed.get("arguments", parsed.get("parameters", {}))
        except (ValueError, KeyError, TypeError, AttributeError):
            break
        kept.append(rest[:start])
        calls.append({
            "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {
                "name": str(name),
                "arguments": arguments if isinstance(arguments, str)
                else json.dumps(arguments, ensure_ascii=False),
            },
        })
        rest = rest[end + len(TOOL_CALL_CLOSE):] if end >= 0 else ""
    kept.append(rest)
    return ("".join(kept).strip() if calls else text), calls


@dataclass
class Generation:
    """One completion's running state, filled in as tokens arrive."""

    prompt_tokens: int
    completion_tokens: int = 0
    finish_reason: str = "length"
    prompt_seconds: float = 0.0
    generate_seconds: float = 0.0
    pieces: list[str] = field(default_factory=list)

    def usage(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }

    def timings(self) -> dict[str, float]:
        per_second = (
            self.completion_tokens / self.generate_seconds if self.generate_seconds > 0 else 0.0
        )
        return {
            "prompt_n": self.prompt_tokens,
            "prompt_ms": round(self.prompt_seconds * 1000, 3),
            "predicted_n": self.completion_tokens,
            "predicted_ms": round(self.generate_seconds * 1000, 3),
            "predicted_per_second": round(per_second, 3),
        }


class Engine:
    """The loaded model: prompt formatting, exact token counts and token-by-token generation.

    llama.cpp contexts are not thread-safe, so one request generates at a time.
    """

    def __init__(self, model_path: str, n_ctx: int, n_threads: int, name: str,
                 chat_template: str | None = None) -> None:
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self._llama_cpp = llama_cpp
        self.llm = llama_cpp.Llama(
            model_path=model_path,
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            verbose=False,
        )
        self.name = name
        self.model_path = model_path
        self.n_ctx = int(self.llm.n_ctx())
        self.created = int(time.time())
        eos = self.llm.token_eos()
        bos = self.llm.token_bos()
        template = chat_template or self.llm.metadata.get("tokenizer.chat_template") or _CHATML
        # Tools are offered only to models whose own template renders them.
        self.takes_tools = "tools" in template
        self._formatter = Jinja2ChatFormatter(
            template=template,
            eos_token=self.llm._model.token_get_text(eos) if eos != -1 else "",
            bos_token=self.llm._model.token_get_text(bos) if bos != -1 else "",
            stop_token_ids=[eos],
        )
        self.lock = threading.Lock()
        self.last: Generation | None = None

    def warm_up(self) -> None:
        """Generate one token before announcing readiness.

        llama.cpp's first evaluation pays for buffer allocation; paying it here keeps it out
        of the user's first reply, and the default system prefix it evaluates stays cached.
        """
        tokens = self.prompt_tokens([{"role": "user", "content": "Hi"}])
        for _ in self.generate(tokens, 1, {"temperature": 0.0}, (), Generation(len(tokens))):
            pass

    def meta(self) -> dict[str, int]:
        model = self.llm._model
        return {
            "n_ctx": self.n_ctx,
            "n_ctx_train": int(model.n_ctx_train()),
            "n_params": int(model.n_params()),
            "n_vocab": int(self.llm.n_vocab()),
            "size": int(model.size()),
        }

    def tokenize_text(self, text: str, add_special: bool = False) -> list[int]:
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=add_special, special=True))

    def prompt_tokens(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Any] | None = None,
    ) -> list[int]:
        try:
            formatted = self._formatter(messages=cast(Any, list(messages)),
                                        tools=cast(Any, list(tools) if tools else None))
        except Exception as exc:
            raise RequestError(f"cannot format the messages: {exc}", param="messages") from exc
        add_bos = not formatted.added_special
        return list(
            self.llm.tokenize(formatted.prompt.encode("utf-8"), add_bos=add_bos, special=True)
        )

    def check_window(self, prompt_tokens: int, max_tokens: int | None) -> int:
        """The number of tokens to generate; raises OpenAI's overflow error when it won't fit."""
        if max_tokens is None:
            if prompt_tokens >= self.n_ctx:
                raise RequestError(
                    f"This model's maximum context length is {self.n_ctx} tokens. However, your "
                    f"messages resulted in {prompt_tokens} tokens. Please reduce the length of "
                    "the messages.",
                    param="messages",
                    code="context_length_exceeded",
                )
            return self.n_ctx - prompt_tokens
        if prompt_tokens + max_tokens > self.n_ctx:
            raise RequestError(
                f"This model's maximum context length is {self.n_ctx} tokens. However, you "
                f"requested {prompt_tokens + max_tokens} tokens ({prompt_tokens} in the messages, "
                f"{max_tokens} in the completion). Please reduce the length of the messages or "
                "completion.",
                param="messages",
                code="context_length_exceeded",
            )
        return max_tokens

    def generate(
        self,
        tokens: Sequence[int],
        max_tokens: int,
        sampling: Mapping[str, Any],
        stops: Sequence[str],
        result: Generation,
    ) -> Iterator[str]:
        """Yield text pieces as they are decoded; `result` ends with counts and finish reason.

        Text that might be the start of a stop sequence is held back until it is known not
        to be one, so a stop sequence never reaches the client.
        """
        llama_cpp = self._llama_cpp
        vocab = self.llm._model.vocab
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        hold = max((len(s) for s in stops), default=1) - 1
        pending = ""
        if sampling.get("seed") is not None:
            self.llm.set_seed(int(sampling["seed"]))
        started = time.perf_counter()
        first_token_at: float | None = None
        tokens_out = self.llm.generate(
            list(tokens),
            temp=float(sampling.get("temperature", DEFAULT_TEMPERATURE)),
            top_p=float(sampling.get("top_p", DEFAULT_TOP_P)),
            presence_penalty=float(sampling.get("presence_penalty", 0.0)),
            frequency_penalty=float(sampling.get("frequency_penalty", 0.0)),
        )
        try:
            stopped = False
            for token in tokens_out:
                if first_token_at is None:
                    first_token_at = time.perf_counter()
                    result.prompt_seconds = first_token_at - started
                if llama_cpp.llama_vocab_is_eog(vocab, token):
                    result.finish_reason = "stop"
                    break
                result.completion_tokens += 1
                pending += decoder.decode(self.llm.detokenize([token], special=False))
                cut = min((i for i in (pending.find(s) for s in stops) if i >= 0), default=-1)
                if cut >= 0:
                    pending = pending[:cut]
                    result.finish_reason = "stop"
                    stopped = True
                    break
                if result.completion_tokens >= max_tokens:
                    result.finish_reason = "length"
                    break
                safe = len(pending) - hold
                if safe > 0:
                    yield pending[:safe]
                    pending = pending[safe:]
            if not stopped:
                pending += decoder.decode(b"", final=True)
            if pending:
                yield pending
        except GeneratorExit:
            # The consumer went away (the client hung up): generation stops here.
            result.finish_reason = "cancelled"
            raise
        finally:
            tokens_out.close()
            end = time.perf_counter()
            result.generate_seconds = end - (first_token_at or end)
            self.last = result


_CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)


# --- HTTP -------------------------------------------------------------------------------------


def _int_or_none(body: Mapping[str, Any], *names: str) -> int | None:
    for name in names:
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise RequestError(f"'{name}' must be a positive integer", param=name)
        return value
    return None


def _stops(body: Mapping[str, Any]) -> list[str]:
    stop = body.get("stop")
    if stop is None:
        return []
    if isinstance(stop, str):
        return [stop] if stop else []
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        return [s for s in stop if s]
    raise RequestError("'stop' must be a string or an array of strings", param="stop")


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
        max_tokens = _int_or_none(body, "max_completion_tokens", "max_tokens")
        stops = _stops(body)
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
                _hold_tool_calls(pieces, result) if tools else pieces
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


def _hold_tool_calls(pieces: Iterator[str], result: Generation) -> Iterator[str | ToolCalls]:
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


def default_threads() -> int:
    """Half the logical CPUs, at most 4.

    llama.cpp's worker threads spin while they wait for each other, so asking for every core
    on a machine that is busy with something else (the app itself, other programs) collapses
    throughput: measured on a shared 2-core machine, 2 threads gave 1-2 tokens/s where 1
    thread gave 22-36. A 135M model gains little beyond 4 threads.
    """
    return max(1, min(4, (os.cpu_count() or 2) // 2))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="path of the .gguf file")
    parser.add_argument("--name", default="local-model", help="model id served in /v1/models")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--n-ctx", type=int, default=0, help="0 uses the model's trained window")
    parser.add_argument("--threads", type=int, default=default_threads())
    parser.add_argument("--parent-pid", type=int, default=None)
    parser.add_argument("--chat-template", metavar="FILE", default=None,
                        help="a Jinja chat template to use instead of the GGUF's own")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)

    if args.parent_pid is not None:
        watch_parent(args.parent_pid)
    template = None
    if args.chat_template:
        with open(args.chat_template, encoding="utf-8") as f:
            template = f.read()
    engine = Engine(args.model, args.n_ctx, args.threads, args.name, template)
    engine.warm_up()
    server = serve(engine, args.host, args.port, quiet=not args.verbose)
    host, port = server.server_address[:2]
    ready = {"port": port, "host": host, "n_ctx": engine.n_ctx, "model": engine.name,
             "pid": os.getpid()}
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()
    signal.signal(signal.SIGTERM, lambda *_: _exit_now("terminated"))
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever(poll_interval=0.5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
