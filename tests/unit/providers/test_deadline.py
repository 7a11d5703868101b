"""A provider that never answers fails the turn after the connection's first-byte timeout
with a clear error, instead of holding it for ten minutes; one that starts and then falls
silent fails after the silence bound, one that never stops after the total bound, each with
what streamed kept; a slow but talking one is not cut."""

from __future__ import annotations

import gc
import socket
import threading
from collections.abc import Iterator

import pytest
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.providers import deadline
from treechat.providers.errors import ErrorKind
from treechat.providers.stream import TurnRequest, shutdown_provider_loop, stream_turn


@pytest.fixture(scope="module")
def provider_thread() -> Iterator[None]:
    yield
    shutdown_provider_loop()
    gc.collect()


@pytest.fixture
def silent_server() -> Iterator[str]:
    """Accepts connections, reads the request, and never sends a byte back."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()


def request(api_base: str, timeout: float | None, *, idle: float | None = None,
            total: float | None = None) -> TurnRequest:
    return TurnRequest(
        model="openai/gpt-4o-mini",
        messages=[{"role": "user", "content": "hello?"}],
        api_base=api_base,
        api_key="sk-test-deadline",
        connect_timeout=timeout,
        idle_timeout=idle,
        total_timeout=total,
    )


@pytest.mark.asyncio
@pytest.mark.usefixtures("provider_thread")
async def test_a_silent_server_fails_the_turn_after_the_first_byte_timeout(
    silent_server: str,
) -> None:
    result = await stream_turn(request(silent_server, 0.5))
    assert result.error is not None
    assert result.error.kind is ErrorKind.OFFLINE and result.error.retry
    assert "No answer from 127.0.0.1" in result.error.message
    assert "within 0.5 s" in result.error.message
    assert result.text == ""


@pytest.mark.asyncio
@pytest.mark.usefixtures("provider_thread")
async def test_a_slow_stream_is_not_cut_once_it_has_started(loopback: LoopbackProvider) -> None:
    """Forty pieces at eight a second: five seconds of streaming under a two-second
    first-byte timeout, and all of it arrives."""
    text = " ".join(f"w{i}" for i in range(40))
    loopback.queue(Reply(text=text, tokens_per_second=8))
    result = await stream_turn(request(loopback.openai_base, 2.0))
    assert result.error is None, result.error
    assert result.text == text


@pytest.mark.asyncio
@pytest.mark.usefixtures("provider_thread")
async def test_a_server_that_falls_silent_mid_answer_ends_after_the_silence_bound(
    loopback: LoopbackProvider,
) -> None:
    loopback.queue(Reply(text="one two three four five six", pause_after=3))
    result = await stream_turn(request(loopback.openai_base, 5.0, idle=2.0))
    assert result.error is not None
    assert result.error.kind is ErrorKind.OFFLINE and result.error.retry
    assert "stopped sending for 2 s" in result.error.message
    assert "the reply so far is kept" in result.error.message
    assert result.text == "one two three"


@pytest.mark.asyncio
@pytest.mark.usefixtures("provider_thread")
async def test_a_server_that_never_ends_its_answer_ends_after_the_total_bound(
    loopback: LoopbackProvider,
) -> None:
    """Pieces keep coming (so the silence bound never fires); the total one does."""
    loopback.queue(Reply(text="again and again", endless=True, tokens_per_second=200))
    result = await stream_turn(request(loopback.openai_base, 5.0, idle=5.0, total=1.0))
    assert result.error is not None
    assert "still answering after 1 s" in result.error.message
    assert result.text.startswith("again and again")


def test_silence_and_total_defaults() -> None:
    assert deadline.between_chunks_timeout(None, "https://api.example.com/v1") == 90.0
    assert deadline.between_chunks_timeout(None, "http://127.0.0.1:8080/v1") == 120.0
    assert deadline.between_chunks_timeout(3.0, "http://127.0.0.1:8080/v1") == 3.0
    assert deadline.total_timeout(None) == 1800.0
    assert deadline.total_timeout(60.0) == 60.0


def test_defaults_never_exceed_two_minutes() -> None:
    assert deadline.first_byte_timeout(None, "https://api.example.com/v1") == 30.0
    assert deadline.first_byte_timeout(None, None) == 30.0
    # a server on this machine may be loading a model first
    assert deadline.first_byte_timeout(None, "http://127.0.0.1:8080/v1") == 120.0
    assert deadline.first_byte_timeout(None, "http://localhost:11434") == 120.0
    assert max(deadline.FIRST_BYTE_TIMEOUT_S, deadline.LOCAL_FIRST_BYTE_TIMEOUT_S) <= 120.0
    # a connection's own setting wins, longer or shorter
    assert deadline.first_byte_timeout(600.0, "http://127.0.0.1:8080/v1") == 600.0
    assert deadline.first_byte_timeout(5.0, "https://api.example.com/v1") == 5.0


@pytest.mark.asyncio
@pytest.mark.usefixtures("provider_thread")
async def test_a_reply_longer_than_any_model_writes_is_stopped_and_kept(
    loopback: LoopbackProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    from treechat.providers import stream

    monkeypatch.setattr(stream, "MAX_REPLY_CHARS", 2000)
    loopback.queue(Reply(text="more and more", endless=True))
    result = await stream_turn(request(loopback.openai_base, 5.0))
    assert result.error is not None and not result.error.retry
    assert "in one reply, more than any model writes" in result.error.message
    assert 2000 < len(result.text) < 2100
