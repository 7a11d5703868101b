"""Who summarizes folded history: offline unless the setting names a model, and a model's
summary asked like any other request (its own phase, its place in the server's queue)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.chat import loopback_services
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.core.summarize import SummaryEntry, SummaryRequest
from treechat.services.bootstrap import Services
from treechat.services.turns.summarizers import Summarizers


@pytest_asyncio.fixture
async def services(tmp_path: Path, loopback: LoopbackProvider) -> AsyncIterator[Services]:
    async with loopback_services(tmp_path, loopback) as built:
        yield built


def _summarizers(services: Services) -> Summarizers:
    chat = services.chat
    return Summarizers(chat.store, chat.engine, chat.models, chat.provider, chat.queue,
                       chat.config)


@pytest.mark.asyncio
async def test_offline_unless_a_model_is_named_and_reachable(services: Services) -> None:
    summarizers = _summarizers(services)
    endpoint = await services.chat.model_endpoint()
    assert await summarizers.for_turn("s", endpoint) is None
    services.chat.config.summarizer = "nowhere/missing-model"
    assert await summarizers.for_turn("s", endpoint) is None


@pytest.mark.asyncio
async def test_the_sessions_model_writes_the_summary(
    services: Services, loopback: LoopbackProvider
) -> None:
    services.chat.config.summarizer = "session"
    summarizer = await _summarizers(services).for_turn("s", await services.chat.model_endpoint())
    assert summarizer is not None
    loopback.queue(Reply(text="They agreed on Tuesday."))
    text = await summarizer.summarize(SummaryRequest(
        (SummaryEntry("user", "Shall we meet Tuesday?"), SummaryEntry("assistant", "Yes.")),
        target_tokens=50))
    assert text == "They agreed on Tuesday."
    assert "Tuesday" in str(loopback.requests[-1].body["messages"])
