"""API keys as the settings dialog sees them: read, saved and reported per provider (in the
system keychain through `providers.keys`), and tried with the smallest possible request."""

from __future__ import annotations

from typing import Protocol

from ...providers import stream
from ...providers.keys import KeyStatus
from .catalog import CLOUD_MODELS

__all__ = ["KeyAccess", "KeyStatus", "try_key"]


class KeyAccess(Protocol):
    """What the window may do with keys (the keyring is slow: call these off the GUI
    thread). `providers.keys.KeyStore` is one."""

    @property
    def keychain_available(self) -> bool: ...

    def set_key(self, provider: str, key: str) -> KeyStatus: ...

    def get_key(self, provider: str) -> str | None: ...

    def status(self, provider: str) -> KeyStatus: ...


async def try_key(provider: str, key: str, *, api_base: str | None = None) -> str | None:
    """Make the smallest possible request with `key`; None when it worked, else the
    provider's reason in plain words."""
    model = next((m for p, m, _ in CLOUD_MODELS if p == provider), f"{provider}/default")
    request = stream.TurnRequest(
        model=model,
        messages=({"role": "user", "content": "Reply with OK."},),
        api_base=api_base,
        api_key=key,
        max_tokens=1,
        timeout=30.0,
        phase="key_test",
    )
    result = await stream.stream_turn(request)
    return None if result.error is None else result.error.message
