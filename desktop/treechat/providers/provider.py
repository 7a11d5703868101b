"""The one seam between the services and a model: the `Provider` protocol.

The chat service streams turns, the connections service lists models, and both ask for
token counts only through it. `LiteLLMProvider` is the real one, with litellm behind it for
every kind of connection; `tests/support/fake_provider.py` is a designed double for tests
that do not need the wire.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import httpx

from . import llm
from .connections import Connection, ConnectionModel
from .model_lists import fetch_models, list_client
from .stream import EventHandler, Shrink, TurnRequest, TurnResult, stream_turn


@runtime_checkable
class Provider(Protocol):
    """What the services need from a model provider."""

    async def stream_turn(
        self,
        request: TurnRequest,
        *,
        on_event: EventHandler | None = None,
        shrink: Shrink | None = None,
    ) -> TurnResult:
        """Run one model call to the end, events to `on_event` as they arrive. Failures come
        back in `TurnResult.error` with the text that arrived first; `TurnResult.usage` is the
        provider's own report (None when it sent none)."""
        ...

    async def list_models(
        self, connection: Connection, api_key: str | None = None
    ) -> tuple[ConnectionModel, ...]:
        """The models the connection offers, with the windows its server reports. Raises
        `ConnectionProblem` in the server's own words when it cannot be read."""
        ...

    def count_tokens(self, model: str, messages: Sequence[Mapping[str, Any]]) -> int:
        """A local estimate of a request's prompt tokens (blocking: call off the GUI thread)."""
        ...


class LiteLLMProvider:
    """The provider for every kind of connection: litellm streams the turns (on the
    provider thread, see `stream`), model lists come from the servers over httpx."""

    def __init__(self, list_timeout: httpx.Timeout | float | None = None) -> None:
        self.list_timeout = list_timeout

    async def stream_turn(
        self,
        request: TurnRequest,
        *,
        on_event: EventHandler | None = None,
        shrink: Shrink | None = None,
    ) -> TurnResult:
        return await stream_turn(request, on_event=on_event, shrink=shrink)

    async def list_models(
        self, connection: Connection, api_key: str | None = None
    ) -> tuple[ConnectionModel, ...]:
        timeout = self.list_timeout
        if timeout is None and connection.timeout is not None:
            timeout = httpx.Timeout(connection.timeout, connect=min(connection.timeout, 10.0))
        async with list_client(timeout) as client:
            return await fetch_models(connection, client, api_key)

    def count_tokens(self, model: str, messages: Sequence[Mapping[str, Any]]) -> int:
        return llm.count_message_tokens(model, [dict(m) for m in messages])
