"""What the next request would carry and cost, asked before anything is sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.chat import loopback_services
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.services.bootstrap import Services


@pytest_asyncio.fixture
async def services(tmp_path: Path, loopback: LoopbackProvider) -> AsyncIterator[Services]:
    async with loopback_services(tmp_path, loopback) as built:
        yield built


@pytest.mark.asyncio
async def test_the_record_of_a_new_chat_then_of_its_measured_head(
    services: Services, loopback: LoopbackProvider
) -> None:
    session = await services.chat.sessions.create()
    empty = await services.chat.estimates.occupancy(session.id)
    assert empty.head is None and dict(empty.breakdown).get("system", 0) > 0
    loopback.queue(Reply(text="An answer."))
    reply = await services.chat.send(session.id, "A question.")
    assert reply is not None
    after = await services.chat.estimates.occupancy(session.id)
    assert after.head == reply.id and after.basis == "measured"
    assert len(loopback.requests) == 1  # an estimate sends nothing


@pytest.mark.asyncio
async def test_a_message_too_big_for_the_window_is_found_and_cut(services: Services) -> None:
    session = await services.chat.sessions.create()
    window = (await services.chat.estimates.model_endpoint()).window
    small = await services.chat.estimates.message_fit(session.id, "hello")
    assert small.fits and small.window == window
    huge = "word " * (window * 2)
    fit = await services.chat.estimates.message_fit(None, huge)
    assert not fit.fits and fit.tokens > fit.room
    cut = await services.chat.estimates.cut_to_fit(huge, fit)
    assert len(cut) < len(huge) and cut.startswith("word")


@pytest.mark.asyncio
async def test_the_next_cost_counts_the_draft_and_never_assumes_a_cache_hit(
    services: Services,
) -> None:
    session = await services.chat.sessions.create()
    bare = await services.chat.estimates.next_cost(session.id)
    typed = await services.chat.estimates.next_cost(session.id, "some more words to send")
    assert typed.prompt_tokens > bare.prompt_tokens > 0
    assert not typed.priced and typed.ceiling_usd == 0  # the loopback model has no price
