"""An embedding server on 127.0.0.1 that speaks OpenAI `/v1/embeddings` and Ollama's
`/api/embed`, with deterministic vectors: a hashed bag of words (each word adds one to a
dimension picked by its hash). Texts sharing words come out close, paraphrases do not: tests
claim only what such a model does. `behaviour` makes it stall or send a body with no end.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

DIMENSIONS = 512
Behaviour = Literal["answer", "stall", "huge", "error"]


def bag_of_words(text: str, ndim: int = DIMENSIONS) -> list[float]:
    vector = [0.0] * ndim
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        vector[int(hashlib.sha1(word.encode()).hexdigest(), 16) % ndim] += 1.0
    vector[0] += 0.01  # never all zeros
    return vector


# What Ollama lists (name: family, the capabilities `/api/show` gives; None: a server from
# before it gave them)
OLLAMA_MODELS: dict[str, tuple[str, list[str] | None]] = {
    "nomic-embed-text:latest": ("nomic-bert", ["embedding"]),
    "bge-m3:latest": ("bert", ["embedding"]),
    "all-minilm:l6-v2": ("bert", None),
    "llama3.2": ("llama", ["completion", "tools"]),
}


class EmbeddingServer:
    def __init__(self, ndim: int = DIMENSIONS) -> None:
        self.ndim = ndim
        self.behaviour: Behaviour = "answer"
        self.requests: list[dict[str, Any]] = []
        self.stop = threading.Event()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                if self.path == "/api/tags":
                    self._send(200, {"models": [
                        {"name": name, "model": name, "details": {"family": family}}
                        for name, (family, _) in OLLAMA_MODELS.items()]})
                elif self.path in ("/api/v0/models", "/v1/models"):
                    self._send(200, {"object": "list", "data": [
                        {"id": "text-embedding-nomic", "type": "embeddings"},
                        {"id": "bge-small-en", "type": "embeddings"},
                        {"id": "qwen2.5-7b-instruct", "type": "llm"}]})
                else:
                    self._send(404, {"error": "no such path"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path == "/api/show":
                    family, capabilities = OLLAMA_MODELS.get(body.get("model"), ("", None))
                    shown: dict[str, Any] = {"model_info": {}, "details": {"family": family}}
                    if capabilities is not None:
                        shown["capabilities"] = capabilities
                    self._send(200, shown)
                    return
                server.requests.append({"path": self.path, **body})
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                if server.behaviour == "stall":
                    server.stop.wait(30)
                    return
                if server.behaviour == "error":
                    self._send(404, {"error": f"model {body['model']!r} not found"})
                    return
                if server.behaviour == "huge":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    chunk = b" " * 65536
                    while not server.stop.is_set():
                        try:
                            self.wfile.write(chunk)
                        except OSError:
                            return
                        time.sleep(0)
                    return
                vectors = [bag_of_words(t, server.ndim) for t in texts]
                if self.path == "/api/embed":
                    self._send(200, {"model": body["model"], "embeddings": vectors})
                elif self.path == "/v1/embeddings":
                    # out of order, as the index field allows
                    data = [{"object": "embedding", "index": i, "embedding": v}
                            for i, v in enumerate(vectors)][::-1]
                    self._send(200, {"object": "list", "data": data, "model": body["model"]})
                else:
                    self._send(404, {"error": "no such path"})

            def _send(self, status: int, payload: Any) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        return Handler

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self.stop.set()
        self._http.shutdown()
        self._http.server_close()


@contextmanager
def embedding_server(ndim: int = DIMENSIONS) -> Iterator[EmbeddingServer]:
    server = EmbeddingServer(ndim)
    server.start()
    try:
        yield server
    finally:
        server.close()
