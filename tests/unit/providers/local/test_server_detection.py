"""Detecting Ollama, LM Studio and llama.cpp on this machine, played by small loopback HTTP
servers of our own."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from tests.support.clock import FakeClock

from treechat.providers.connections import ConnectionModel, ConnectionProblem
from treechat.providers.local.server_detection import (
    DEFAULT_SERVERS,
    LLAMA_CPP,
    LM_STUDIO,
    OLLAMA,
    LocalServers,
    ServerSpec,
    ServerStatus,
    servers_from_environment,
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

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                self.rfile.read(length)
                self.do_GET()

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
LMSTUDIO_V0 = {
    "object": "list",
    "data": [
        {"id": "qwen2.5-7b-instruct", "object": "model", "type": "llm", "state": "loaded",
         "max_context_length": 32768},
        {"id": "text-embedding-nomic-embed-text-v1.5", "object": "model", "type": "embeddings",
         "max_context_length": 2048},
    ],
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
    server = FakeServer({"/v1/models": LMSTUDIO_MODELS, "/api/v0/models": LMSTUDIO_V0})
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
        ServerSpec("lmstudio", "LM Studio", lmstudio.url),
    )


def test_default_addresses_are_the_usual_loopback_ports() -> None:
    assert DEFAULT_SERVERS == (OLLAMA, LM_STUDIO, LLAMA_CPP)
    assert [s.base_url for s in DEFAULT_SERVERS] == [
        "http://127.0.0.1:11434", "http://127.0.0.1:1234", "http://127.0.0.1:8080"
    ]
    assert OLLAMA.connection().api_base == "http://127.0.0.1:11434"
    assert LM_STUDIO.connection().api_base == "http://127.0.0.1:1234/v1"


def test_where_to_look_comes_from_the_environment() -> None:
    assert servers_from_environment({}) == DEFAULT_SERVERS
    assert servers_from_environment({"TREECHAT_LOCAL_SERVERS": "none"}) == ()
    assert servers_from_environment({"TREECHAT_LOCAL_SERVERS": " "}) == ()
    moved = servers_from_environment(
        {"TREECHAT_LOCAL_SERVERS": "ollama=http://127.0.0.1:21434, lmstudio=http://localhost:4321"}
    )
    assert [(s.kind, s.label, s.base_url) for s in moved] == [
        ("ollama", "Ollama", "http://127.0.0.1:21434"),
        ("lmstudio", "LM Studio", "http://localhost:4321"),
    ]
    with pytest.raises(ConnectionProblem, match="not kind=url"):
        servers_from_environment({"TREECHAT_LOCAL_SERVERS": "vllm=http://127.0.0.1:8000"})
    with pytest.raises(ConnectionProblem, match="only loopback"):
        servers_from_environment({"TREECHAT_LOCAL_SERVERS": "ollama=http://10.0.0.2:11434"})


def test_a_probe_never_leaves_the_machine() -> None:
    for url in ("http://192.168.1.10:11434", "http://example.com:1234", "ftp://127.0.0.1:21"):
        with pytest.raises(ConnectionProblem):
            ServerSpec("ollama", "Ollama", url)
    assert ServerSpec("ollama", "Ollama", "http://localhost:11434/").base_url == (
        "http://localhost:11434"
    )


@pytest.mark.asyncio
async def test_models_are_listed_with_their_windows(
    ollama: FakeServer, lmstudio: FakeServer
) -> None:
    ollama.routes["/api/show"] = {"model_info": {"llama.context_length": 131072},
                                  "parameters": "num_ctx 8192"}
    o_spec, l_spec = specs(ollama, lmstudio)
    servers = LocalServers([o_spec, l_spec])
    statuses = await servers.refresh()
    assert [s.state for s in statuses] == ["detected", "detected"]
    assert [(s.id, m.name, m.window) for s, m in servers.models] == [
        ("ollama", "llama3.2:latest", 8192),  # what the model file serves, not the trained 128k
        ("ollama", "qwen2.5:7b", 8192),
        ("lmstudio", "qwen2.5-7b-instruct", 32768),  # LM Studio's max_context_length
    ]
    lm = statuses[1].connection
    assert lm.litellm_model("qwen2.5-7b-instruct") == "openai/qwen2.5-7b-instruct"
    assert lm.api_base == f"{lmstudio.url}/v1" and lm.detected
    assert statuses[0].connection.litellm_model("qwen2.5:7b") == "ollama_chat/qwen2.5:7b"
    assert "/api/v0/models" in lmstudio.hits


@pytest.mark.asyncio
async def test_llamacpp_window_is_read_from_the_server() -> None:
    server = FakeServer({
        "/v1/models": LLAMACPP_MODELS,
        "/props": {"default_generation_settings": {"n_ctx": 4096}},
    })
    try:
        spec = ServerSpec("llamacpp", "llama.cpp", server.url)
        await (servers := LocalServers([spec])).refresh()
        # The window the server was started with beats the one the model was trained for.
        assert servers.models == ((spec, ConnectionModel("gemma-3-1b", 4096)),)
        del server.routes["/props"]
        await servers.refresh()
        assert servers.models[0][1].window == 32768
    finally:
        server.stop()


@pytest.mark.asyncio
async def test_start_returns_before_any_probe_finishes(
    ollama: FakeServer, lmstudio: FakeServer
) -> None:
    servers = LocalServers(specs(ollama, lmstudio))
    servers.start(interval=None)
    assert servers.statuses == ()
    while len(servers.statuses) < 2:
        await asyncio.sleep(0.01)
    assert all(s.available for s in servers.statuses)
    await servers.close()


@pytest.mark.asyncio
async def test_a_change_is_reported_on_the_callers_thread(ollama: FakeServer) -> None:
    seen: list[threading.Thread] = []
    servers = LocalServers(
        [ServerSpec("ollama", "Ollama", ollama.url)],
        on_change=lambda _: seen.append(threading.current_thread()),
    )
    await asyncio.gather(servers.refresh(), servers.refresh())
    assert seen == [threading.current_thread()]  # once, where a GUI can touch its widgets


@pytest.mark.asyncio
async def test_nothing_running_is_not_listed_and_not_an_error() -> None:
    spec = ServerSpec("ollama", "Ollama", f"http://127.0.0.1:{free_port()}")
    servers = LocalServers([spec])
    assert await servers.refresh() == ()
    assert servers.checked and servers.models == ()
    assert servers.last_error("ollama") == f"nothing is listening on {spec.address}"


@pytest.mark.asyncio
async def test_a_server_that_goes_away_is_marked_unreachable_not_removed(
    ollama: FakeServer, lmstudio: FakeServer
) -> None:
    o_spec, l_spec = specs(ollama, lmstudio)
    changes: list[tuple[ServerStatus, ...]] = []
    servers = LocalServers([o_spec, l_spec], on_change=changes.append)
    await servers.refresh()
    assert len(changes) == 1

    ollama.stop()
    await servers.refresh()
    gone = servers.status("ollama")
    assert gone is not None and gone.state == "unreachable"
    assert gone.error.startswith("nothing is listening on")
    assert [m.name for m in gone.models] == ["llama3.2:latest", "qwen2.5:7b"]  # kept, greyed
    assert [s.id for s, _ in servers.models] == ["lmstudio"]
    assert len(changes) == 2

    # The other server is untouched, and an unchanged probe is not reported as a change.
    await servers.refresh()
    assert servers.status("lmstudio").state == "detected"  # type: ignore[union-attr]
    assert len(changes) == 2


async def until(condition: Callable[[], bool], limit: float = 30.0) -> None:
    """Wait (on real I/O: the probe's thread and sockets) until `condition` holds."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + limit
    while not condition():
        assert loop.time() < give_up, "the condition never held"
        await asyncio.sleep(0.01)


@pytest.mark.asyncio
async def test_a_server_that_comes_back_is_noticed_by_watch_after_its_interval() -> None:
    port = free_port()
    spec = ServerSpec("lmstudio", "LM Studio", f"http://127.0.0.1:{port}")
    clock = FakeClock()
    servers = LocalServers([spec], clock=clock)
    servers.start(interval=30)
    await until(lambda: servers.checked and clock.sleepers == 1)
    assert servers.statuses == ()
    server = FakeServer({"/v1/models": LMSTUDIO_MODELS}, port=port)
    try:
        clock.advance(29)  # not yet: the watch waits out its whole interval
        await clock.settle()
        assert servers.probes == 1 and clock.sleepers == 1
        clock.advance(1)
        await until(lambda: servers.probes == 2)
        assert [m.name for _, m in servers.models] == ["qwen2.5-7b-instruct"]
        assert servers.statuses[0].checked_at == clock.now()
    finally:
        await servers.close()
        server.stop()


@pytest.mark.asyncio
async def test_something_else_on_the_port_is_not_mistaken_for_a_server() -> None:
    web = FakeServer({"/api/tags": "<html>hello</html>", "/v1/models": {"unexpected": True}})
    try:
        servers = LocalServers([
            ServerSpec("ollama", "Ollama", web.url),
            ServerSpec("llamacpp", "llama.cpp", web.url),
        ])
        assert await servers.refresh() == ()
        assert "did not answer with JSON (it sent a web page)" in servers.last_error("ollama")
        assert "not with a model list" in servers.last_error("llamacpp")
        broken = FakeServer({})
        try:
            probe = LocalServers([ServerSpec("ollama", "Ollama", broken.url)])
            await probe.refresh()
            error = probe.last_error("ollama")
            assert error.startswith(f"127.0.0.1:{broken.port}/api/tags answered HTTP 404")
        finally:
            broken.stop()
    finally:
        web.stop()


@pytest.mark.asyncio
async def test_a_server_that_hangs_times_out_without_blocking_the_loop() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)  # accepts connections in the kernel but never answers
        port = listener.getsockname()[1]
        spec = ServerSpec("ollama", "Ollama", f"http://127.0.0.1:{port}")
        servers = LocalServers([spec], timeout=httpx.Timeout(0.3))
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.ensure_future(tick())
        await servers.refresh()
        ticker.cancel()
    assert servers.last_error("ollama") == f"127.0.0.1:{port}/api/tags did not answer in time"
    assert ticks >= 5  # the loop kept running while the probe waited


@pytest.mark.asyncio
async def test_overlapping_refreshes_share_one_probe(ollama: FakeServer) -> None:
    servers = LocalServers([ServerSpec("ollama", "Ollama", ollama.url)])
    first, second = await asyncio.gather(servers.refresh(), servers.refresh())
    assert first == second
    assert ollama.hits.count("/api/tags") == 1
