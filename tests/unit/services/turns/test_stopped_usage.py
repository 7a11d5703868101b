"""A stopped reply is still a request a hosted provider bills: it is in the ledger, with the
prompt as estimated and the output counted from the text kept, priced when the model is."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.chat import Events
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.services.bootstrap import Services, build_services
from treechat.services.models.catalog import ModelChoice
from treechat.store import usage as ledger

PRICED = "openai/gpt-4o"  # litellm knows its price; served by the loopback


@pytest_asyncio.fixture
async def services(tmp_path: Path, loopback: LoopbackProvider) -> AsyncIterator[Services]:
    choice = ModelChoice(PRICED, "GPT-4o", "openai", api_base=loopback.openai_base)
    built = build_services(tmp_path, bundled=False, detect_local_servers=False,
                           extra_models=(choice,))
    built.models.default_model = PRICED
    try:
        yield built
    finally:
        await built.close()
        built.close_store()


@pytest.mark.asyncio
async def test_a_stopped_reply_is_counted_and_priced(
    services: Services, loopback: LoopbackProvider
) -> None:
    loopback.queue(Reply(text=" ".join(f"word{i}" for i in range(400)), tokens_per_second=80))
    session = await services.chat.sessions.create()
    events = Events()
    task = asyncio.ensure_future(services.chat.send(session.id, "long please", on_event=events))
    for _ in range(3000):  # the first request also waits for litellm to load
        await asyncio.sleep(0.02)
        if len(events.text()) > 40:
            break
    assert len(events.text()) > 40
    services.chat.stop(session.id)
    node = await task
    assert node is not None and node.interrupted
    (row,) = services.store.call(lambda r: ledger.session_usage(r, session.id))
    assert row.head == node.id and row.basis == "estimated"
    assert row.output_tokens == services.engine.counter.count(node.output) > 0
    assert row.input_tokens > 0 and row.priced and row.cost_usd > 0
    total = await services.chat.spending.chat_total(session.id)
    assert total.requests == 1 and total.output_tokens == row.output_tokens
    cost = await services.chat.spending.reply_cost(node.id)
    assert cost is not None and cost.output_tokens == row.output_tokens
    # an estimate is never taken as the measurement of the head
    assert services.store.call(lambda r: ledger.last_measurement(r, session.id)) is None
