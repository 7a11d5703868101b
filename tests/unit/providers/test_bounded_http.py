"""A server's answer is read within a byte cap and a deadline on the whole exchange: a body
that never ends, one declared larger than the cap, a server that stalls after its headers and
one that trickles a byte at a time each end with one line naming the bound, and a model list
from a server that never stops listing is refused instead of read until memory runs out."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from tests.support.raw_http import RawServer

from treechat.core.bounded_read import Bounds, ReadLimitError
from treechat.providers.bounded_http import fetch
from treechat.providers.connections import Connection, ConnectionProblem
from treechat.providers.model_lists import fetch_models

SMALL = Bounds(cap=64 * 1024, deadline=2.0)


@pytest.fixture
def raw() -> Iterator[RawServer]:
    with RawServer() as server:
        yield server


async def get(server: RawServer, bounds: Bounds = SMALL) -> httpx.Response:
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0), trust_env=False) as client:
        return await fetch(client, "GET", f"{server.url}/v1/models", what="the server",
                           bounds=bounds)


@pytest.mark.asyncio
async def test_a_body_within_the_bounds_comes_back_as_a_response(raw: RawServer) -> None:
    raw.answer(json.dumps({"data": [{"id": "m1"}]}))
    response = await get(raw)
    assert response.status_code == 200
    assert response.json() == {"data": [{"id": "m1"}]}


@pytest.mark.asyncio
async def test_an_endless_body_stops_at_the_cap(raw: RawServer) -> None:
    raw.answer(b'{"id": "again"},' * 1000, endless=True)
    with pytest.raises(ReadLimitError) as stopped:
        await get(raw)
    assert stopped.value.limit == "cap"
    assert str(stopped.value) == (
        "the server is larger than 64 KB, the most that is read from it"
    )


@pytest.mark.asyncio
async def test_a_declared_length_over_the_cap_is_refused_before_the_body(raw: RawServer) -> None:
    raw.answer(b"{}", declared=10 * 1024 * 1024, stall_s=30.0)
    with pytest.raises(ReadLimitError) as stopped:
        await get(raw)
    assert stopped.value.limit == "cap"


@pytest.mark.asyncio
async def test_a_server_that_stalls_after_its_headers_ends_at_the_deadline(
    raw: RawServer,
) -> None:
    raw.answer(b"{}", stall_s=30.0)
    with pytest.raises(ReadLimitError) as stopped:
        await get(raw, Bounds(cap=1024, deadline=0.5))
    assert stopped.value.limit == "deadline"
    assert str(stopped.value).startswith("the server took longer than 0.5 s to answer")


@pytest.mark.asyncio
async def test_a_trickle_that_never_pauses_long_still_ends_at_the_deadline(
    raw: RawServer,
) -> None:
    """One byte every 50 ms: httpx's wait for the next byte never runs out; the total does."""
    raw.answer(b"x" * 10_000, piece_every_s=0.05)
    with pytest.raises(ReadLimitError) as stopped:
        await get(raw, Bounds(cap=1024 * 1024, deadline=0.6))
    assert stopped.value.limit == "deadline"
    assert 0 < stopped.value.read < 10_000


@pytest.mark.asyncio
async def test_a_server_that_never_stops_listing_models_is_refused_in_one_line(
    raw: RawServer,
) -> None:
    entry = json.dumps({"id": "model", "object": "model"}).encode()
    raw.answer(b'{"object": "list", "data": [' + entry + b"," + (entry + b",") * 4000,
               endless=True)
    connection = Connection(id="lab", kind="openai-compatible", base_url=f"{raw.url}/v1")
    async with httpx.AsyncClient(timeout=10.0, trust_env=False) as client:
        with pytest.raises(ConnectionProblem) as refused:
            await fetch_models(connection, client)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("127.0.0.1:") and "is larger than 8 MB" in message
