"""Which models the user can pick and how to reach each: every model of every connection
(the user's servers and providers, local servers found on this machine, hosted providers
that have a key, the bundled offline model), grouped by connection for the picker, and
resolved into an `Endpoint` for a request.

A model is picked by its address, `CONNECTION/MODEL`; `display_name()` is the one name
shown for it, in the picker, the reply header, the chat header and the command line.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ...providers import llm
from ...providers.connections import (
    BUNDLED_CONNECTION,
    BUNDLED_MODEL,
    HOSTED_MODELS,
    LEGACY_PREFIXES,
    LIBRARY_LABEL,
    PROVIDER_LABELS,
    SERVER_KINDS,
    Connection,
    ConnectionKind,
    ConnectionModel,
    ConnectionProblem,
)
from ...providers.connections import display_name as _display_name
from ...providers.keys import KeyStore
from ...providers.local.bundled_model import LocalModel
from ...providers.local.server_detection import DEFAULT_SERVERS, LocalServers
from ...store.database import Store
from .connections import ConnectionService, ConnectionState, ConnectionStatus
from .model_library import LIBRARY_CONNECTION, LibraryError, ModelLibraryService

BUNDLED_ID = f"{BUNDLED_CONNECTION}/{BUNDLED_MODEL}"
# The bundled model's window before its server has started and reported the real one
# (SmolLM2 was trained with 8,192 tokens of context).
BUNDLED_WINDOW_HINT = 8192
# The bundled 135M model often repeats itself until the cap; a reply of its own default
# length (a quarter of the window) could run for minutes. The user can set another cap.
BUNDLED_REPLY_CAP = 512

# Hosted models offered once their provider has a key: (provider, litellm id, label).
CLOUD_MODELS: tuple[tuple[str, str, str], ...] = tuple(
    (p, f"{p}/{name}", label) for p, models in HOSTED_MODELS.items() for name, label in models
)
CLOUD_PROVIDERS: tuple[str, ...] = tuple(dict.fromkeys(p for p, _, _ in CLOUD_MODELS))


def display_name(model: str, labels: Mapping[str, str] | None = None) -> str:
    """The one name of a model (an address, a litellm id or an imported name), as
    "Connection · model": "Ollama · llama3.2:3b", "Anthropic · Claude Sonnet 4.5",
    "Bundled · SmolLM2 135M". `labels` maps connection ids to the names the user gave them
    (`ModelCatalog.display_name` passes the current ones)."""
    return _display_name(model, labels)


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """One entry of the model picker.

    `id` is the address to pass back as `model=` (`ollama/llama3.2:3b`); `label` its display
    name. `window` is in tokens, `window_estimated` True when neither the server nor litellm
    knows it and the fallback is assumed. `price_in` / `price_out` are USD per million
    input / output tokens, None when litellm has no price ("unpriced"). `state` is the
    connection's ("ready", "detected", "unreachable", "unchecked", "needs-key"); `available`
    is False when the model cannot be used now, `reason` saying why.
    """

    id: str
    label: str
    provider: str  # the connection's id (for a hosted provider, litellm's provider prefix)
    api_base: str | None = None
    local: bool = False
    available: bool = True
    connection: str = ""
    connection_label: str = ""
    name: str = ""  # the model's own name on its server
    window: int | None = None
    window_estimated: bool = False
    price_in: float | None = None
    price_out: float | None = None
    state: str = "ready"
    reason: str = ""

    @property
    def priced(self) -> bool:
        return self.price_in is not None


@dataclass(frozen=True, slots=True)
class ModelGroup:
    """The picker's models of one connection, under its label."""

    connection: str
    label: str
    kind: ConnectionKind
    state: ConnectionState
    reason: str
    detected: bool
    models: tuple[ModelChoice, ...]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Everything a request needs to reach a model. The key never appears in a repr."""

    model: str  # what litellm is given
    label: str  # the display name
    window: int
    max_output: int
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    anthropic: bool = False
    choice: str = ""  # the address this endpoint was resolved from
    headers: tuple[tuple[str, str], ...] = ()
    timeout: float | None = None  # the connection's connect / first-byte timeout
    window_estimated: bool = False  # the fallback window: the server did not say
    connection: str = ""
    # the reply cap sent when the chat sets none (the bundled model's), else the budget's
    reply_cap: int | None = None


class ModelUnavailable(RuntimeError):
    """The chosen model cannot be reached; the message says what to do."""


_LOCAL_KINDS = frozenset({"ollama", "lmstudio", "llamacpp", "bundled"})


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
        connections: ConnectionService | None = None,
        library: ModelLibraryService | None = None,
    ) -> None:
        self.keys = keys
        self.library = library
        self.local_servers = local_servers
        self.bundled = bundled
        self.default_model = default_model
        self.extra = tuple(extra)
        self.connections = connections or ConnectionService(
            None, keys, detector=local_servers, bundled=bundled is not None
        )
        self._bundled_lock = asyncio.Lock()
        self._facts: dict[str, tuple[int | None, tuple[float, float] | None]] = {}

    # --- the picker -----------------------------------------------------------------

    def groups_now(self) -> list[ModelGroup]:
        """The picker's models grouped by connection, with windows and prices. Reads the
        keyring and litellm's model facts: call it off the GUI thread (`groups()`)."""
        self.connections.refresh_keys_now()
        labels = self.connections.labels()
        out: list[ModelGroup] = []
        if self.extra:
            out.append(ModelGroup("", "Configured", "openai-compatible", "ready", "", False,
                                  tuple(self._priced_extra(c) for c in self.extra)))
        for status in self.connections.statuses():
            conn = status.connection
            choices = tuple(self._choice(status, m, labels) for m in conn.offered())
            out.append(ModelGroup(conn.id, conn.display_label, conn.kind, status.state,
                                  status.reason, conn.detected, choices))
        library = self._library_group()
        if library is not None:
            out.append(library)
        return out

    def _library_group(self) -> ModelGroup | None:
        """Models downloaded from the library, run on the bundled llama.cpp server."""
        if self.library is None:
            return None
        installed = self.library.library.installed()
        if not installed:
            return None
        label = LIBRARY_LABEL
        choices = tuple(
            ModelChoice(
                id=f"{LIBRARY_CONNECTION}/{m.name}", label=f"{label} · {m.name}",
                provider=LIBRARY_CONNECTION, local=True, connection=LIBRARY_CONNECTION,
                connection_label=label, name=m.name, window=self.library.context_for(m),
            )
            for m in installed
        )
        return ModelGroup(LIBRARY_CONNECTION, label, "bundled", "ready", "", False, choices)

    async def groups(self) -> list[ModelGroup]:
        return await asyncio.to_thread(self.groups_now)

    def choices_now(self) -> list[ModelChoice]:
        """The picker's entries in one list (blocking, like `groups_now`)."""
        return [c for g in self.groups_now() for c in g.models]

    async def choices(self) -> list[ModelChoice]:
        return await asyncio.to_thread(self.choices_now)

    async def refresh(self) -> list[ModelGroup]:
        """The picker's Refresh: list every server connection's models again and probe the
        local ports, then the groups."""
        await self.connections.refresh()
        return await self.groups()

    def _choice(
        self, status: ConnectionStatus, model: ConnectionModel, labels: Mapping[str, str]
    ) -> ModelChoice:
        conn = status.connection
        address = conn.address(model.name)
        window, estimated = self._window(conn, model)
        price = self.price(conn.litellm_model(model.name), local=conn.kind in _LOCAL_KINDS)
        return ModelChoice(
            id=address,
            label=f"{conn.display_label} · {model.label or model.name}"
            if conn.kind != "bundled"
            else _display_name(address, labels),
            provider=conn.provider or conn.id,
            api_base=conn.api_base,
            local=conn.kind in _LOCAL_KINDS,
            available=status.usable,
            connection=conn.id,
            connection_label=conn.display_label,
            name=model.name,
            window=window,
            window_estimated=estimated,
            price_in=price[0] if price else None,
            price_out=price[1] if price else None,
            state=status.state,
            reason=status.reason,
        )

    def _litellm_facts(self, litellm_id: str) -> tuple[int | None, tuple[float, float] | None]:
        found = self._facts.get(litellm_id)
        if found is None:
            found = (llm.known_window(litellm_id), llm.price_per_million(litellm_id))
            self._facts[litellm_id] = found
        return found

    def _window(self, conn: Connection, model: ConnectionModel) -> tuple[int, bool]:
        """The server's window, else litellm's, else the fallback (estimated)."""
        if conn.kind == "bundled":
            running = self.bundled is not None and self.bundled.running
            return (self.bundled.window if running and self.bundled else BUNDLED_WINDOW_HINT), False
        if model.window:
            return model.window, False
        known, _ = self._litellm_facts(conn.litellm_model(model.name))
        if known:
            return known, False
        return llm.FALLBACK_WINDOW, True

    def price(self, litellm_id: str, *, local: bool = False) -> tuple[float, float] | None:
        """USD per million input / output tokens of the model a request names `litellm_id`,
        None when it has none: the price its requests are billed at (the reply's cost, the
        estimate by Send and the ledger all ask litellm of that same id), so the picker and
        the command line say what the chat will cost. A model on this computer has none:
        it is free, whatever a same-named hosted model costs (`is_local`)."""
        if local:
            return None
        return self._litellm_facts(litellm_id)[1]

    def _priced_extra(self, choice: ModelChoice) -> ModelChoice:
        """A configured model with the price its requests are billed at."""
        if choice.price_in is not None:
            return choice
        price = self.price(choice.id, local=choice.local)
        if price is None:
            return choice
        return replace(choice, price_in=price[0], price_out=price[1])

    # --- names ------------------------------------------------------------------------

    def display_name(self, model: str) -> str:
        """`display_name` with the current connections' labels and model names (no I/O)."""
        head, sep, name = model.strip().partition("/")
        if sep and name != BUNDLED_MODEL:
            conn = self.connections.find(LEGACY_PREFIXES.get(head, head))
            if conn is not None and conn.kind != "bundled":
                known = conn.model(name) or next(
                    (m for m in conn.offered() if m.name == name), None
                )
                return f"{conn.display_label} · {known.label if known and known.label else name}"
        return _display_name(model, self.connections.labels())

    def label_for(self, model_id: str) -> str:
        return self.display_name(model_id)

    def default_reply_cap(self, model: str | None) -> int | None:
        """The reply cap a chat on `model` gets when it sets none: the bundled model's
        (`BUNDLED_REPLY_CAP`), None for every other model. No I/O."""
        if not model:
            return None
        chosen = model.strip()
        bundled_id = self.bundled.model_id if self.bundled is not None else None
        return BUNDLED_REPLY_CAP if chosen in (BUNDLED_ID, bundled_id) else None

    def is_local(self, model: str) -> bool:
        """Whether `model` (an address) runs on this machine: the bundled model, a downloaded
        one, or one on a local server (Ollama, LM Studio, llama.cpp). Its requests cost
        nothing, which is not the same as a hosted model litellm has no price for. No I/O."""
        head, sep, _ = model.strip().partition("/")
        if not sep:
            return False
        if head in (BUNDLED_CONNECTION, LIBRARY_CONNECTION):
            return True
        conn = self.connections.find(LEGACY_PREFIXES.get(head, head))
        return conn is not None and conn.kind in _LOCAL_KINDS

    # --- defaults ---------------------------------------------------------------------

    def default(self) -> ModelChoice:
        """The default model among those available now (reads the keyring: not for the GUI
        thread; there, use `default_among` with the choices fetched by `choices()`)."""
        return self.default_among(self.choices_now())

    def default_among(self, choices: Sequence[ModelChoice]) -> ModelChoice:
        """The configured default if set, else the first usable one of `choices`."""
        for c in choices:
            if c.id == self.default_model:
                return c
        if self.default_model and self.default_model not in {c.id for c in choices}:
            provider = llm.provider_of(self.default_model)
            return ModelChoice(self.default_model, self.display_name(self.default_model), provider)
        for c in choices:
            if c.available:
                return c
        if choices:
            return choices[0]
        raise ModelUnavailable("No model is configured. Add a connection in Settings.")

    # --- resolving ----------------------------------------------------------------------

    async def resolve(self, model_id: str | None, api_base: str | None = None) -> Endpoint:
        """How to reach `model_id` (an address; the default when None); starts the bundled
        model on first use."""
        # Keyring look-ups may cross D-Bus: keep them off the caller's (GUI) thread.
        chosen = model_id or (await asyncio.to_thread(self.default)).id
        if chosen == BUNDLED_ID or (
            self.bundled is not None and chosen == self.bundled.model_id and not api_base
        ):
            return await self._bundled_endpoint()
        if self.library is not None and chosen.startswith(f"{LIBRARY_CONNECTION}/"):
            return await self._library_endpoint(chosen.partition("/")[2])
        for c in self.extra:
            if c.id == chosen and c.api_base:
                return await self._direct(chosen, api_base or c.api_base)
        if api_base is None and "/" in chosen:
            try:
                route = await self.connections.route(chosen)
            except ConnectionProblem as exc:
                raise ModelUnavailable(str(exc)) from None
            if route is not None:
                return await self._connection_endpoint(*route)
        return await self._direct(chosen, api_base)

    async def _connection_endpoint(self, conn: Connection, name: str) -> Endpoint:
        if conn.kind == "bundled":
            return await self._bundled_endpoint()
        status = self.connections.status(conn.id)
        model = conn.model(name)
        if conn.kind in SERVER_KINDS:
            if status is not None and status.state == "unreachable":
                raise ModelUnavailable(
                    f"{conn.display_label} is not reachable ({status.reason}); start it and retry"
                )
            if conn.detected and model is None:
                reason = ""
                if self.local_servers is not None:
                    reason = self.local_servers.last_error(conn.id)
                if reason:
                    raise ModelUnavailable(
                        f"{conn.display_label} is not running ({reason}); start it and retry"
                    )
                hint = f"; pull it with `ollama pull {name}`" if conn.kind == "ollama" else ""
                raise ModelUnavailable(f"{conn.display_label} does not offer {name}{hint}")
        served = model.name if model is not None else name
        litellm_id = conn.litellm_model(served)
        key = await self.connections.key_for(conn)
        if conn.kind == "hosted" and not key and not conn.base_url:
            raise ModelUnavailable(
                f"{conn.display_label} needs an API key. Add one in Settings → Connections "
                "(or `treechat connections add`), or pick another model."
            )
        window, estimated = await asyncio.to_thread(
            self._window, conn, model or ConnectionModel(served)
        )
        max_output = await asyncio.to_thread(llm.max_output_tokens, litellm_id)
        return Endpoint(
            model=litellm_id,
            label=self.display_name(conn.address(served)),
            window=window,
            max_output=min(max_output, max(256, window // 4)),
            api_base=conn.api_base,
            api_key=key,
            anthropic=llm.is_anthropic(litellm_id),
            choice=conn.address(served),
            headers=conn.headers,
            timeout=conn.timeout,
            window_estimated=estimated,
            connection=conn.id,
        )

    async def _direct(self, chosen: str, api_base: str | None) -> Endpoint:
        """A litellm id sent as it is (with an api_base, or with its provider's key)."""
        provider = llm.provider_of(chosen)
        keys = self.keys
        key = await asyncio.to_thread(keys.get_key, provider) if keys and provider else None
        known, max_output = await asyncio.to_thread(
            lambda: (llm.known_window(chosen), llm.max_output_tokens(chosen))
        )
        window = known or llm.FALLBACK_WINDOW
        if api_base is None and key is None and provider not in ("ollama", "ollama_chat"):
            who = PROVIDER_LABELS.get(provider, provider) or "its provider"
            raise ModelUnavailable(
                f"{chosen} needs an API key for {who}. "
                "Add one in Settings, or pick another model."
            )
        label = next((c.label for c in self.extra if c.id == chosen), self.display_name(chosen))
        return Endpoint(
            model=chosen,
            label=label,
            window=window,
            max_output=min(max_output, max(256, window // 4)),
            api_base=api_base,
            api_key=key,
            anthropic=llm.is_anthropic(chosen),
            choice=chosen,
            window_estimated=known is None,
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
            label=display_name(BUNDLED_ID),
            window=window,
            max_output=min(512, window // 4),
            api_base=self.bundled.api_base,
            api_key=self.bundled.api_key,
            choice=BUNDLED_ID,
            connection=BUNDLED_CONNECTION,
            reply_cap=BUNDLED_REPLY_CAP,
        )

    async def _library_endpoint(self, name: str) -> Endpoint:
        """A downloaded model: loaded on the bundled llama.cpp server (the one before it is
        unloaded), its window the one it was started with."""
        assert self.library is not None
        try:
            running = await self.library.run(name)
        except LibraryError as exc:
            raise ModelUnavailable(str(exc)) from None
        address = f"{LIBRARY_CONNECTION}/{running.name}"
        return Endpoint(
            model=running.model_id,
            label=self.display_name(address),
            window=running.window,
            max_output=min(2048, running.window // 4),
            api_base=running.api_base,
            api_key=running.api_key,
            choice=address,
            connection=LIBRARY_CONNECTION,
        )

    def supports_tools(self, endpoint: Endpoint) -> bool:
        """Whether a model on this machine can take tools: a downloaded one only when its
        chat template renders them; the bundled 135M model never."""
        if endpoint.connection == LIBRARY_CONNECTION:
            running = self.library.running if self.library is not None else None
            return running is not None and running.supports_tools
        return self.bundled is None or endpoint.model != self.bundled.model_id

    def estimate_endpoint(self) -> Endpoint:
        """The bundled model's endpoint for estimates, without starting it."""
        if self.bundled is None:
            raise ModelUnavailable("The bundled offline model is not available in this build.")
        window = self.bundled.window if self.bundled.running else BUNDLED_WINDOW_HINT
        return Endpoint(
            model=self.bundled.model_id,
            label=display_name(BUNDLED_ID),
            window=window,
            max_output=min(512, window // 4),
            choice=BUNDLED_ID,
            connection=BUNDLED_CONNECTION,
            reply_cap=BUNDLED_REPLY_CAP,
        )

    async def close(self) -> None:
        if self.library is not None:
            await self.library.close()
        if self.bundled is not None:
            await self.bundled.stop()
        if self.local_servers is not None:
            await self.local_servers.close()


def runs_here(store: Store) -> Callable[[str], bool]:
    """Whether a model named in a usage row ran on this computer, as the window's catalog
    says of it (the bundled model, a downloaded one, a saved connection of a local kind), and
    for the local servers found by the probe (Ollama, LM Studio, llama.cpp, never saved) by
    their address. For the command line, which prices the ledger as the window does without
    probing this machine's ports. No I/O after the saved connections are read."""
    catalog = ModelCatalog(connections=ConnectionService(store, bundled=True))
    probed = {server.kind for server in DEFAULT_SERVERS}

    def local(model: str) -> bool:
        head = model.strip().partition("/")[0]
        head = LEGACY_PREFIXES.get(head, head)
        if catalog.connections.find(head) is not None or head in (BUNDLED_CONNECTION,
                                                                  LIBRARY_CONNECTION):
            return catalog.is_local(model)
        return head in probed

    return local
