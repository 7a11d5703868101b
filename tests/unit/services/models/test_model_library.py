"""The model library service: downloads on worker threads with progress on the loop, one
local model running at a time on the bundled llama.cpp server, Ollama pulls."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.support.hub_server import Hub, HubServer, sha256_of
from tests.support.processes import gone

from treechat.providers.local.bundled_model import find_gguf
from treechat.providers.model_library import DownloadStopped, LibraryError, ModelLibrary, Progress
from treechat.services.models.model_library import (
    MAX_AUTO_CONTEXT,
    MIN_CONTEXT,
    ModelLibraryService,
    choose_context,
)

GB = 1024**3


@pytest.fixture(scope="module")
def gguf() -> Path:
    return find_gguf()


@pytest.fixture
def hub(gguf: Path) -> Iterator[HubServer]:
    state = Hub()
    digest = sha256_of(gguf)
    state.add("acme/Alpha-GGUF", "alpha-q4.gguf", gguf, digest)
    state.add("acme/Beta-GGUF", "beta-q4.gguf", gguf, digest)
    with HubServer(state) as server:
        yield server


def service(tmp_path: Path, hub: HubServer, ram: int = 16 * GB) -> ModelLibraryService:
    return ModelLibraryService(ModelLibrary(tmp_path / "models", endpoint=hub.url),
                               ram_bytes=lambda: ram)


def test_the_window_follows_the_trained_length_and_the_ram() -> None:
    assert choose_context(8192, 100_000_000, 16 * GB) == 8192
    # Qwen2.5 7B's grouped KV heads: 57 KB a token, so 16 GB holds the whole 32k
    assert choose_context(131072, 4_700_000_000, 16 * GB, 57_344) == MAX_AUTO_CONTEXT
    # Phi-3.5 mini's full heads: 393 KB a token; 8 GB RAM leaves room for ~4k
    small = choose_context(131072, 2_400_000_000, 8 * GB, 393_216)
    assert MIN_CONTEXT <= small < 8192
    assert choose_context(None, 4_700_000_000, 4 * GB) == MIN_CONTEXT


@pytest.mark.asyncio
async def test_recommended_models_say_whether_the_machine_can_hold_them(
        tmp_path: Path, hub: HubServer) -> None:
    picks = await service(tmp_path, hub, ram=3 * GB).recommended()
    assert any(p.fits_ram for p in picks) and not all(p.fits_ram for p in picks)
    assert not any(p.installed for p in picks)


@pytest.mark.asyncio
async def test_a_download_reports_progress_on_the_loop_and_resumes_after_a_pause(
        tmp_path: Path, hub: HubServer) -> None:
    hub.hub.rate = 40_000_000
    lib = service(tmp_path, hub)
    loop_thread = threading.get_ident()
    seen: list[tuple[Progress, int]] = []
    job = lib.download("acme/Alpha-GGUF", "alpha-q4.gguf",
                       on_progress=lambda p: seen.append((p, threading.get_ident())))
    assert lib.download("acme/Alpha-GGUF", "alpha-q4.gguf") is job  # one job per file
    while not seen:
        await asyncio.sleep(0.02)
    job.pause()
    with pytest.raises(DownloadStopped):
        await job.done()
    assert {thread for _, thread in seen} == {loop_thread}
    (partial,) = await lib.partial()
    assert partial.done > 0
    model = await lib.download("acme/Alpha-GGUF", "alpha-q4.gguf").done()
    assert model.name == "alpha-q4"
    assert [m.name for m in await lib.installed()] == ["alpha-q4"]


@pytest.mark.slow
@pytest.mark.asyncio
async def test_one_local_model_runs_at_a_time_and_answers(tmp_path: Path, hub: HubServer) -> None:
    lib = service(tmp_path, hub)
    await lib.download("acme/Alpha-GGUF", "alpha-q4.gguf").done()
    await lib.download("acme/Beta-GGUF", "beta-q4.gguf").done()
    try:
        alpha = await lib.run("alpha-q4")
        assert alpha.window == 8192 and alpha.model_id == "openai/alpha-q4"
        smaller = await lib.run("alpha-q4", context=4096)  # the user's window reloads it
        assert smaller.window == 4096
        assert lib.context_for((await lib.installed())[0]) == 4096
        assert (await lib.run("alpha-q4")).window == 4096  # and is kept
        first = lib._running[1].pid if lib._running else None  # the server's process
        beta = await lib.run("beta-q4")
        assert first is not None and gone(first)  # switching unloads the previous model
        async with httpx.AsyncClient(trust_env=False, timeout=120) as client:
            reply = await client.post(f"{beta.api_base}/chat/completions", json={
                "model": beta.name, "max_tokens": 8,
                "messages": [{"role": "user", "content": "Say hello."}],
            })
        reply.raise_for_status()
        body = reply.json()
        assert body["model"] == "beta-q4"
        assert body["choices"][0]["message"]["content"].strip()
        freed = await lib.remove("beta-q4")  # removing the running model stops it first
        assert freed > 0 and lib.running is None
    finally:
        await lib.close()


class _Ollama(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    pulls: list[dict[str, Any]] = []  # noqa: RUF012 - one server per test run

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.pulls.append(body)
        if body["model"] == "missing":
            lines = [{"error": "pull model manifest: file does not exist"}]
        else:
            lines = [{"status": "pulling manifest"},
                     {"status": "pulling 6a0746a1ec1a", "digest": "sha256:6a07", "total": 100,
                      "completed": 40},
                     {"status": "pulling 6a0746a1ec1a", "digest": "sha256:6a07", "total": 100,
                      "completed": 100},
                     {"status": "success"}]
        data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.mark.asyncio
async def test_an_ollama_pull_reports_its_progress(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ollama)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    lib = ModelLibraryService(ModelLibrary(tmp_path / "models"))
    try:
        steps: list[tuple[str, int, int]] = []
        await lib.ollama_pull(url, "llama3.2:3b",
                              on_progress=lambda s, done, total: steps.append((s, done, total)))
        assert _Ollama.pulls[-1] == {"model": "llama3.2:3b", "stream": True}
        assert steps[-1] == ("success", 0, 0)
        assert ("pulling 6a0746a1ec1a", 100, 100) in steps
        with pytest.raises(LibraryError, match="file does not exist"):
            await lib.ollama_pull(url + "/v1", "missing")
    finally:
        server.shutdown()
        server.server_close()
