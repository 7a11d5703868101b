"""The user's connections: added, edited, tested and removed; their model lists refreshed
from the servers; the usual local ports probed; every model addressable as
`CONNECTION/MODEL`.

Connections live in the settings table (key `connections`), their API keys in the keyring
only. Reading (`statuses`, `find`, `labels`) never does I/O, so a window can call it on its
GUI thread; everything that talks to a server, the keyring or the store is async and runs
its blocking parts on worker threads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, cast

from ...core.clock import SYSTEM_CLOCK, Clock
from ...providers.connections import (
    BUNDLED_CONNECTION,
    BUNDLED_CONNECTION_LABEL,
    BUNDLED_LABEL,
    BUNDLED_MODEL,
    KIND_LABELS,
    KINDS,
    LEGACY_PREFIXES,
    PROVIDER_LABELS,
    SERVER_KINDS,
    Connection,
    ConnectionKind,
    ConnectionModel,
    ConnectionProblem,
    connection_id,
    default_openai_base,
    parse_base_url,
    split_address,
)
from ...providers.keys import KeyStore
from ...providers.local.server_detection import LocalServers
from ...providers.provider import LiteLLMProvider, Provider
from ...store.database import Store
from ..store_life.drafts import StoreRelease, reopen_within
from .trial_call import TestOutcome, trial_call

log = logging.getLogger(__name__)

__all__ = [
    "KIND_LABELS",
    "PROVIDER_LABELS",
    "SERVER_KINDS",
    "Connection",
    "ConnectionKind",
    "ConnectionProblem",
    "ConnectionService",
    "ConnectionState",
    "ConnectionStatus",
    "TestOutcome",
    "bundled_connection",
    "hosted_connection",
]

SETTINGS_CONNECTIONS = "connections"
# The most the start-up check of one added server may take before it counts as not answering
START_CHECK_SECONDS = 15.0

ConnectionState = Literal["ready", "detected", "unreachable", "unchecked", "needs-key"]


@dataclass(frozen=True, slots=True)
class ConnectionStatus:
    """A connection as the picker and Settings show it.

    `state`: "ready" (its models were listed, or need no listing), "detected" (a local server
    found by the probe), "unreachable" (it answered before and does not now; its last models
    are kept), "unchecked" (added, never listed yet), "needs-key" (a hosted provider with no
    key). `reason` says why a connection is not usable, in the server's own words where it
    gave any.
    """

    connection: Connection
    state: ConnectionState
    reason: str = ""
    checked_at: float = 0.0

    @property
    def usable(self) -> bool:
        return self.state in ("ready", "detected", "unchecked")


class ConnectionService:
    """Connections saved by the user, local servers found by the probe, hosted providers
    that have a key, and the bundled model, as one list."""

    def __init__(
        self,
        store: Store | None,
        keys: KeyStore | None = None,
        *,
        detector: LocalServers | None = None,
        provider: Provider | None = None,
        bundled: bool = False,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.store = store
        self.clock = clock
        self.keys = keys
        self.detector = detector
        self.provider: Provider = provider or LiteLLMProvider()
        self.bundled = bundled
        self._saved: dict[str, Connection] = {}
        self._state: dict[str, ConnectionStatus] = {}
        self._keyed: frozenset[str] = frozenset()
        self._lock = asyncio.Lock()
        self._listeners: list[Callable[[], None]] = []
        self._checking: asyncio.Task[None] | None = None
        # A command-line turn lets go of the store while this machine's ports are probed.
        self.release_store: StoreRelease | None = None
        if detector is not None:
            detector.add_listener(lambda _: self._changed())
        if store is not None:
            self._load(store.call(lambda r: r.get_setting(SETTINGS_CONNECTIONS, [])))

    async def reload(self) -> None:
        """Read the saved connections again (the store was replaced by a restored backup):
        what the old file held goes, the restored file's list comes, and listeners hear it."""
        if self.store is None:
            return
        records = await self.store.run(lambda r: r.get_setting(SETTINGS_CONNECTIONS, []))
        async with self._lock:
            self._saved.clear()
            self._state.clear()
            self._load(records)
        self._changed()

    def _load(self, records: object) -> None:
        for record in records if isinstance(records, list) else []:
            try:
                conn = Connection.from_record(record)
            except (ConnectionProblem, KeyError, TypeError, ValueError) as exc:
                log.warning("a saved connection could not be read and is ignored: %s", exc)
                continue
            self._saved[conn.id] = conn
            self._state[conn.id] = ConnectionStatus(conn, _first_state(conn))

    # --- change notices ---------------------------------------------------------------

    def add_listener(self, listener: Callable[[], None]) -> None:
        """Call `listener()` whenever the list of connections, their models or their states
        change (a connection added, edited, removed or re-listed; a local server found or
        gone). It runs on the event loop that made the change, never on a probe thread: the
        window re-reads `ModelCatalog.groups()` then."""
        self._listeners.append(listener)

    def _changed(self) -> None:
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:  # a listener's failure is its own, not the change's
                log.exception("a connections listener failed")

    # --- reading (no I/O) -------------------------------------------------------------

    def saved(self) -> tuple[Connection, ...]:
        """The connections the user added, in the order they were added."""
        return tuple(self._saved.values())

    def statuses(self) -> tuple[ConnectionStatus, ...]:
        """Every connection the picker lists, grouped in this order: the user's own, the
        bundled model, local servers found by the probe, hosted providers with a key."""
        out = [self._status_of_saved(c) for c in self._saved.values()]
        if self.bundled and BUNDLED_CONNECTION not in self._saved:
            out.append(ConnectionStatus(bundled_connection(), "ready"))
        if self.detector is not None:
            for status in self.detector.statuses:
                if status.server.id in self._saved:
                    continue
                out.append(
                    ConnectionStatus(
                        status.connection, status.state, status.error, status.checked_at
                    )
                )
        for provider in PROVIDER_LABELS:
            if provider in self._keyed and provider not in self._saved:
                out.append(ConnectionStatus(hosted_connection(provider, has_key=True), "ready"))
        return tuple(out)

    def _status_of_saved(self, conn: Connection) -> ConnectionStatus:
        status = self._state.get(conn.id) or ConnectionStatus(conn, "unchecked")
        status = replace(status, connection=conn)
        if conn.kind == "hosted" and not conn.has_key and not conn.base_url:
            keyed = conn.provider in self._keyed and conn.key_account == conn.provider
            if not keyed:
                return replace(status, state="needs-key", reason="no API key is stored")
        return status

    def find(self, ident: str) -> Connection | None:
        """The connection addressed as `ident`, if there is one (no I/O)."""
        if ident in self._saved:
            return self._saved[ident]
        if ident == BUNDLED_CONNECTION and self.bundled:
            return bundled_connection()
        if self.detector is not None:
            status = self.detector.status(ident)
            if status is not None:
                return status.connection
            spec = self.detector.spec(ident)
            if spec is not None:
                return spec.connection()
        if ident in PROVIDER_LABELS:
            return hosted_connection(ident, has_key=ident in self._keyed)
        return None

    def status(self, ident: str) -> ConnectionStatus | None:
        for status in self.statuses():
            if status.connection.id == ident:
                return status
        return None

    def labels(self) -> dict[str, str]:
        """Connection id -> the label shown for it (for `display_name`)."""
        return {s.connection.id: s.connection.display_label for s in self.statuses()}

    # --- keys -------------------------------------------------------------------------

    def refresh_keys_now(self) -> None:
        """Note which hosted providers have a key (reads the keyring: not on the GUI
        thread)."""
        if self.keys is None:
            return
        self._keyed = frozenset(p for p in PROVIDER_LABELS if self.keys.get_key(p))

    async def refresh_keys(self) -> None:
        await asyncio.to_thread(self.refresh_keys_now)

    async def key_for(self, conn: Connection) -> str | None:
        """The connection's key from the keyring (None when it has none)."""
        if self.keys is None or conn.kind == "bundled" or conn.detected:
            return None
        if conn.kind != "hosted" and not conn.has_key:
            return None
        keys = self.keys
        return await asyncio.to_thread(keys.get_key, conn.key_account) or None

    async def set_key(self, ident: str, key: str | None) -> Connection:
        """Store (or, with None or "", delete) the connection's key in the keyring."""
        conn = self._require_saved(ident)
        if self.keys is None:
            raise ConnectionProblem("no keyring is available to hold the key")
        keys = self.keys
        if key and key.strip():
            status = await asyncio.to_thread(keys.set_key, conn.key_account, key.strip())
            if not status.persistent:
                log.warning("the key for %s is kept in memory only: %s", ident, status.message)
            conn = replace(conn, has_key=True)
        else:
            await asyncio.to_thread(keys.delete_key, conn.key_account)
            conn = replace(conn, has_key=False)
        await self._save(conn)
        return conn

    # --- changing ---------------------------------------------------------------------

    async def add(
        self,
        kind: str,
        name: str,
        *,
        base_url: str = "",
        api_key: str | None = None,
        headers: Sequence[tuple[str, str]] = (),
        provider: str = "",
        models: Sequence[str] = (),
        timeout: float | None = None,
        label: str = "",
        list_models: bool = True,
    ) -> ConnectionStatus:
        """Add a connection and list its models from its server. Bad input (an unknown
        kind, a name in use, an address that is not http(s)) raises `ConnectionProblem` and
        saves nothing; a server that does not answer still saves the connection, with its
        status saying why."""
        conn = self.check_new(
            kind, name, base_url=base_url, headers=headers, provider=provider, models=models,
            timeout=timeout, label=label,
        )
        if conn.id in self._saved:
            raise ConnectionProblem(f"a connection named {conn.id!r} exists already")
        await self._save(conn)
        if api_key:
            conn = await self.set_key(conn.id, api_key)
        if list_models and conn.kind in SERVER_KINDS:
            return await self.refresh_one(conn.id)
        return self._status_of_saved(conn)

    def check_new(
        self,
        kind: str,
        name: str,
        *,
        base_url: str = "",
        headers: Sequence[tuple[str, str]] = (),
        provider: str = "",
        models: Sequence[str] = (),
        timeout: float | None = None,
        label: str = "",
    ) -> Connection:
        """The connection these fields describe, checked (raises `ConnectionProblem`)."""
        if kind not in KINDS:
            raise ConnectionProblem(f"unknown kind {kind!r}; one of: {', '.join(KINDS)}")
        if kind == "bundled":
            raise ConnectionProblem("the bundled model is always there; it is not added")
        ident = connection_id(name)
        url = ""
        if kind in SERVER_KINDS:
            if not base_url:
                raise ConnectionProblem(f"a {kind} connection needs --base-url")
            url = parse_base_url(base_url)
            if kind == "openai-compatible":
                url = default_openai_base(url)
        elif base_url:
            url = parse_base_url(base_url)
        if kind == "hosted":
            provider = (provider or ident).lower()
            if not provider.replace("_", "").isalnum():
                raise ConnectionProblem(f"{provider!r} is not a litellm provider name")
        if timeout is not None and not 0 < timeout <= 600:
            raise ConnectionProblem("the timeout must be between 0 and 600 seconds")
        return Connection(
            id=ident,
            kind=kind,
            label=label or name.strip(),
            base_url=url,
            provider=provider if kind == "hosted" else "",
            headers=tuple(headers),
            models=tuple(ConnectionModel(m) for m in models),
            timeout=timeout,
        )

    async def update(self, ident: str, **changes: object) -> ConnectionStatus:
        """Change a saved connection's label, base_url, headers, models or timeout, then list
        its models again."""
        conn = self._require_saved(ident)
        fields = {k: v for k, v in changes.items() if v is not None}
        unknown = set(fields) - {"label", "base_url", "headers", "models", "timeout"}
        if unknown:
            raise ConnectionProblem(f"cannot change {', '.join(sorted(unknown))}")
        if "base_url" in fields:
            url = parse_base_url(str(fields["base_url"]))
            compatible = conn.kind == "openai-compatible"
            conn = replace(conn, base_url=default_openai_base(url) if compatible else url)
        if "label" in fields:
            conn = replace(conn, label=cast(str, fields["label"]))
        if "models" in fields:
            models = cast(Iterable[object], fields["models"])
            conn = replace(conn, models=tuple(ConnectionModel(str(m)) for m in models))
        if "headers" in fields:
            conn = replace(conn, headers=tuple(cast(Iterable[tuple[str, str]], fields["headers"])))
        if "timeout" in fields:
            conn = replace(conn, timeout=cast(float, fields["timeout"]))
        await self._save(conn)
        if conn.kind in SERVER_KINDS:
            return await self.refresh_one(conn.id)
        return self._status_of_saved(conn)

    async def remove(self, ident: str) -> Connection:
        """Remove a saved connection and its key. Chats that used it keep their history."""
        conn = self._require_saved(ident)
        if self.keys is not None and (conn.has_key and conn.key_account != conn.provider):
            keys = self.keys
            await asyncio.to_thread(keys.delete_key, conn.key_account)
        self._saved.pop(conn.id, None)
        self._state.pop(conn.id, None)
        await self._persist()
        self._changed()
        return conn

    def _require_saved(self, ident: str) -> Connection:
        conn = self._saved.get(ident) or self._saved.get(ident.lower())
        if conn is not None:
            return conn
        if self.detector is not None and self.detector.spec(ident) is not None:
            raise ConnectionProblem(
                f"{ident!r} is a local server found by the probe of this machine's usual ports, "
                "not a saved connection"
            )
        names = ", ".join(self._saved) or "none yet"
        raise ConnectionProblem(f"no saved connection is named {ident!r} (saved: {names})")

    async def _save(self, conn: Connection) -> None:
        self._saved[conn.id] = conn
        previous = self._state.get(conn.id)
        self._state[conn.id] = replace(previous, connection=conn) if previous else (
            ConnectionStatus(conn, _first_state(conn))
        )
        await self._persist()
        self._changed()

    async def _persist(self) -> None:
        if self.store is None:
            return
        records = [c.to_record() for c in self._saved.values()]
        await self.store.run(lambda r: r.set_setting(SETTINGS_CONNECTIONS, records))

    # --- listing and probing ----------------------------------------------------------

    def start_detection(self, interval: float | None = 30.0,
                        check_within: float = START_CHECK_SECONDS) -> None:
        """Probe the usual local ports, and list the models of the servers the user added,
        in the background (call it after the first paint, from the window's event loop);
        with an interval, keep probing. Each added server gets `check_within` seconds."""
        if self.detector is not None:
            self.detector.start(interval)
        if self._checking is None:
            self._checking = asyncio.get_running_loop().create_task(
                self._check_saved(check_within), name="check connections")

    async def _check_saved(self, within: float) -> None:
        """The added servers' states as they are now, not "not checked yet" after a restart:
        all at once, each bounded in time (the requests wait on the loop, never block it)."""
        async def one(ident: str) -> None:
            try:
                await asyncio.wait_for(self.refresh_one(ident), within)
            except TimeoutError:
                self._note(ident, f"no answer within {within:g} s")
            except ConnectionProblem:
                pass  # removed meanwhile
        saved = [c.id for c in self._saved.values() if c.kind in SERVER_KINDS]
        await asyncio.gather(*(one(i) for i in saved))

    def note_answered(self, address: str, at: float) -> None:
        """A reply came through the connection `address` names at `at`: it is reachable,
        whatever a check of its model list before then said."""
        head = address.partition("/")[0]
        ident = LEGACY_PREFIXES.get(head, head)
        status = self._state.get(ident)
        if status is not None and status.state in ("unchecked", "unreachable") and (
                at >= status.checked_at):
            self._note(ident, "", "ready")

    def _note(self, ident: str, reason: str, state: ConnectionState | None = None) -> None:
        status = self._state.get(ident)
        if status is not None:
            self._state[ident] = replace(status, state=state or status.state, reason=reason,
                                         checked_at=self.clock.now())
            self._changed()

    async def refresh_one(self, ident: str) -> ConnectionStatus:
        """List one saved connection's models from its server, and save them."""
        async with self._lock:
            conn = self._require_saved(ident)
            before = self._state.get(conn.id)
            status = await self._list(conn)
            self._state[conn.id] = status
            if status.state == "ready":
                self._saved[conn.id] = status.connection
                await self._persist()
            if before is None or (before.state, before.connection.models, before.reason) != (
                status.state, status.connection.models, status.reason
            ):
                self._changed()
            return self._status_of_saved(self._saved[conn.id])

    async def refresh(self, idents: Iterable[str] | None = None) -> tuple[ConnectionStatus, ...]:
        """List the models of every saved server connection (or of `idents`) and probe the
        local ports, concurrently; the picker's Refresh."""
        wanted = set(idents) if idents is not None else None
        jobs = [
            self.refresh_one(c.id)
            for c in self._saved.values()
            if c.kind in SERVER_KINDS and (wanted is None or c.id in wanted)
        ]
        probe = self.detector is not None and (
            wanted is None or any(self.detector.spec(i) is not None for i in wanted)
        )
        await asyncio.gather(
            *jobs,
            *([self.detector.refresh()] if probe and self.detector is not None else []),
            self.refresh_keys(),
        )
        return self.statuses()

    async def _list(self, conn: Connection) -> ConnectionStatus:
        try:
            models = await self.provider.list_models(conn, await self.key_for(conn))
        except ConnectionProblem as exc:
            seen = self._state.get(conn.id)
            state: ConnectionState = (
                "unreachable" if seen is not None and seen.state == "ready" else "unchecked"
            )
            if conn.models:
                state = "unreachable"
            return ConnectionStatus(conn, state, str(exc), self.clock.now())
        return ConnectionStatus(replace(conn, models=models), "ready", "", self.clock.now())

    async def route(self, address: str) -> tuple[Connection, str] | None:
        """The connection and model name an address points at, or None when its first part
        names no connection. A local server on a usual port that was never probed (the
        command line does not probe in the background) is probed now."""
        ident, name = split_address(address)
        if self.detector is not None and ident not in self._saved:
            spec = self.detector.spec(ident)
            status = self.detector.status(ident)
            if spec is not None and (status is None or not status.available):
                await self._probe_released(self.detector)
        if ident in PROVIDER_LABELS and ident not in self._saved and self.keys is not None:
            await self.refresh_keys()
        conn = self.find(ident)
        return (conn, name) if conn is not None else None

    async def _probe_released(self, detector: LocalServers) -> None:
        """The probe is a wait on other programs: with `release_store` the store is free
        meanwhile (another command or the window can open it), and opened again after."""
        policy, store = self.release_store, self.store
        if policy is None or store is None:
            await detector.refresh()
            return
        await store.arelease()
        try:
            await detector.refresh()
        finally:
            await reopen_within(store, policy, "go on after this machine's servers answered")

    # --- testing ----------------------------------------------------------------------

    async def test(self, ident: str, model: str | None = None) -> TestOutcome:
        """List the connection's models, then make a one-token call to `model` (else its
        first model). On failure the outcome carries the provider's own words."""
        return await trial_call(self, ident, model)


def _first_state(conn: Connection) -> ConnectionState:
    """A server's models are unknown until listed; a hosted provider's are known."""
    return "unchecked" if conn.kind in SERVER_KINDS else "ready"


def bundled_connection() -> Connection:
    return Connection(
        id=BUNDLED_CONNECTION,
        kind="bundled",
        label=BUNDLED_CONNECTION_LABEL,
        models=(ConnectionModel(BUNDLED_MODEL, None, BUNDLED_LABEL),),
    )


def hosted_connection(provider: str, *, has_key: bool = False) -> Connection:
    kind: ConnectionKind = "hosted"
    return Connection(
        id=provider, kind=kind, label=PROVIDER_LABELS.get(provider, provider), provider=provider,
        has_key=has_key,
    )
