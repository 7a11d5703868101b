"""What a server streams is kept as text that can be stored: a piece holding half of a
surrogate pair, a number where text belongs or no text at all streams on, and the reply is
written (it ended the send in a traceback when the draft was journaled)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from tests.support.raw_http import RawServer

from treechat.providers.stream import TurnRequest, shutdown_provider_loop, stream_turn

ODD = (b'data: {"choices":[{"delta":{"content":"lone \\ud800 half"}}]}\n\n'
       b'data: {"choices":[{"delta":{"content":null}}]}\n\n'
       b'data: {"choices":[]}\n\n'
       b'data: {"choices":[{"delta":{"content":" and \\udfff"}}]}\n\n'
       b'data: {"choices":[{"delta":{"content":""},"finish_reason":"stop"}]}\n\n'
       b"data: [DONE]\n\n")


@pytest.fixture(scope="module")
def provider_thread() -> Iterator[None]:
    yield
    shutdown_provider_loop()
    gc.collect()


@pytest.mark.asyncio
@pytest.mark.usefixtures("provider_thread")
async def test_half_surrogates_in_a_stream_become_replacement_characters() -> None:
    server = RawServer()
    server.route("/v1/chat/completions", ODD, content_type="text/event-stream")
    try:
        result = await stream_turn(TurnRequest(
            model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "hi"}],
            api_base=f"{server.url}/v1", api_key="sk-test-text"))
    finally:
        server.stop()
    assert result.error is None
    assert result.text == "lone \ufffd half and \ufffd"
    result.text.encode("utf-8")  # a file or the store can hold it
