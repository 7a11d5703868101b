"""A loopback HTTP server that answers every request with bytes the test chooses, the way a
hostile or broken peer would: a given body, a stall after the headers, a trickle of one piece
at a time, an endless body, a body longer than its declared length, a body whose connection
is held open after it.

`RawServer.answer(...)` sets what the next requests get (`route(path, ...)` what requests
to one path get); `url` is where it listens.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    body: bytes = b""
    status: int = 200
    content_type: str = "application/json"
    stall_s: float = 0.0  # silent this long after the headers (the connection held)
    piece_every_s: float = 0.0  # the body in pieces of `piece_bytes`, one each interval
    piece_bytes: int = 1
    endless: bool = False  # the body again and again, never ending
    declared: int | None = None  # a content-length that need not be the body's
    headers: tuple[tuple[str, str], ...] = ()  # more headers, as given
    hold_s: float = 0.0  # after the body, the connection held open this long, not ended


class RawServer:
    def __init__(self) -> None:
        self.answer_with = Answer()
        self.routes: dict[str, Answer] = {}
        self.requests: list[str] = []
        self.sent: dict[str, int] = {}  # body bytes written, by path
        self._stopping = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                server._serve(self)

            def do_HEAD(self) -> None:
                server._serve(self, body=False)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                if length:
                    self.rfile.read(length)
                server._serve(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def answer(self, body: bytes | str = b"", **kwargs: Any) -> None:
        raw = body.encode() if isinstance(body, str) else body
        self.answer_with = Answer(body=raw, **kwargs)

    def route(self, path: str, body: bytes | str = b"", **kwargs: Any) -> None:
        raw = body.encode() if isinstance(body, str) else body
        self.routes[path] = Answer(body=raw, **kwargs)

    def _pieces(self, answer: Answer) -> Iterator[bytes]:
        while True:
            if answer.piece_every_s:
                for start in range(0, len(answer.body), answer.piece_bytes):
                    yield answer.body[start : start + answer.piece_bytes]
            elif answer.body:
                yield answer.body
            if not answer.endless or not answer.body:
                return

    def _serve(self, handler: BaseHTTPRequestHandler, *, body: bool = True) -> None:
        self.requests.append(handler.path)
        answer = self.routes.get(handler.path.split("?")[0], self.answer_with)
        handler.send_response(answer.status)
        handler.send_header("content-type", answer.content_type)
        for name, value in answer.headers:
            handler.send_header(name, value)
        chunked = answer.endless or (answer.piece_every_s > 0 and answer.declared is None)
        if answer.declared is not None:
            handler.send_header("content-length", str(answer.declared))
        elif chunked:
            handler.send_header("transfer-encoding", "chunked")
        else:
            handler.send_header("content-length", str(len(answer.body)))
        handler.send_header("connection", "close")
        handler.end_headers()
        handler.close_connection = True
        try:
            handler.wfile.flush()
            if not body:
                return
            if answer.stall_s and self._stopping.wait(answer.stall_s):
                return
            for piece in self._pieces(answer):
                if self._stopping.is_set():
                    return
                if chunked:
                    handler.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                else:
                    handler.wfile.write(piece)
                path = handler.path.split("?")[0]
                self.sent[path] = self.sent.get(path, 0) + len(piece)
                handler.wfile.flush()
                if answer.piece_every_s:
                    time.sleep(answer.piece_every_s)
            if answer.hold_s and self._stopping.wait(answer.hold_s):
                return
            if chunked:
                handler.wfile.write(b"0\r\n\r\n")
                handler.wfile.flush()
        except (TimeoutError, BrokenPipeError, ConnectionResetError, OSError):
            return

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
