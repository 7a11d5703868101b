"""Model servers already running on this machine: Ollama (11434) and LM Studio / llama.cpp (1234).

Probed in the background with short timeouts so start-up never waits on them; re-probed on
demand and periodically, so a server that goes away turns its models unavailable, not into
a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import httpx

ServerProtocol = Literal["ollama", "openai"]
DUMMY_API_KEY = "sk-local-no-key"
PROBE_TIMEOUT = httpx.Timeout(2.0, connect=0.5)
DEFAULT_WATCH_INTERVAL = 30.0


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """Where a kind of local server listens and which API it speaks."""

    protocol: ServerProtocol
    label: str
    base_url: str

    @property
    def address(self) -> str:
        return self.base_url.split("://", 1)[-1].rstrip("/")

    @property
    def api_base(self) -> str:
        """The api_base litellm wants: Ollama's root, or the OpenAI-style `/v1`."""
        root = self.base_url.rstrip("/")
        return root if self.protocol == "ollama" else f"{root}/v1"


OLLAMA = ServerSpec("ollama", "Ollama", "http://127.0.0.1:11434")
LM_STUDIO = ServerSpec("openai", "LM Studio / llama.cpp", "http://127.0.0.1:1234")
DEFAULT_SERVERS: tuple[ServerSpec, ...] = (OLLAMA, LM_STUDIO)


@dataclass(frozen=True, slots=True)
class LocalServerModel:
    """A model a local server offers, named the way litellm expects."""

    name: str
    server: ServerSpec
    window: int | None = None

    @property
    def model_id(self) -> str:
        prefix = "ollama_chat" if self.server.protocol == "ollama" else "openai"
        return f"{prefix}/{self.name}"

    @property
    def api_base(self) -> str:
        return self.server.api_base

    @property
    def display_name(self) -> str:
        return f"{self.name} ({self.server.label}, local)"

    def completion_kwargs(self) -> dict[str, Any]:
        """What to pass to `litellm.acompletion` for this model."""
        kwargs: dict[str, Any] = {"model": self.model_id, "api_base": self.api_base}
        if self.server.protocol == "openai":
            kwargs["api_key"] = DUMMY_API_KEY
        return kwargs


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """The outcome of the latest probe of one server."""

    server: ServerSpec
    available: bool
    models: tuple[LocalServerModel, ...] = ()
    error: str = ""
    checked_at: float = 0.0


@dataclass(frozen=True, slots=True)
class ModelStatus:
    """Whether a model id can be used right now, and if not, a sentence saying why."""

    available: bool
    reason: str = ""
    model: LocalServerModel | None = None


def _ollama_models(server: ServerSpec, body: Any) -> tuple[LocalServerModel, ...]:
    entries = body.get("models") if isinstance(body, Mapping) else None
    if not isinstance(entries, list):
        raise ValueError("no 'models' list in /api/tags")
    names = []
    for entry in entries:
        if isinstance(entry, Mapping):
            name = entry.get("model") or entry.get("name")
            if isinstance(name, str) and name:
                names.append(name)
    return tuple(LocalServerModel(name, server) for name in sorted(set(names)))


def _window_of(entry: Mapping[str, Any], props_window: int | None) -> int | None:
    meta = entry.get("meta")
    if isinstance(meta, Mapping):
        for key in ("n_ctx", "n_ctx_train"):
            value = meta.get(key)
            if isinstance(value, int) and value > 0:
                return value
    for key in ("loaded_context_length", "max_context_length", "context_length"):
        value = entry.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return props_window


def _openai_models(
    server: ServerSpec, body: Any, props_window: int | None
) -> tuple[LocalServerModel, ...]:
    entries = body.get("data") if isinstance(body, Mapping) else None
    if not isinstance(entries, list):
        raise ValueError("no 'data' list in /v1/models")
    models: dict[str, LocalServerModel] = {}
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        name = entry.get("id")
        # Embedding models share the list on LM Studio; they cannot chat.
        if not isinstance(name, str) or not name or "embed" in name.lower():
            continue
        models[name] = LocalServerModel(name, server, _window_of(entry, props_window))
    return tuple(models[name] for name in sorted(models))


async def probe_server(
    server: ServerSpec, client: httpx.AsyncClient, now: Callable[[], float] = time.time
) -> ServerStatus:
    """Ask one server for its models; any failure is an unavailable status, never raised."""
    try:
        if server.protocol == "ollama":
            response = await client.get(f"{server.base_url.rstrip('/')}/api/tags")
            response.raise_for_status()
            models = _ollama_models(server, response.json())
        else:
            response = await client.get(f"{server.api_base}/models")
            response.raise_for_status()
            models = _openai_models(server, response.json(), await _props_window(server, client))
    except httpx.ConnectError:
        return ServerStatus(server, False, error=f"nothing is listening on {server.address}",
                            checked_at=now())
    except httpx.TimeoutException:
        return ServerStatus(server, False, error=f"{server.address} did not answer in time",
                            checked_at=now())
    except httpx.HTTPStatusError as exc:
        return ServerStatus(server, False,
                            error=f"{server.address} answered HTTP {exc.response.status_code}",
                            checked_at=now())
    except (httpx.HTTPError, ValueError) as exc:
        return ServerStatus(server, False,
                            error=f"{server.address} is not a {server.label} server ({exc})",
                            checked_at=now())
    return ServerStatus(server, True, models, checked_at=now())


