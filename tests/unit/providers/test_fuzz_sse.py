"""Any server-sent-event stream, however broken (lines that are not JSON, JSON of any shape,
nested thousands deep, events with no data, the stream cut anywhere), ends the turn with the
text that could be read or one line of error, never a traceback, within a stated memory
bound; through litellm over real HTTP from a loopback server."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.fuzz_values import deep_text, json_values
from tests.support.peak_memory import peak_rss_mb
from tests.support.raw_http import RawServer

from treechat.providers.stream import TurnRequest, TurnResult, shutdown_provider_loop, stream_turn

MEMORY_BOUND_MB = 150
pytestmark = pytest.mark.slow


def chunk(delta: object, finish: object = None) -> str:
    return "data: " + json.dumps({
        "id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    })


lines = st.one_of(
    st.builds(lambda t: chunk({"content": t}), st.text(max_size=20)),
    st.builds(chunk, json_values),
    st.builds(lambda v: "data: " + json.dumps(v), json_values),
    st.builds(lambda t: "data: " + t, st.text(max_size=40)),
    st.builds(lambda n, k: "data: " + deep_text(n, k), st.integers(1, 5000),
              st.sampled_from(["list", "dict"])),
    st.sampled_from([": keep-alive", "event: error", "id: 7", "retry: 10", "", "data:",
                     "data: [DONE]", "garbage without a field name", chunk({}, "stop")]),
)


def request(raw: RawServer) -> TurnRequest:
    return TurnRequest(
        model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "hi"}],
        api_base=f"{raw.url}/v1", api_key="sk-fuzz-sse", connect_timeout=10.0,
        idle_timeout=10.0,
    )


@pytest.fixture(scope="module")
def raw() -> Iterator[RawServer]:
    """The server, and the bound: what the fuzzing adds to the peak of a process that has
    already streamed one ordinary reply (litellm and its tokenizers loaded)."""
    import asyncio

    with RawServer() as server:
        server.answer(f"{chunk({'content': 'warm'})}\n\ndata: [DONE]\n\n".encode(),
                      content_type="text/event-stream")
        assert asyncio.run(stream_turn(request(server))).text == "warm"
        gc.collect()
        before = peak_rss_mb()
        yield server
        gc.collect()
        assert peak_rss_mb() - before <= MEMORY_BOUND_MB
    shutdown_provider_loop()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(body=st.lists(lines, max_size=12), cut=st.integers(0, 10_000))
@pytest.mark.asyncio
async def test_a_stream_of_any_lines_gives_text_or_one_line(
    raw: RawServer, body: list[str], cut: int
) -> None:
    stream = "".join(line + "\n\n" for line in body)
    raw.answer(stream.encode()[: cut if cut < len(stream) else None],
               content_type="text/event-stream")
    result = await stream_turn(request(raw))
    assert isinstance(result, TurnResult)
    if result.error is not None:
        assert result.error.message and "\n" not in result.error.message.strip()
