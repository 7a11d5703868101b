"""Model lists read from the servers themselves: an OpenAI-compatible list and Ollama's own
API with each model's window, the Authorization sent only with a key, and a server that is
not there reported in words."""

from __future__ import annotations

import pytest
from tests.support.model_servers import OllamaModel, OllamaServer, OpenAIServer
from tests.unit.providers.local.test_server_detection import free_port

from treechat.providers.connections import Connection, ConnectionModel, ConnectionProblem
from treechat.providers.model_lists import (
    _ollama_window,
    fetch_embedding_models,
    fetch_models,
    list_client,
    request_headers,
)


def test_authorization_only_with_a_key() -> None:
    conn = Connection("lab", "openai-compatible", headers=(("X-Team", "blue"),))
    assert request_headers(conn, None) == {"X-Team": "blue"}
    assert request_headers(conn, "") == {"X-Team": "blue"}
    assert request_headers(conn, "sk-1")["Authorization"] == "Bearer sk-1"


def test_ollama_serves_the_smaller_of_its_trained_and_configured_window() -> None:
    shown = {"model_info": {"qwen2.context_length": 32768}, "parameters": "num_ctx 8192\n"}
    assert _ollama_window(shown) == 8192
    assert _ollama_window({"model_info": {"qwen2.context_length": 32768}}) == 32768
    assert _ollama_window({"parameters": 'stop "x"'}) is None
    assert _ollama_window("not json") is None


@pytest.mark.asyncio
async def test_an_openai_compatible_server_lists_its_models_with_the_key() -> None:
    server = OpenAIServer([{"id": "b-model", "object": "model"},
                                  {"id": "a-model", "object": "model"}])
    try:
        connection = Connection("lab", "openai-compatible", base_url=f"{server.url}/v1")
        async with list_client() as client:
            models = await fetch_models(connection, client, "sk-lab")
        assert {m.name for m in models} == {"a-model", "b-model"}
        assert server.hits[-1].headers.get("Authorization") == "Bearer sk-lab"
    finally:
        server.stop()


@pytest.mark.asyncio
async def test_ollama_lists_its_models_with_the_window_each_serves() -> None:
    server = OllamaServer([OllamaModel("llama3.2:3b", context_length=131_072, num_ctx=16_384),
                           OllamaModel("bge-m3:latest", 8192, architecture="bert",
                                       capabilities=("embedding",))])
    try:
        connection = Connection("ollama", "ollama", base_url=server.url)
        async with list_client() as client:
            models = await fetch_models(connection, client)
            embedders = await fetch_embedding_models(connection, client)
        assert models == (ConnectionModel("llama3.2:3b", window=16_384),)  # bge-m3 cannot chat
        assert embedders == ("bge-m3:latest",)  # though its name does not say "embed"
    finally:
        server.stop()


@pytest.mark.asyncio
async def test_nothing_listening_is_said_in_words() -> None:
    port = free_port()
    connection = Connection("lab", "openai-compatible", base_url=f"http://127.0.0.1:{port}/v1")
    async with list_client(2.0) as client:
        with pytest.raises(ConnectionProblem, match=f"nothing is listening on 127.0.0.1:{port}"):
            await fetch_models(connection, client)
