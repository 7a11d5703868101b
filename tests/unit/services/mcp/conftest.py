"""A real DuckDB file, a key store without a keychain and an MCP service on them, for the
tests of the MCP services."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from keyring.backends import fail

from treechat.providers.keys import KeyStore
from treechat.services.mcp.service import McpService
from treechat.store.database import Store


@pytest_asyncio.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    store = Store.open(tmp_path / "t.duckdb")
    yield store
    store.close()


@pytest.fixture
def keys() -> KeyStore:
    # No keychain here: the KeyStore keeps secrets in memory for the process, its designed
    # fallback (the keyring path itself is covered by tests/unit/providers/test_keys.py).
    return KeyStore(backend=fail.Keyring(), environ={})


@pytest_asyncio.fixture
async def service(store: Store, keys: KeyStore) -> AsyncIterator[McpService]:
    svc = McpService(store, keys)
    yield svc
    await svc.close()