async def _props_window(server: ServerSpec, client: httpx.AsyncClient) -> int | None:
    """The serving window of a llama.cpp server (its /props); None for servers without it."""
    with contextlib.suppress(httpx.HTTPError, ValueError):
        response = await client.get(f"{server.base_url.rstrip('/')}/props")
        if response.status_code == 200:
            body = response.json()
            settings = body.get("default_generation_settings") if isinstance(body, dict) else None
            value = settings.get("n_ctx") if isinstance(settings, dict) else None
            if isinstance(value, int) and value > 0:
                return value
    return None


class LocalServers:
    """The latest known state of the local servers, refreshed in the background.

    Reading (`statuses`, `models`, `status_of`) never does I/O, so the model picker can call
    it at any time; `refresh()` / `start()` / `watch()` do the probing.
    """

    def __init__(
        self,
        servers: Iterable[ServerSpec] = DEFAULT_SERVERS,
        *,
        timeout: httpx.Timeout = PROBE_TIMEOUT,
        on_change: Callable[[tuple[ServerStatus, ...]], None] | None = None,
    ) -> None:
        self.servers = tuple(servers)
        self._timeout = timeout
        self._on_change = on_change
        self._statuses: dict[ServerSpec, ServerStatus] = {}
        self._task: asyncio.Task[Any] | None = None
        self._refreshing: asyncio.Task[tuple[ServerStatus, ...]] | None = None

    @property
    def statuses(self) -> tuple[ServerStatus, ...]:
        """Last probe results, in server order; empty until the first probe finishes."""
        return tuple(self._statuses[s] for s in self.servers if s in self._statuses)

    @property
    def models(self) -> tuple[LocalServerModel, ...]:
        """Every model offered by a server that answered its latest probe."""
        return tuple(m for status in self.statuses if status.available for m in status.models)

    def server_for(self, model_id: str, api_base: str | None = None) -> ServerSpec | None:
        """Which of our servers a litellm model id (and api_base) points at, if any."""
        for server in self.servers:
            if server.protocol == "ollama" and model_id.startswith(("ollama_chat/", "ollama/")):
                if api_base is None or api_base.rstrip("/") == server.api_base:
                    return server
            elif (
                server.protocol == "openai"
                and model_id.startswith("openai/")
                and api_base is not None
                and api_base.rstrip("/") == server.api_base
            ):
                return server
        return None

    def status_of(self, model_id: str, api_base: str | None = None) -> ModelStatus:
        """Whether a local-server model can be used now, from the latest probe (no I/O)."""
        server = self.server_for(model_id, api_base)
        if server is None:
            return ModelStatus(False, f"{model_id} is not served by a known local server")
        status = self._statuses.get(server)
        if status is None:
            return ModelStatus(False, f"{server.label} has not been checked yet")
        if not status.available:
            return ModelStatus(
                False, f"{server.label} is not running ({status.error}); start it and retry"
            )
        name = model_id.split("/", 1)[1]
        for model in status.models:
            tagged = server.protocol == "ollama" and model.name == f"{name}:latest"
            if model.name == name or tagged:
                return ModelStatus(True, model=model)
        hint = f"; pull it with `ollama pull {name}`" if server.protocol == "ollama" else ""
        return ModelStatus(False, f"{server.label} does not offer {name}{hint}")

    async def refresh(self) -> tuple[ServerStatus, ...]:
        """Probe every server now (concurrently); overlapping calls share one probe."""
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.ensure_future(self._probe_all())
        return await asyncio.shield(self._refreshing)

    async def check(self, model_id: str, api_base: str | None = None) -> ModelStatus:
        """Re-probe, then say whether the model is usable (call before sending to it)."""
        if self.server_for(model_id, api_base) is not None:
            await self.refresh()
        return self.status_of(model_id, api_base)

    def start(self, interval: float | None = DEFAULT_WATCH_INTERVAL) -> None:
        """Begin probing in the background and return at once (start-up does not wait).

        With an interval, keep re-probing so servers that start or stop later are noticed.
        """
        if self._task is not None and not self._task.done():
            return
        self._task = asyncio.ensure_future(
            self.watch(interval) if interval is not None else self.refresh()
        )

    async def watch(self, interval: float = DEFAULT_WATCH_INTERVAL) -> None:
        while True:
            await self.refresh()
            await asyncio.sleep(interval)

    async def close(self) -> None:
        for task in (self._task, self._refreshing):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._task = None
        self._refreshing = None

    async def _probe_all(self) -> tuple[ServerStatus, ...]:
        # trust_env=False: proxies configured for the internet must not see loopback probes.
        async with httpx.AsyncClient(timeout=self._timeout, trust_env=False) as client:
            results = await asyncio.gather(*(probe_server(s, client) for s in self.servers))
        before = self._snapshot()
        self._statuses = dict(zip(self.servers, results, strict=True))
        if self._on_change is not None and self._snapshot() != before:
            self._on_change(self.statuses)
        return self.statuses

    def _snapshot(self) -> tuple[tuple[ServerSpec, bool, tuple[LocalServerModel, ...]], ...]:
        return tuple((s.server, s.available, s.models) for s in self.statuses)
