"""Model servers on 127.0.0.1 that speak what real ones do, for the connection tests.

`OpenAIServer` is the loopback provider plus `GET /v1/models` and, optionally, a key it
insists on (401 in OpenAI's words otherwise). `OllamaServer` speaks Ollama's own API:
`GET /api/tags`, `POST /api/show` (the model's context length) and `POST /api/chat`, which
litellm's `ollama_chat/` models stream from as NDJSON. Both record every request with its
headers, so a test can say which server a turn reached and with which Authorization.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.loopback_server import (
    DEFAULT_TEXT,
    LoopbackProvider,
    _openai_prompt,
    _pieces,
    count_tokens,
)


@dataclass
class Hit:
    """One request as it arrived at a model server."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any = None

    @property
    def authorization(self) -> str | None:
        for key, value in self.headers.items():
            if key.lower() == "authorization":
                return value
        return None


class OpenAIServer(LoopbackProvider):
    """The loopback provider with a model list, and a key it may require."""

    def __init__(
        self,
        models: Sequence[dict[str, Any]] = ({"id": "lab-model", "object": "model"},),
        *,
        required_key: str | None = None,
        window: int = 128_000,
        props: dict[str, Any] | None = None,
    ) -> None:
        self.models = list(models)
        self.required_key = required_key
        self.props = props
        self.hits: list[Hit] = []
        super().__init__(window=window)

    def chat_hits(self) -> list[Hit]:
        return [h for h in self.hits if h.path.endswith("/chat/completions")]

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        base = super()._handler_class()
        server = self

        class Handler(base):  # type: ignore[valid-type, misc]
            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                server.hits.append(Hit("GET", path, dict(self.headers.items())))
                if not server._authorized(self):
                    self._send_json(401, server._no_key_body())
                elif path == "/v1/models":
                    self._send_json(200, {"object": "list", "data": server.models})
                elif path == "/props" and server.props is not None:
                    self._send_json(200, server.props)
                else:
                    self._send_json(404, {"error": {"message": f"no route {path}"}})

            def do_POST(self) -> None:
                path = self.path.split("?")[0]
                server.hits.append(Hit("POST", path, dict(self.headers.items())))
                if not server._authorized(self):
                    length = int(self.headers.get("content-length", "0"))
                    if length:
                        self.rfile.read(length)
                    self._send_json(401, server._no_key_body())
                    return
                super().do_POST()

        return Handler

    def _authorized(self, handler: BaseHTTPRequestHandler) -> bool:
        if self.required_key is None:
            return True
        return handler.headers.get("Authorization") == f"Bearer {self.required_key}"

    @staticmethod
    def _no_key_body() -> dict[str, Any]:
        return {
            "error": {
                "message": "You didn't provide an API key. You need to provide your API key "
                "in an Authorization header using Bearer auth.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        }


@dataclass
class OllamaModel:
    name: str
    context_length: int = 131_072
    num_ctx: int | None = None  # a `PARAMETER num_ctx` in the model file
    architecture: str = "llama"
    capabilities: tuple[str, ...] = ("completion", "tools")  # ("embedding",): it only embeds


@dataclass
class OllamaChat:
    """One `/api/chat` request and what was answered."""

    body: dict[str, Any]
    headers: dict[str, str]
    prompt_tokens: int = 0
    output_tokens: int = 0
    done: threading.Event = field(default_factory=threading.Event)


class OllamaServer:
    """Ollama's own API on a free loopback port (or the one given)."""

    def __init__(self, models: Sequence[OllamaModel] = (OllamaModel("llama3.2:3b"),),
                 port: int = 0, reply: str = DEFAULT_TEXT) -> None:
        self.models = list(models)
        self.reply = reply
        self.hits: list[Hit] = []
        self.chats: list[OllamaChat] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def model(self, name: str) -> OllamaModel | None:
        for m in self.models:
            if name in (m.name, m.name.removesuffix(":latest")):
                return m
        return None

    def _tags(self) -> dict[str, Any]:
        return {
            "models": [
                {
                    "name": m.name,
                    "model": m.name,
                    "modified_at": "2025-01-01T00:00:00Z",
                    "size": 2019393189,
                    "digest": "a80c4f17acd5" * 5,
                    "details": {"format": "gguf", "family": m.architecture,
                                "parameter_size": "3.2B", "quantization_level": "Q4_K_M"},
                }
                for m in self.models
            ]
        }

    def _show(self, m: OllamaModel) -> dict[str, Any]:
        parameters = 'stop "<|eot_id|>"'
        if m.num_ctx:
            parameters += f"\nnum_ctx {m.num_ctx}"
        return {
            "modelfile": f"FROM {m.name}",
            "parameters": parameters,
            "template": "{{ .Prompt }}",
            "details": {"format": "gguf", "family": m.architecture},
            "model_info": {
                "general.architecture": m.architecture,
                f"{m.architecture}.context_length": m.context_length,
                f"{m.architecture}.embedding_length": 3072,
            },
            "capabilities": list(m.capabilities),
        }

    def _stream(self, chat: OllamaChat) -> Iterator[dict[str, Any]]:
        model = chat.body.get("model", "")
        started = time.perf_counter_ns()
        for piece in _pieces(self.reply):
            yield {
                "model": model,
                "created_at": datetime.now(UTC).isoformat(),
                "message": {"role": "assistant", "content": piece},
                "done": False,
            }
        yield {
            "model": model,
            "created_at": datetime.now(UTC).isoformat(),
            "message": {"role": "assistant", "content": ""},
            "done_reason": "stop",
            "done": True,
            "total_duration": time.perf_counter_ns() - started,
            "load_duration": 1000,
            "prompt_eval_count": chat.prompt_tokens,
            "prompt_eval_duration": 1000,
            "eval_count": chat.output_tokens,
            "eval_duration": 1000,
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                server.hits.append(Hit("GET", path, dict(self.headers.items())))
                if path == "/api/tags":
                    self._json(200, server._tags())
                elif path in ("/", "/api/version"):
                    self._json(200, {"version": "0.6.5"})
                else:
                    self._json(404, {"error": "404 page not found"})

            def do_POST(self) -> None:
                path = self.path.split("?")[0]
                length = int(self.headers.get("content-length", "0"))
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    body = {}
                server.hits.append(Hit("POST", path, dict(self.headers.items()), body))
                name = str(body.get("model") or body.get("name") or "")
                model = server.model(name)
                if path == "/api/show":
                    if model is None:
                        self._json(404, {"error": f"model '{name}' not found"})
                    else:
                        self._json(200, server._show(model))
                elif path == "/api/chat":
                    if model is None:
                        missing = f'model "{name}" not found, try pulling it first'
                        self._json(404, {"error": missing})
                        return
                    self._chat(body)
                else:
                    self._json(404, {"error": "404 page not found"})

            def _chat(self, body: dict[str, Any]) -> None:
                chat = OllamaChat(body, dict(self.headers.items()))
                chat.prompt_tokens = len(_openai_prompt(body).tokens)
                chat.output_tokens = count_tokens(server.reply)
                with server._lock:
                    server.chats.append(chat)
                try:
                    if body.get("stream", True) is False:
                        final = list(server._stream(chat))
                        text = "".join(p["message"]["content"] for p in final)
                        self._json(200, {**final[-1], "message": {"role": "assistant",
                                                                   "content": text}})
                        return
                    self.send_response(200)
                    self.send_header("Content-Type", "application/x-ndjson")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for line in server._stream(chat):
                        raw = (json.dumps(line) + "\n").encode()
                        self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                finally:
                    chat.done.set()

        return Handler
