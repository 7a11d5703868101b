"""Detecting Ollama and LM Studio / llama.cpp, played by small loopback HTTP servers of our own."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from treechat.providers.local_servers import (
    DEFAULT_SERVERS,
    LM_STUDIO,
    OLLAMA,
    LocalServerModel,
    LocalServers,
    ServerSpec,
    ServerStatus,
)


class FakeServer:
    """A loopback HTTP server answering fixed JSON per path; can be stopped mid-test."""

    def __init__(self, routes: dict[str, Any], port: int = 0) -> None:
        self.routes = routes
        self.hits: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.hits.append(self.path)
                body = outer.routes.get(self.path)
                if body is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


OLLAMA_TAGS = {
    "models": [
        {"name": "llama3.2:latest", "model": "llama3.2:latest", "size": 2019393189},
        {"name": "qwen2.5:7b", "model": "qwen2.5:7b", "size": 4683087332},
    ]
}
LMSTUDIO_MODELS = {
    "object": "list",
    "data": [
        {"id": "qwen2.5-7b-instruct", "object": "model", "owned_by": "organization_owner"},
        {"id": "text-embedding-nomic-embed-text-v1.5", "object": "model"},
    ],
}
LLAMACPP_MODELS = {
    "object": "list",
    "data": [{"id": "gemma-3-1b", "object": "model", "meta": {"n_ctx_train": 32768}}],
}


@pytest.fixture
def ollama() -> Iterator[FakeServer]:
    server = FakeServer({"/api/tags": OLLAMA_TAGS})
    yield server
    server.stop()


@pytest.fixture
def lmstudio() -> Iterator[FakeServer]:
    server = FakeServer({"/v1/models": LMSTUDIO_MODELS})
    yield server
    server.stop()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def specs(ollama: FakeServer, lmstudio: FakeServer) -> tuple[ServerSpec, ServerSpec]:
    return (
        ServerSpec("ollama", "Ollama", ollama.url),
        ServerSpec("openai", "LM Studio / llama.cpp", lmstudio.url),
    )


def test_default_addresses() -> None:
    assert DEFAULT_SERVERS == (OLLAMA, LM_STUDIO)
    assert OLLAMA.api_base == "http://127.0.0.1:11434"
    assert LM_STUDIO.api_base == "http://127.0.0.1:1234/v1"


@pytest.mark.asyncio
async def test_models_are_listed_as_litellm_ids(ollama: FakeServer, lmstudio: FakeServer) -> None:
    o_spec, l_spec = specs(ollama, lmstudio)
    servers = LocalServers([o_spec, l_spec])
    statuses = await servers.refresh()
    assert [s.available for s in statuses] == [True, True]
    assert [(m.model_id, m.api_base) for m in servers.models] == [
        ("ollama_chat/llama3.2:latest", ollama.url),
        ("ollama_chat/qwen2.5:7b", ollama.url),
        ("openai/qwen2.5-7b-instruct", f"{lmstudio.url}/v1"),
    ]
    lm = servers.models[2]
    assert lm.display_name == "qwen2.5-7b-instruct (LM Studio / llama.cpp, local)"
    assert lm.completion_kwargs() == {
        "model": "openai/qwen2.5-7b-instruct", "api_base": f"{lmstudio.url}/v1",
        "api_key": "sk-local-no-key",
    }
    assert servers.models[0].completion_kwargs() == {
        "model": "ollama_chat/llama3.2:latest", "api_base": ollama.url,
    }


@pytest.mark.asyncio
async def test_llamacpp_window_is_read_from_the_server() -> None:
    server = FakeServer({
        "/v1/models": LLAMACPP_MODELS,
        "/props": {"default_generation_settings": {"n_ctx": 4096}},
    })
    try:
        spec = ServerSpec("openai", "LM Studio / llama.cpp", server.url)
        await (servers := LocalServers([spec])).refresh()
        # The window the server was started with beats the one the model was trained for.
        assert servers.models == (LocalServerModel("gemma-3-1b", spec, 32768),)
        server.routes["/v1/models"] = {"data": [{"id": "gemma-3-1b"}]}
        await servers.refresh()
        assert servers.models[0].window == 4096
    finally:
        server.stop()


@pytest.mark.asyncio
async def test_start_returns_before_any_probe_finishes(
    ollama: FakeServer, lmstudio: FakeServer
) -> None:
    servers = LocalServers(specs(ollama, lmstudio))
    servers.start(interval=None)
    assert servers.statuses == ()
    assert ollama.hits == []
    await asyncio.sleep(0)
    while len(servers.statuses) < 2:
        await asyncio.sleep(0.01)
    assert all(s.available for s in servers.statuses)
    await servers.close()


@pytest.mark.asyncio
async def test_nothing_running_means_unavailable_not_an_error() -> None:
    spec = ServerSpec("ollama", "Ollama", f"http://127.0.0.1:{free_port()}")
    servers = LocalServers([spec])
    (status,) = await servers.refresh()
    assert not status.available and status.models == ()
    assert status.error == f"nothing is listening on {spec.address}"
    assert servers.models == ()


@pytest.mark.asyncio
async def test_a_server_that_goes_away(ollama: FakeServer, lmstudio: FakeServer) -> None:
    o_spec, l_spec = specs(ollama, lmstudio)
    changes: list[tuple[ServerStatus, ...]] = []
    servers = LocalServers([o_spec, l_spec], on_change=changes.append)
    await servers.refresh()
    assert servers.status_of("ollama_chat/llama3.2").available
    assert servers.status_of("openai/qwen2.5-7b-instruct", f"{lmstudio.url}/v1").available
    assert len(changes) == 1

    ollama.stop()
    status = await servers.check("ollama_chat/llama3.2")
    assert not status.available
    assert status.reason.startswith("Ollama is not running (nothing is listening on")
    assert [m.server.label for m in servers.models] == ["LM Studio / llama.cpp"]
    assert len(changes) == 2

    # The other server is untouched, and an unchanged probe is not reported as a change.
    await servers.refresh()
    assert servers.status_of("openai/qwen2.5-7b-instruct", f"{lmstudio.url}/v1").available
    assert len(changes) == 2


@pytest.mark.asyncio
async def test_a_server_that_comes_back_is_noticed_by_watch() -> None:
    port = free_port()
    spec = ServerSpec("openai", "LM Studio / llama.cpp", f"http://127.0.0.1:{port}")
    servers = LocalServers([spec])
    servers.start(interval=0.05)
    while not servers.statuses:
        await asyncio.sleep(0.01)
    assert not servers.statuses[0].available
    server = FakeServer({"/v1/models": LMSTUDIO_MODELS}, port=port)
    try:
        while not servers.models:
            await asyncio.sleep(0.02)
        assert [m.model_id for m in servers.models] == ["openai/qwen2.5-7b-instruct"]
    finally:
        await servers.close()
        server.stop()


@pytest.mark.asyncio
async def test_missing_model_and_unknown_ids(ollama: FakeServer, lmstudio: FakeServer) -> None:
    o_spec, l_spec = specs(ollama, lmstudio)
    servers = LocalServers([o_spec, l_spec])
    assert servers.status_of("ollama_chat/llama3.2").reason == "Ollama has not been checked yet"
    await servers.refresh()
    missing = servers.status_of("ollama_chat/mistral")
    assert not missing.available
    assert missing.reason == "Ollama does not offer mistral; pull it with `ollama pull mistral`"
    other = servers.status_of("anthropic/claude-sonnet-4-5")
    assert not other.available and "not served by a known local server" in other.reason
    # An openai/ id only belongs to LM Studio with LM Studio's api_base.
    assert servers.server_for("openai/gpt-4o") is None
    assert servers.server_for("openai/x", f"{lmstudio.url}/v1/") == l_spec


@pytest.mark.asyncio
async def test_something_else_on_the_port_is_not_mistaken_for_a_server() -> None:
    web = FakeServer({"/api/tags": "<html>hello</html>", "/v1/models": {"unexpected": True}})
    try:
        servers = LocalServers([
            ServerSpec("ollama", "Ollama", web.url),
            ServerSpec("openai", "LM Studio / llama.cpp", web.url),
        ])
        o_status, l_status = await servers.refresh()
        assert not o_status.available and "is not a Ollama server" in o_status.error
        assert not l_status.available and "is not a LM Studio / llama.cpp server" in l_status.error
        broken = FakeServer({})
        try:
            (status,) = await LocalServers([ServerSpec("ollama", "Ollama", broken.url)]).refresh()
            assert status.error == f"127.0.0.1:{broken.port} answered HTTP 404"
        finally:
            broken.stop()
    finally:
        web.stop()


@pytest.mark.asyncio
async def test_a_server_that_hangs_times_out() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)  # accepts connections in the kernel but never answers
        port = listener.getsockname()[1]
        spec = ServerSpec("ollama", "Ollama", f"http://127.0.0.1:{port}")
        servers = LocalServers([spec], timeout=httpx.Timeout(0.2))
        (status,) = await servers.refresh()
    assert not status.available
    assert status.error == f"127.0.0.1:{port} did not answer in time"


@pytest.mark.asyncio
async def test_overlapping_refreshes_share_one_probe(ollama: FakeServer) -> None:
    servers = LocalServers([ServerSpec("ollama", "Ollama", ollama.url)])
    first, second = await asyncio.gather(servers.refresh(), servers.refresh())
    assert first == second
    assert ollama.hits == ["/api/tags"]
