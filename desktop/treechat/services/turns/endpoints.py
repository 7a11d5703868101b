"""Which model a turn or an estimate talks to, and the name a reply is recorded under."""

from __future__ import annotations

import asyncio
from typing import Any

from ..models.catalog import BUNDLED_ID, Endpoint, ModelCatalog, ModelUnavailable


def address(endpoint: Endpoint) -> str:
    """The name a reply is recorded under: the address it was asked for (`ollama/llama3.2`),
    not litellm's id, which two servers can share (`openai/qwen2.5`)."""
    return endpoint.choice or endpoint.model


def model_meta(endpoint: Endpoint) -> dict[str, Any]:
    """A reply's model in its metadata: the address, its display name and litellm's id."""
    meta: dict[str, Any] = {"model": address(endpoint), "model_label": endpoint.label}
    if endpoint.model != address(endpoint):
        meta["litellm_model"] = endpoint.model
    return meta


class Endpoints:
    """Resolves model choices through the catalog: starting a model for a turn, or only
    reading its window for an estimate."""

    def __init__(self, models: ModelCatalog) -> None:
        self.models = models

    async def for_turn(
        self, explicit: str | None, remembered: str, api_base: str | None
    ) -> Endpoint:
        """The model asked for, else the one the session last used, else the default. An
        imported chat remembers its source app's name (`gpt-4`, not a litellm id): that gives
        way to the default instead of failing the turn."""
        if explicit:
            return await self.models.resolve(explicit, api_base)
        if remembered and "/" in remembered:
            return await self.models.resolve(remembered, api_base)
        return await self.models.resolve(None, api_base)

    async def for_estimate(self, model: str | None, api_base: str | None) -> Endpoint:
        """The model's window without starting anything: the bundled model reports its
        window only once running, so an estimate falls back to its configured size."""
        try:
            catalog_default = (await asyncio.to_thread(self.models.default)).id
        except ModelUnavailable:
            catalog_default = None
        chosen = model or catalog_default
        if chosen == BUNDLED_ID or (
            self.models.bundled is not None and chosen == self.models.bundled.model_id
        ):
            return self.models.estimate_endpoint()
        try:
            return await self.models.resolve(chosen, api_base)
        except ModelUnavailable:
            from ...providers import llm

            name = chosen or "unknown"
            known = await asyncio.to_thread(llm.known_window, name)
            return Endpoint(
                model=name, label=self.models.display_name(name),
                window=known or llm.FALLBACK_WINDOW, max_output=4096,
                window_estimated=known is None, choice=name,
            )

    def takes_tools(self, endpoint: Endpoint) -> bool:
        # A 135M model cannot use tools, and a downloaded one only when its template renders
        # them; offering them otherwise only confuses it.
        return self.models.supports_tools(endpoint)

    def is_bundled(self, endpoint: Endpoint) -> bool:
        """The bundled model: too small to call `recall`, so what it would find is quoted."""
        bundled = self.models.bundled
        return bundled is not None and endpoint.model == bundled.model_id
