"""Any answer to a model list, however broken (any JSON shape, nested thousands deep, cut
short, noise in it, not JSON at all), gives models or one line (`ConnectionProblem`), never a
traceback, within a stated memory bound; over real HTTP from a loopback server."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from tests.support.fuzz_values import damaged_json_bytes
from tests.support.peak_memory import peak_rss_mb
from tests.support.raw_http import RawServer

from treechat.providers.connections import Connection, ConnectionProblem
from treechat.providers.model_lists import fetch_models

MEMORY_BOUND_MB = 150
pytestmark = pytest.mark.slow
OPENAI = {"object": "list", "data": [{"id": "m1", "object": "model", "context_length": 8192},
                                     {"id": "m2", "object": "model"}]}
OLLAMA = {"models": [{"name": "llama3.2:3b", "model": "llama3.2:3b", "size": 1}]}


@pytest.fixture(scope="module")
def raw() -> Iterator[RawServer]:
    with RawServer() as server:
        before = peak_rss_mb()
        yield server
        assert peak_rss_mb() - before <= MEMORY_BOUND_MB


async def listed(raw: RawServer, kind: str, body: bytes) -> None:
    raw.answer(body)
    base = f"{raw.url}/v1" if kind != "ollama" else raw.url
    connection = Connection(id="lab", kind=kind, base_url=base)  # type: ignore[arg-type]
    async with httpx.AsyncClient(timeout=10.0, trust_env=False) as client:
        try:
            models = await fetch_models(connection, client)
        except ConnectionProblem as exc:
            assert "\n" not in str(exc) and str(exc)
            return
    assert isinstance(models, tuple)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(body=damaged_json_bytes(OPENAI))
@pytest.mark.asyncio
async def test_an_openai_compatible_list_of_any_shape(raw: RawServer, body: bytes) -> None:
    await listed(raw, "openai-compatible", body)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(body=damaged_json_bytes(OLLAMA))
@pytest.mark.asyncio
async def test_an_ollama_list_of_any_shape(raw: RawServer, body: bytes) -> None:
    await listed(raw, "ollama", body)
