"""The model picker's catalog: what it offers and how a choice is reached."""

from __future__ import annotations

import pytest
from tests.unit.providers.test_local_servers import OLLAMA_TAGS, FakeServer

from treechat.providers.keys import KeyStore
from treechat.providers.local_servers import LocalServers, ServerSpec
from treechat.services.models import ModelCatalog, ModelChoice, ModelUnavailable


class NoKeychain:
    """A keyring backend that holds nothing (the catalog only asks for keys)."""

    priority = 1

    def get_password(self, service: str, username: str) -> None:
        return None


def keys(environ: dict[str, str]) -> KeyStore:
    return KeyStore(backend=NoKeychain(), environ=environ)


def test_cloud_models_appear_only_for_providers_with_a_key() -> None:
    catalog = ModelCatalog(keys=keys({"ANTHROPIC_API_KEY": "sk-ant-x"}))
    providers = {c.provider for c in catalog.choices_now()}
    assert providers == {"anthropic"}


@pytest.mark.asyncio
async def test_a_cloud_model_without_a_key_says_what_to_do() -> None:
    catalog = ModelCatalog(keys=keys({}))
    with pytest.raises(ModelUnavailable, match="API key"):
        await catalog.resolve("openai/gpt-4o")


@pytest.mark.asyncio
async def test_extra_endpoint_resolves_with_its_base_and_window() -> None:
    choice = ModelChoice("openai/gpt-4o-mini", "Mini", "openai", api_base="http://127.0.0.1:9/v1")
    catalog = ModelCatalog(keys=keys({}), extra=(choice,))
    endpoint = await catalog.resolve("openai/gpt-4o-mini")
    assert endpoint.api_base == "http://127.0.0.1:9/v1"
    assert endpoint.window >= 100_000  # litellm's own figure for gpt-4o-mini
    assert endpoint.api_key is None  # the stream sends the placeholder, not the catalog


@pytest.mark.asyncio
async def test_a_local_server_that_goes_away_is_reported_not_sent_to_the_cloud() -> None:
    fake = FakeServer({"/api/tags": OLLAMA_TAGS})
    spec = ServerSpec("ollama", "Ollama", fake.url)
    servers = LocalServers(servers=(spec,))
    try:
        await servers.refresh()
        catalog = ModelCatalog(keys=keys({}), local_servers=servers)
        ids = [c.id for c in catalog.choices_now()]
        assert "ollama_chat/llama3.2:latest" in ids
        endpoint = await catalog.resolve("ollama_chat/llama3.2:latest")
        assert endpoint.api_base == fake.url
        fake.stop()
        await servers.refresh()
        assert "ollama_chat/llama3.2:latest" not in [c.id for c in catalog.choices_now()]
        with pytest.raises(ModelUnavailable, match="Ollama is not running"):
            await catalog.resolve("ollama_chat/llama3.2:latest")
    finally:
        await servers.close()
