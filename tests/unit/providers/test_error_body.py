"""An error answer is read up to a cap: a server answering HTTP 500 with a body that never
ends (or one of many megabytes) gives its failure at once, with the first of its words, and
the rest is never read."""

from __future__ import annotations

import gc
import gzip
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from tests.support.raw_http import RawServer

from treechat.providers import error_body
from treechat.providers.errors import ErrorKind
from treechat.providers.stream import TurnRequest, shutdown_provider_loop, stream_turn


@pytest.fixture(scope="module")
def provider_thread() -> Iterator[None]:
    yield
    shutdown_provider_loop()
    gc.collect()


def request(api_base: str, *, key: str | None = "sk-test-errors") -> TurnRequest:
    # a short first-byte bound: an error body read until it ends would be stopped by it
    return TurnRequest(model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "hi"}],
                       api_base=api_base, api_key=key, connect_timeout=20.0)


@pytest.mark.asyncio
@pytest.mark.usefixtures("provider_thread")
@pytest.mark.parametrize("key", ["sk-test-errors", None], ids=["with a key", "keyless"])
async def test_an_endless_error_body_ends_in_the_servers_failure(key: str | None) -> None:
    server = RawServer()
    server.route("/v1/chat/completions",
                 b'{"error": {"message": "overloaded ' + b"E" * 65_536,
                 status=500, endless=True)
    try:
        result = await stream_turn(request(f"{server.url}/v1", key=key))
    finally:
        server.stop()
    assert result.error is not None
    # the server's own failure, not the deadline's "No answer from ... within 20 s"
    assert result.error.kind is ErrorKind.SERVER, result.error.message
    assert result.text == ""
    # read up to the cap and let go: a few socket buffers, not the gigabytes read before
    assert server.sent["/v1/chat/completions"] < 32 * 2**20


class _Pieces(httpx.AsyncByteStream):
    """A body as a server's connection gives it: piece by piece, counting what was taken."""

    def __init__(self, pieces: list[bytes], read: list[int]) -> None:
        self._pieces, self._read = pieces, read

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._pieces:
            self._read.append(len(piece))
            yield piece


def _response(status: int, pieces: list[bytes], read: list[int],
              headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers or {}, stream=_Pieces(pieces, read),
                          request=httpx.Request("POST", "http://127.0.0.1:9/v1/x"))


@pytest.mark.asyncio
async def test_an_error_body_is_cut_at_the_cap_and_the_rest_left_unread() -> None:
    read: list[int] = []
    pieces = [b"x" * 65_536] * 64  # 4 MB
    capped = await error_body.capped_error(_response(503, pieces, read), cap=100_000)
    body = await capped.aread()
    assert body.startswith(b"x" * 100_000) and body.endswith(error_body.CUT_MARK)
    assert len(body) == 100_000 + len(error_body.CUT_MARK)
    assert sum(read) < 4 * 65_536  # two pieces past the cap at most, never the 4 MB
    assert capped.status_code == 503


@pytest.mark.asyncio
async def test_a_compressed_error_body_is_capped_as_decoded() -> None:
    bomb = gzip.compress(b"\0" * (64 << 20))  # 64 MB of zeros in ~64 KB
    read: list[int] = []
    pieces = [bomb[i:i + 4096] for i in range(0, len(bomb), 4096)]
    capped = await error_body.capped_error(
        _response(500, pieces, read, {"content-encoding": "gzip"}), cap=50_000)
    body = await capped.aread()
    assert body == b"\0" * 50_000 + error_body.CUT_MARK
    assert "content-encoding" not in capped.headers


@pytest.mark.asyncio
async def test_a_short_error_and_a_success_pass_unchanged() -> None:
    read: list[int] = []
    short = await error_body.capped_error(_response(429, [b'{"error": "slow down"}'], read))
    assert await short.aread() == b'{"error": "slow down"}'
    ok = _response(200, [b"data: 1\n\n"] * 3, read := [])
    assert await error_body.capped_error(ok) is ok
    assert read == []  # a success's stream is left for its reader


def test_installing_twice_wraps_once() -> None:
    class Handler:
        @staticmethod
        def create_async_transport() -> httpx.AsyncBaseTransport:
            return httpx.AsyncHTTPTransport()

        _create_async_transport = create_async_transport

    error_body.install(Handler)
    once = Handler.__dict__["create_async_transport"]
    error_body.install(Handler)
    assert Handler.__dict__["create_async_transport"] is once
    transport = Handler.create_async_transport()
    assert isinstance(transport, httpx.AsyncHTTPTransport)  # the class litellm checks, kept
    assert getattr(transport, "_treechat_error_body_cap", False)


@pytest.mark.asyncio
@pytest.mark.usefixtures("provider_thread")
async def test_a_redirect_loop_and_an_endless_header_say_what_they_are() -> None:
    """Both were "The provider had a problem on its side", offered to retry: a redirect loop
    is an address to check, a header past what a client reads is no passing trouble."""
    server = RawServer()
    server.route("/v1/chat/completions", status=302,
                 headers=(("location", "/v1/chat/completions"),))
    try:
        looped = await stream_turn(request(f"{server.url}/v1"))
        server.route("/v1/chat/completions", b"data: [DONE]\n\n",
                     content_type="text/event-stream", headers=(("x-big", "a" * 200_000),))
        big = await stream_turn(request(f"{server.url}/v1"))
    finally:
        server.stop()
    assert looped.error is not None and not looped.error.retry
    assert looped.error.kind is ErrorKind.OFFLINE
    assert "too many redirects" in looped.error.message
    assert "Check the server address" in looped.error.message
    assert big.error is not None and not big.error.retry
    assert "a header of it is longer than any client accepts" in big.error.message
