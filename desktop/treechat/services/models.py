"""Which models the user can pick and how to reach each: the bundled offline model, local
servers that are running, and cloud providers that have a key."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..providers import llm
from ..providers.keys import KeyStore
from ..providers.local_model import DISPLAY_NAME, LocalModel
from ..providers.local_servers import LocalServers

BUNDLED_ID = "local/smollm2-135m-instruct"
# The bundled model's window before its server has started and reported the real one
# (SmolLM2 was trained with 8,192 tokens of context).
BUNDLED_WINDOW_HINT = 8192

# Cloud models offered once their provider has a key, most capable first.
CLOUD_MODELS: tuple[tuple[str, str, str], ...] = (
    ("anthropic", "anthropic/claude-sonnet-4-5", "Claude Sonnet 4.5"),
    ("anthropic", "anthropic/claude-haiku-4-5", "Claude Haiku 4.5"),
    ("openai", "openai/gpt-4.1", "GPT-4.1"),
    ("openai", "openai/gpt-4o", "GPT-4o"),
    ("openai", "openai/gpt-4o-mini", "GPT-4o mini"),
    ("gemini", "gemini/gemini-2.5-pro", "Gemini 2.5 Pro"),
    ("gemini", "gemini/gemini-2.5-flash", "Gemini 2.5 Flash"),
    ("mistral", "mistral/mistral-large-latest", "Mistral Large"),
    ("deepseek", "deepseek/deepseek-chat", "DeepSeek Chat"),
    ("openrouter", "openrouter/anthropic/claude-sonnet-4.5", "OpenRouter · Claude Sonnet 4.5"),
)
CLOUD_PROVIDERS: tuple[str, ...] = tuple(dict.fromkeys(p for p, _, _ in CLOUD_MODELS))


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """One entry of the model picker."""

    id: str  # litellm model id, or BUNDLED_ID for the bundled model
    label: str
    provider: str
    api_base: str | None = None
    local: bool = False
    available: bool = True


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Everything a request needs to reach a model. The key never appears in a repr."""

    model: str  # what litellm is given
    label: str
    window: int
    max_output: int
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    anthropic: bool = False
    choice: str = ""  # the picker id this endpoint was resolved from


class ModelUnavailable(RuntimeError):
    """The chosen model cannot be reached; the message says what to do."""


