"""Trying an API key with the smallest request there is, against a real HTTP server on
loopback: a working key gives no reason, a refused one the provider's reason in words, and
the key itself never appears in what is said."""

from __future__ import annotations

import pytest
from tests.support.loopback_server import LoopbackProvider

from treechat.providers.keys import KeyStore
from treechat.services.models.keys import KeyAccess, try_key


@pytest.mark.asyncio
async def test_a_working_key_says_nothing_and_asks_for_one_token(
    loopback: LoopbackProvider,
) -> None:
    assert await try_key("openai", "sk-works-123", api_base=loopback.openai_base) is None
    (request,) = loopback.requests
    assert request.body["max_tokens"] == 1


@pytest.mark.asyncio
async def test_a_refused_key_is_said_in_words_without_the_key(
    loopback: LoopbackProvider,
) -> None:
    loopback.fail_next(401)
    reason = await try_key("openai", "sk-refused-456", api_base=loopback.openai_base)
    assert reason and "sk-refused" not in reason


def test_the_keychain_store_is_what_the_dialog_may_use() -> None:
    keys: KeyAccess = KeyStore(environ={"OPENAI_API_KEY": "sk-from-env"})
    assert keys.get_key("openai") == "sk-from-env"
