"""Model library benchmark.

- `download_vs_raw_copy`: the library's pull (huggingface_hub's transfer, our sha256 as the
  bytes arrive, the part file and manifest) against a plain streamed HTTP GET of the same
  file from the same loopback hub server into a file, alternated over several runs; the
  ratio of their median throughputs (1.0 = as fast as a raw copy, lower = slower).
- `model_switch_s`: unload one downloaded model, load another on the bundled llama.cpp
  server, and stream the first token of a reply (median of runs).
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import time
from pathlib import Path

import httpx
import pytest
from tests.support.hub_server import Hub, HubServer, sha256_of

from treechat.providers.local.bundled_model import find_gguf
from treechat.providers.model_library import ModelLibrary
from treechat.services.models.model_library import ModelLibraryService

pytestmark = pytest.mark.bench

RUNS = 5


def raw_copy(url: str, target: Path) -> float:
    began = time.perf_counter()
    with httpx.Client(trust_env=False, timeout=60) as client, \
            client.stream("GET", url) as response, target.open("wb") as out:
        response.raise_for_status()
        for block in response.iter_bytes(1 << 20):
            out.write(block)
    return time.perf_counter() - began


async def first_token(api_base: str, name: str) -> None:
    async with httpx.AsyncClient(trust_env=False, timeout=120) as client, client.stream(
        "POST", f"{api_base}/chat/completions",
        json={"model": name, "stream": True, "max_tokens": 4,
              "messages": [{"role": "user", "content": "Hello"}]},
    ) as response:
        async for line in response.aiter_lines():
            if '"content":"' in line.replace(" ", "") and '"content":""' not in line.replace(
                    " ", ""):
                return


def test_models_benchmark(tmp_path: Path, bench_report) -> None:  # type: ignore[no-untyped-def]
    gguf = find_gguf()
    size = gguf.stat().st_size
    hub = Hub()
    digest = sha256_of(gguf)
    hub.add("acme/Alpha-GGUF", "alpha.gguf", gguf, digest)
    hub.add("acme/Beta-GGUF", "beta.gguf", gguf, digest)
    pulls: list[float] = []
    raws: list[float] = []
    with HubServer(hub) as server:
        url = f"{server.url}/acme/Alpha-GGUF/resolve/main/alpha.gguf"
        for run in range(RUNS):
            raws.append(raw_copy(url, tmp_path / f"raw-{run}.gguf"))
            (tmp_path / f"raw-{run}.gguf").unlink()
            models = tmp_path / f"lib-{run}"
            lib = ModelLibrary(models, endpoint=server.url)
            began = time.perf_counter()
            lib.download("acme/Alpha-GGUF", "alpha.gguf")
            pulls.append(time.perf_counter() - began)
            shutil.rmtree(models)

        lib = ModelLibrary(tmp_path / "models", endpoint=server.url)
        lib.download("acme/Alpha-GGUF", "alpha.gguf")
        lib.download("acme/Beta-GGUF", "beta.gguf")

    service = ModelLibraryService(lib)
    switches: list[float] = []

    async def switching() -> None:
        try:
            await service.run("alpha")
            for run in range(3):
                name = "beta" if run % 2 == 0 else "alpha"
                began = time.perf_counter()
                endpoint = await service.run(name)
                await first_token(endpoint.api_base, endpoint.name)
                switches.append(time.perf_counter() - began)
        finally:
            await service.close()

    asyncio.run(switching())

    pull_mb_s = size / statistics.median(pulls) / 1e6
    raw_mb_s = size / statistics.median(raws) / 1e6
    figures = {
        "download_vs_raw_copy": pull_mb_s / raw_mb_s,
        "download_mb_s": pull_mb_s,
        "raw_copy_mb_s": raw_mb_s,
        "model_switch_s": statistics.median(switches),
    }
    bench_report(
        "models", figures,
        rows=[["pull (library)", f"{pull_mb_s:.1f} MB/s", f"{min(pulls):.2f}-{max(pulls):.2f} s"],
              ["raw HTTP GET", f"{raw_mb_s:.1f} MB/s", f"{min(raws):.2f}-{max(raws):.2f} s"],
              ["download_vs_raw_copy", f"{figures['download_vs_raw_copy']:.2f}", ""],
              ["model_switch_s", f"{figures['model_switch_s']:.2f} s",
               f"{min(switches):.2f}-{max(switches):.2f} s"]],
        header=["what", "figure", "range"],
    )
    assert figures["download_vs_raw_copy"] > 0
