"""The model picker's catalog: what it offers, under which name, and how a choice is reached."""

from __future__ import annotations

import pytest
from tests.support.model_servers import OllamaModel, OllamaServer, OpenAIServer
from tests.unit.providers.local.test_server_detection import OLLAMA_TAGS, FakeServer

from treechat.providers.keys import KeyStore
from treechat.providers.local.server_detection import LocalServers, ServerSpec
from treechat.services.models.catalog import (
    BUNDLED_ID,
    ModelCatalog,
    ModelChoice,
    ModelUnavailable,
    display_name,
)
from treechat.services.models.connections import ConnectionService


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


def test_hosted_models_carry_litellm_windows_and_prices() -> None:
    catalog = ModelCatalog(keys=keys({"OPENAI_API_KEY": "sk-test-x"}))
    (group,) = catalog.groups_now()
    assert (group.connection, group.label, group.state) == ("openai", "OpenAI", "ready")
    mini = next(c for c in group.models if c.id == "openai/gpt-4o-mini")
    assert mini.label == "OpenAI · GPT-4o mini" == display_name("openai/gpt-4o-mini")
    assert mini.window is not None and mini.window >= 100_000 and not mini.window_estimated
    assert mini.priced and mini.price_in == pytest.approx(0.15)  # litellm's $ per million
    assert mini.price_out == pytest.approx(0.6)


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("ollama/llama3.2:3b", "Ollama · llama3.2:3b"),
        ("ollama_chat/llama3.2:latest", "Ollama · llama3.2:latest"),
        ("anthropic/claude-sonnet-4-5", "Anthropic · Claude Sonnet 4.5"),
        (BUNDLED_ID, "Bundled · SmolLM2 135M"),
        ("openai/smollm2-135m-instruct", "Bundled · SmolLM2 135M"),  # how replies stored it
        ("lab/qwen2.5-7b", "lab · qwen2.5-7b"),
        ("gpt-4", "gpt-4"),  # an imported chat's own name
        ("", "Assistant"),
    ],
)
def test_one_display_name_for_every_way_a_model_was_stored(stored: str, shown: str) -> None:
    assert display_name(stored) == shown
    assert ModelCatalog(keys=keys({})).display_name(stored) == shown


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
    assert endpoint.api_key is None  # no key: none is sent, not a placeholder


@pytest.mark.asyncio
async def test_a_detected_server_is_addressed_by_its_connection_and_uses_its_window() -> None:
    ollama = OllamaServer([OllamaModel("llama3.2:3b", context_length=131_072, num_ctx=16_384)])
    detector = LocalServers([ServerSpec("ollama", "Ollama", ollama.url)])
    catalog = ModelCatalog(keys=keys({}), local_servers=detector)
    try:
        # Never probed yet (as on the command line): asking for the model probes its server.
        endpoint = await catalog.resolve("ollama/llama3.2:3b")
        assert endpoint.model == "ollama_chat/llama3.2:3b"
        assert endpoint.api_base == ollama.url and endpoint.api_key is None
        assert (endpoint.window, endpoint.window_estimated) == (16_384, False)
        assert endpoint.label == "Ollama · llama3.2:3b" and endpoint.choice == "ollama/llama3.2:3b"
        (group,) = catalog.groups_now()
        assert (group.label, group.state, group.detected) == ("Ollama", "detected", True)
        (choice,) = group.models
        assert (choice.window, choice.price_in, choice.local) == (16_384, None, True)
        # its requests are free, like the bundled and downloaded models'; a hosted model
        # litellm has no price for is not
        assert catalog.is_local("ollama/llama3.2:3b")
        assert catalog.is_local("ollama_chat/llama3.2:3b")
        assert catalog.is_local("local/smollm2-135m-instruct")
        assert catalog.is_local("library/qwen2.5-0.5b-instruct-q4_k_m")
        assert not catalog.is_local("openai/gpt-4o")
        assert not catalog.is_local("openrouter/some-new-model")
    finally:
        ollama.stop()


@pytest.mark.asyncio
async def test_a_local_server_that_goes_away_is_reported_not_sent_to_the_cloud() -> None:
    fake = FakeServer({"/api/tags": OLLAMA_TAGS})
    spec = ServerSpec("ollama", "Ollama", fake.url)
    servers = LocalServers(servers=(spec,))
    try:
        await servers.refresh()
        catalog = ModelCatalog(keys=keys({}), local_servers=servers)
        ids = [c.id for c in catalog.choices_now()]
        assert "ollama/llama3.2:latest" in ids
        endpoint = await catalog.resolve("ollama_chat/llama3.2")  # an id stored before
        assert endpoint.api_base == fake.url and endpoint.choice == "ollama/llama3.2:latest"
        fake.stop()
        await servers.refresh()
        (choice,) = [c for c in catalog.choices_now() if c.id == "ollama/llama3.2:latest"]
        assert not choice.available and choice.state == "unreachable"
        with pytest.raises(ModelUnavailable, match="Ollama is not reachable"):
            await catalog.resolve("ollama/llama3.2:latest")
    finally:
        await servers.close()


@pytest.mark.asyncio
async def test_an_unknown_model_gets_the_fallback_window_marked_estimated() -> None:
    lab = OpenAIServer([{"id": "mystery-7b", "object": "model"}])
    try:
        connections = ConnectionService(None, keys({}))
        await connections.add("openai-compatible", "lab", base_url=lab.openai_base)
        catalog = ModelCatalog(keys=keys({}), connections=connections)
        endpoint = await catalog.resolve("lab/mystery-7b")
        assert (endpoint.window, endpoint.window_estimated) == (8192, True)
        (choice,) = catalog.choices_now()
        assert choice.window_estimated and choice.price_in is None
    finally:
        lab.stop()


@pytest.mark.asyncio
async def test_a_connections_model_is_priced_as_its_requests_are_billed() -> None:
    """gpt-4o-mini through an OpenAI-compatible connection is billed at litellm's price for
    the id its requests name (openai/gpt-4o-mini): the picker and `treechat models` say that
    price. The same name on Ollama runs on this computer: no price (free)."""
    from treechat.providers import llm

    lab = OpenAIServer([{"id": "gpt-4o-mini", "object": "model"}])
    ollama = OllamaServer([OllamaModel("gpt-4o-mini", context_length=8192)])
    try:
        connections = ConnectionService(None, keys({}))
        await connections.add("openai-compatible", "lab", base_url=lab.openai_base)
        await connections.add("ollama", "home", base_url=ollama.url)
        catalog = ModelCatalog(keys=keys({}), connections=connections,
                               extra=(ModelChoice("openai/gpt-4o", "Configured 4o", "openai"),))
        choices = {c.id: c for c in catalog.choices_now()}
        endpoint = await catalog.resolve("lab/gpt-4o-mini")
        billed = llm.reservation_cost(endpoint.model, 1_000_000, 1_000_000)
        lab_mini = choices["lab/gpt-4o-mini"]
        assert lab_mini.priced and not lab_mini.local
        assert (lab_mini.price_in, lab_mini.price_out) == (pytest.approx(0.15),
                                                           pytest.approx(0.6))
        assert billed.priced and billed.usd == pytest.approx(0.15 + 0.6)
        home_mini = choices["home/gpt-4o-mini"]
        assert home_mini.local and not home_mini.priced and catalog.is_local(home_mini.id)
        # a configured model too: priced at what its requests cost
        assert choices["openai/gpt-4o"].priced
    finally:
        lab.stop()
        ollama.stop()
