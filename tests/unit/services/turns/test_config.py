"""The turn engine's settings: a change of the global instructions reaches the next
request through the config the settings service reports to."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.chat import loopback_services
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.services.bootstrap import Services
from treechat.services.turns.config import ChatConfig


@pytest_asyncio.fixture
async def services(tmp_path: Path, loopback: LoopbackProvider) -> AsyncIterator[Services]:
    async with loopback_services(tmp_path, loopback) as built:
        yield built


def test_the_defaults_keep_the_store_and_summarize_offline() -> None:
    config = ChatConfig()
    assert config.release_store is None and config.summarizer == "" and config.max_steps > 1
    config.set_global_instructions("Be kind.")
    assert config.global_instructions == "Be kind."


@pytest.mark.asyncio
async def test_new_global_instructions_reach_the_next_request(
    services: Services, loopback: LoopbackProvider
) -> None:
    await services.chat.settings.set_global_instructions("Answer in French.")
    assert services.chat.config.global_instructions == "Answer in French."
    loopback.queue(Reply(text="Bonjour."))
    session = await services.chat.sessions.create()
    await services.chat.send(session.id, "Hello")
    assert "Answer in French." in str(loopback.requests[-1].body["messages"][0])