class ModelCatalog:
    """Lists the models the user can pick and resolves one into an `Endpoint`."""

    def __init__(
        self,
        *,
        keys: KeyStore | None = None,
        local_servers: LocalServers | None = None,
        bundled: LocalModel | None = None,
        default_model: str | None = None,
        extra: Sequence[ModelChoice] = (),
    ) -> None:
        self.keys = keys
        self.local_servers = local_servers
        self.bundled = bundled
        self.default_model = default_model
        self.extra = tuple(extra)
        self._bundled_lock = asyncio.Lock()
        self._seen_local: dict[str, str] = {}  # model id -> api base of local servers seen

    def choices_now(self) -> list[ModelChoice]:
        """The picker's entries from what is known right now (no I/O on the caller's thread
        beyond reading the keyring status)."""
        out: list[ModelChoice] = list(self.extra)
        if self.bundled is not None:
            out.append(ModelChoice(BUNDLED_ID, DISPLAY_NAME, "local", local=True))
        if self.local_servers is not None:
            for m in self.local_servers.models:
                self._seen_local[m.model_id] = m.api_base
                out.append(
                    ModelChoice(m.model_id, m.display_name, m.server.protocol, m.api_base, True)
                )
        if self.keys is not None:
            keyed = {p for p in CLOUD_PROVIDERS if self.keys.get_key(p)}
            for provider, model, label in CLOUD_MODELS:
                if provider in keyed:
                    out.append(ModelChoice(model, label, provider))
        return out

    async def choices(self) -> list[ModelChoice]:
        return await asyncio.to_thread(self.choices_now)

    def default(self) -> ModelChoice:
        """The default model among those available now (reads the keyring: not for the GUI
        thread; there, use `default_among` with the choices fetched by `choices()`)."""
        return self.default_among(self.choices_now())

    def default_among(self, choices: Sequence[ModelChoice]) -> ModelChoice:
        """The configured default if set, else the first of `choices`."""
        for c in choices:
            if c.id == self.default_model:
                return c
        if self.default_model and self.default_model not in {c.id for c in choices}:
            provider = llm.provider_of(self.default_model)
            return ModelChoice(self.default_model, self.default_model, provider)
        if choices:
            return choices[0]
        raise ModelUnavailable("No model is configured. Add an API key in Settings.")

    def label_for(self, model_id: str) -> str:
        for c in self.choices_now():
            if c.id == model_id:
                return c.label
        return model_id

    async def resolve(self, model_id: str | None, api_base: str | None = None) -> Endpoint:
        """How to reach `model_id` (the default when None); starts the bundled model on
        first use."""
        # Keyring look-ups may cross D-Bus: keep them off the caller's (GUI) thread.
        chosen = model_id or (await asyncio.to_thread(self.default)).id
        if chosen == BUNDLED_ID:
            return await self._bundled_endpoint()
        if self.local_servers is not None and api_base is None:
            for m in self.local_servers.models:
                if m.model_id == chosen:
                    served = m.window or 0
                    if not served:
                        served = await asyncio.to_thread(llm.model_window, chosen)
                    kwargs = m.completion_kwargs()
                    return Endpoint(
                        model=chosen,
                        label=m.display_name,
                        window=served,
                        max_output=min(4096, served // 4),
                        api_base=m.api_base,
                        api_key=kwargs.get("api_key"),
                        choice=chosen,
                    )
            if chosen in self._seen_local:
                # It was offered by a local server that has since gone away or dropped it.
                status = await self.local_servers.check(chosen, self._seen_local[chosen])
                if status.available and status.model is not None:
                    self._seen_local.pop(chosen)
                    return await self.resolve(chosen)
                raise ModelUnavailable(status.reason)
        for c in self.extra:
            if c.id == chosen and c.api_base:
                api_base = api_base or c.api_base
        provider = llm.provider_of(chosen)
        keys = self.keys
        key = await asyncio.to_thread(keys.get_key, provider) if keys and provider else None
        window, max_output, label = await asyncio.to_thread(
            lambda: (
                llm.model_window(chosen),
                llm.max_output_tokens(chosen),
                self.label_for(chosen),
            )
        )
        if api_base is None and key is None and provider not in ("ollama", "ollama_chat"):
            raise ModelUnavailable(
                f"{chosen} needs an API key for {provider or 'its provider'}. "
                "Add one in Settings, or pick another model."
            )
        return Endpoint(
            model=chosen,
            label=label,
            window=window,
            max_output=min(max_output, max(256, window // 4)),
            api_base=api_base,
            api_key=key,
            anthropic=llm.is_anthropic(chosen),
            choice=chosen,
        )

    async def _bundled_endpoint(self) -> Endpoint:
        if self.bundled is None:
            raise ModelUnavailable("The bundled offline model is not available in this build.")
        async with self._bundled_lock:
            if not self.bundled.running:
                await self.bundled.start()
        window = self.bundled.window
        return Endpoint(
            model=self.bundled.model_id,
            label=DISPLAY_NAME,
            window=window,
            max_output=min(512, window // 4),
            api_base=self.bundled.api_base,
            api_key=self.bundled.api_key,
            choice=BUNDLED_ID,
        )

    def estimate_endpoint(self) -> Endpoint:
        """The bundled model's endpoint for estimates, without starting it."""
        if self.bundled is None:
            raise ModelUnavailable("The bundled offline model is not available in this build.")
        window = self.bundled.window if self.bundled.running else BUNDLED_WINDOW_HINT
        return Endpoint(
            model=self.bundled.model_id,
            label=DISPLAY_NAME,
            window=window,
            max_output=min(512, window // 4),
            choice=BUNDLED_ID,
        )

    async def close(self) -> None:
        if self.bundled is not None:
            await self.bundled.stop()
        if self.local_servers is not None:
            await self.local_servers.close()
