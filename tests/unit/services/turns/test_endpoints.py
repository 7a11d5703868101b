"""Which model a turn or an estimate talks to, and the name a reply is recorded under."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.chat import LOOPBACK_MODEL, loopback_services
from tests.support.loopback_server import LoopbackProvider

from treechat.services.bootstrap import Services
from treechat.services.models.catalog import Endpoint
from treechat.services.turns.endpoints import Endpoints, address, model_meta


@pytest_asyncio.fixture
async def services(tmp_path: Path, loopback: LoopbackProvider) -> AsyncIterator[Services]:
    async with loopback_services(tmp_path, loopback) as built:
        yield built


def test_a_reply_is_named_by_the_address_asked_for() -> None:
    via_ollama = Endpoint("openai/qwen2.5", "Qwen", 4096, 512, choice="ollama/qwen2.5")
    assert address(via_ollama) == "ollama/qwen2.5"
    assert model_meta(via_ollama) == {"model": "ollama/qwen2.5", "model_label": "Qwen",
                                      "litellm_model": "openai/qwen2.5"}
    plain = Endpoint("openai/gpt-4o", "GPT-4o", 4096, 512)
    assert address(plain) == "openai/gpt-4o" and "litellm_model" not in model_meta(plain)


@pytest.mark.asyncio
async def test_an_imported_chats_app_name_gives_way_to_the_default(services: Services) -> None:
    endpoints = Endpoints(services.models)
    chosen = await endpoints.for_turn(None, "gpt-4", None)  # ChatGPT's name, not litellm's
    assert chosen.choice == LOOPBACK_MODEL
    assert (await endpoints.for_turn(None, LOOPBACK_MODEL, None)).choice == LOOPBACK_MODEL
    assert endpoints.takes_tools(chosen) and not endpoints.is_bundled(chosen)


@pytest.mark.asyncio
async def test_an_estimate_on_an_unknown_model_says_its_window_is_a_guess(
    services: Services,
) -> None:
    endpoint = await Endpoints(services.models).for_estimate("nowhere/unknown-model", None)
    assert endpoint.model == "nowhere/unknown-model" and endpoint.window > 0
    assert endpoint.window_estimated
