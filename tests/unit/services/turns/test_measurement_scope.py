"""A measured figure belongs to the head and the model it was measured for: after switching
back to an older version the ring reads that version's own request, and under another model
it is an estimate, never the old model's total under the new model's name."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.services.bootstrap import Services, build_services
from treechat.services.models.catalog import ModelChoice

FIRST = "openai/loopback-model"
SECOND = "openai/gpt-4o"


@pytest_asyncio.fixture
async def services(tmp_path: Path, loopback: LoopbackProvider) -> AsyncIterator[Services]:
    choices = (ModelChoice(FIRST, "Loopback", "openai", api_base=loopback.openai_base),
               ModelChoice(SECOND, "Loopback GPT-4o", "openai", api_base=loopback.openai_base))
    built = build_services(tmp_path, bundled=False, detect_local_servers=False,
                           extra_models=choices)
    built.models.default_model = FIRST
    try:
        yield built
    finally:
        await built.close()
        built.close_store()


@pytest.mark.asyncio
async def test_each_version_keeps_its_own_measurement(
    services: Services, loopback: LoopbackProvider
) -> None:
    chat = services.chat
    loopback.queue(Reply(text="short"), Reply(text="a second, different answer"))
    session = await chat.sessions.create()
    first = await chat.send(session.id, "A question with a few words in it")
    assert first is not None
    measured_first = loopback.requests[-1].prompt_tokens
    second = await chat.retry(session.id, first.id)
    assert second is not None
    view = await chat.sessions.switch_version(session.id, second.id, 1)
    assert view.head == first.id
    occ = await chat.occupancy(session.id, model=FIRST, view=view)
    assert occ.basis == "measured" and occ.head == first.id
    assert occ.total_used == measured_first


@pytest.mark.asyncio
async def test_another_model_is_estimated_not_given_the_old_total(
    services: Services, loopback: LoopbackProvider
) -> None:
    chat = services.chat
    loopback.queue(Reply(text="an answer"))
    session = await chat.sessions.create()
    node = await chat.send(session.id, "A question", model=FIRST)
    assert node is not None
    same = await chat.occupancy(session.id, model=FIRST)
    assert same.basis == "measured"
    other = await chat.occupancy(session.id, model=SECOND)
    assert other.basis == "estimated" and other.head == node.id
