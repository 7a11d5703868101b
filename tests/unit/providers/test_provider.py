"""The one seam between the services and a model: litellm's provider streams a turn through
real HTTP to the loopback server, lists a server's models with the connection's own time
limit, and estimates a request's tokens; the test double is a `Provider` too."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from tests.support.fake_provider import FakeProvider
from tests.support.loopback_server import LoopbackProvider, Reply
from tests.support.model_servers import OpenAIServer

from treechat.providers.connections import Connection
from treechat.providers.provider import LiteLLMProvider, Provider
from treechat.providers.stream import TextDelta, TurnRequest, shutdown_provider_loop


@pytest.fixture(scope="module")
def provider_thread() -> Iterator[None]:
    yield
    shutdown_provider_loop()
    gc.collect()


def test_the_real_provider_and_the_double_are_both_providers() -> None:
    assert isinstance(LiteLLMProvider(), Provider)
    assert isinstance(FakeProvider(), Provider)


@pytest.mark.asyncio
@pytest.mark.usefixtures("provider_thread")
async def test_a_turn_streams_its_text_as_events_and_returns_it(
        loopback: LoopbackProvider) -> None:
    loopback.queue(Reply(text="Roots, trunk and leaves."))
    seen: list[str] = []
    result = await LiteLLMProvider().stream_turn(
        TurnRequest("openai/gpt-4o-mini", [{"role": "user", "content": "What is a tree?"}],
                    api_base=loopback.openai_base, api_key="sk-test-0123"),
        on_event=lambda e: seen.append(e.text) if isinstance(e, TextDelta) else None,
    )
    assert result.ok and result.text == "Roots, trunk and leaves."
    assert "".join(seen) == result.text


@pytest.mark.asyncio
async def test_models_are_listed_from_the_connections_server() -> None:
    server = OpenAIServer([{"id": "lab-model", "object": "model"}])
    try:
        connection = Connection("lab", "openai-compatible", base_url=f"{server.url}/v1",
                                timeout=5.0)
        models = await LiteLLMProvider().list_models(connection)
        assert [m.name for m in models] == ["lab-model"]
    finally:
        server.stop()


def test_a_longer_request_is_estimated_at_more_tokens() -> None:
    provider = LiteLLMProvider()
    short = provider.count_tokens("openai/gpt-4o", [{"role": "user", "content": "Hi"}])
    long = provider.count_tokens("openai/gpt-4o",
                                 [{"role": "user", "content": "Hi there, " * 200}])
    assert 0 < short < long
