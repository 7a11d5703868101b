"""A stream with lines that are not valid data is not taken as whole: the lines are counted
and logged, and the result says so (the chat marks the reply)."""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.providers import sse_guard
from treechat.providers.stream import TurnRequest, shutdown_provider_loop, stream_turn


@pytest.fixture(scope="module")
def provider_thread() -> Iterator[None]:
    yield
    shutdown_provider_loop()
    gc.collect()


def chunk(content: str | None = None, finish: str | None = None) -> str:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [
            {"index": 0, "delta": {"content": content} if content else {}, "finish_reason": finish}
        ],
    }
    return f"data: {json.dumps(body)}\n\n"


GARBLED = [
    ": keep-alive\n\n",  # an SSE comment: fine
    chunk("Hello "),
    "data: {not json at all\n\n",
    "garbage without a field name\n\n",
    chunk("world"),
    chunk(None, "stop"),
    "data: [DONE]\n\n",
]


@pytest.fixture
def garbled_server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for line in GARBLED:
                self.wfile.write(line.encode())
                self.wfile.flush()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()


def request(api_base: str) -> TurnRequest:
    return TurnRequest(
        model="openai/gpt-4o-mini",
        messages=[{"role": "user", "content": "hi"}],
        api_base=api_base,
        api_key="sk-test-sse",
    )


@pytest.mark.asyncio
@pytest.mark.usefixtures("provider_thread")
async def test_unreadable_lines_are_counted_and_logged(
    garbled_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING", logger="treechat.providers.stream"):
        result = await stream_turn(request(garbled_server))
    assert result.error is None
    assert result.text == "Hello world"
    assert result.unreadable_lines == 2
    assert any("could not be read" in r.getMessage() for r in caplog.records)


@pytest.mark.asyncio
@pytest.mark.usefixtures("provider_thread")
async def test_a_clean_stream_counts_nothing(loopback: LoopbackProvider) -> None:
    loopback.queue(Reply(text="All fine here."))
    result = await stream_turn(request(loopback.openai_base))
    assert result.error is None and result.text == "All fine here."
    assert result.unreadable_lines == 0


@pytest.mark.parametrize(
    ("line", "bad"),
    [
        ("data: {oops", True),
        ("plain words", True),
        (": comment", False),
        ("event: ping", False),
        ("data: [DONE]", False),
        ("", False),
    ],
)
def test_what_counts_as_unreadable(line: str, bad: bool) -> None:
    assert sse_guard.is_unreadable(line, None) is bad
    assert sse_guard.is_unreadable(line, {"parsed": True}) is False


@pytest.mark.asyncio
@pytest.mark.usefixtures("provider_thread")
async def test_a_line_that_never_ends_is_stopped_at_the_cap_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.support.raw_http import RawServer

    monkeypatch.setattr(sse_guard, "MAX_LINE_CHARS", 200_000)
    server = RawServer()
    # `data: {"choices": [{"delta": {"content": "aaaa…` and never a line break
    server.route("/v1/chat/completions",
                 b'data: {"choices": [{"delta": {"content": "' + b"a" * 65_536,
                 content_type="text/event-stream", endless=True)
    try:
        result = await stream_turn(request(f"{server.url}/v1"))
    finally:
        server.stop()
    assert result.error is not None and not result.error.retry
    assert "sent a line of more than 200,000 characters in its stream" in result.error.message
    assert result.text == ""


@pytest.mark.asyncio
@pytest.mark.usefixtures("provider_thread")
async def test_a_stream_ends_at_its_end_marker_though_the_server_holds_on() -> None:
    """A server that sends `data: [DONE]` and keeps the connection open: the reply is whole
    at the marker (before, it waited for the idle bound, two minutes, holding the reply)."""
    import asyncio

    from tests.support.raw_http import RawServer

    server = RawServer()
    body = "".join([chunk("Hello "), chunk("world"), chunk(None, "stop"), "data: [DONE]\n\n"])
    server.route("/v1/chat/completions", body, content_type="text/event-stream",
                 piece_every_s=0.001, piece_bytes=len(body), hold_s=600)
    try:
        result = await asyncio.wait_for(stream_turn(request(f"{server.url}/v1")), timeout=60)
    finally:
        server.stop()
    assert result.error is None, result.error
    assert result.text == "Hello world"


@pytest.mark.parametrize(("line", "end"), [
    ("data: [DONE]", True), ("data:[DONE]\n", True), ("  data: [DONE]  ", True),
    ("data: {\"x\": \"[DONE]\"}", False), ("[DONE]", False), (b"data: [DONE]", False),
])
def test_what_counts_as_the_end_marker(line: object, end: bool) -> None:
    assert sse_guard.is_end_marker(line) is end
