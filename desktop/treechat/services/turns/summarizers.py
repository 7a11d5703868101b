"""Who writes the summary of folded history for a turn: the offline summarizer, the
session's own model, or another model the `summarizer` setting names."""

from __future__ import annotations

import logging
from typing import Any

from ...core.summarize import AsyncSummarizer, ModelSummarizer
from ...providers import stream as provider_stream
from ...providers.provider import Provider
from ...store.database import Store
from ..context import ContextEngine
from ..models.catalog import Endpoint, ModelCatalog, ModelUnavailable
from ..store_life.store_release import StoreFreeSummarizer
from .config import ChatConfig
from .turn_queue import TurnQueue

log = logging.getLogger(__name__)


class Summarizers:
    def __init__(
        self, store: Store, engine: ContextEngine, models: ModelCatalog, provider: Provider,
        queue: TurnQueue, config: ChatConfig,
    ) -> None:
        self.store = store
        self.engine = engine
        self.models = models
        self.provider = provider
        self.queue = queue
        self.config = config

    async def for_turn(self, session_id: str, endpoint: Endpoint) -> AsyncSummarizer | None:
        """The model summarizer the `summarizer` setting names (None: the engine's offline
        one). A failed or empty model reply falls back to the offline summary. With
        `release_store` its request is awaited with the store let go of, like the reply's."""
        choice = self.config.summarizer.strip()
        if not choice:
            return None
        target = endpoint
        if choice != "session":
            try:
                target = await self.models.resolve(choice, None)
            except ModelUnavailable:
                log.warning("summarizer model %s is not available; summarizing offline", choice)
                return None

        async def complete(messages: list[dict[str, Any]]) -> str:
            # a summary is a request like any other: it waits its turn at the server
            async with self.queue.slot(session_id, target.api_base, target.model):
                result = await self.provider.stream_turn(provider_stream.TurnRequest(
                    model=target.model, messages=messages, api_base=target.api_base,
                    api_key=target.api_key, max_tokens=min(2048, target.max_output),
                    session_id=session_id, phase="summary",
                    lineage=f"{session_id}:summary",
                ))
            if result.error is not None:
                raise RuntimeError(result.error.message)
            return result.text

        summarizer = ModelSummarizer(complete, self.engine.offline_summarizer())
        release = self.config.release_store
        if release is None:
            return summarizer
        return StoreFreeSummarizer(summarizer, self.store, release, session_id)
