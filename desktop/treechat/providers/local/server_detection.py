"""Model servers already running on this machine: Ollama (11434), LM Studio (1234) and a
llama.cpp server (8080), found by probing those loopback ports (or the ones
`TREECHAT_LOCAL_SERVERS` names) and nothing beyond them.

A probe runs on a thread of its own with short timeouts, so neither start-up nor the GUI
thread waits on it. A server that answered once and then stops answering is kept, marked
unreachable with the models it last offered, so the picker shows why a model went grey
instead of losing it. The probe list is a constructor argument, so tests pass servers on
free ports.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from ...core.clock import Clock
from ..connections import (
    Connection,
    ConnectionModel,
    ConnectionProblem,
    is_loopback,
    parse_base_url,
)
from ..model_lists import fetch_models

LocalKind = Literal["ollama", "lmstudio", "llamacpp"]
PROBE_TIMEOUT = httpx.Timeout(2.0, connect=0.5)
DEFAULT_WATCH_INTERVAL = 30.0


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """Where a kind of local server listens. Only loopback addresses are accepted: a probe
    never leaves the machine."""

    kind: LocalKind
    label: str
    base_url: str
    id: str = ""  # the connection id its models are addressed by; the kind when empty

    def __post_init__(self) -> None:
        url = parse_base_url(self.base_url)
        if not is_loopback(url):
            raise ConnectionProblem(
                f"{self.base_url} is not on this machine; only loopback is probed"
            )
        object.__setattr__(self, "base_url", url)
        if not self.id:
            object.__setattr__(self, "id", self.kind)

    @property
    def address(self) -> str:
        return self.base_url.split("://", 1)[-1].rstrip("/")

    def connection(self, models: Iterable[ConnectionModel] = ()) -> Connection:
        return Connection(
            id=self.id,
            kind=self.kind,
            label=self.label,
            base_url=self.base_url,
            models=tuple(models),
            detected=True,
        )


OLLAMA = ServerSpec("ollama", "Ollama", "http://127.0.0.1:11434")
LM_STUDIO = ServerSpec("lmstudio", "LM Studio", "http://127.0.0.1:1234")
LLAMA_CPP = ServerSpec("llamacpp", "llama.cpp", "http://127.0.0.1:8080")
DEFAULT_SERVERS: tuple[ServerSpec, ...] = (OLLAMA, LM_STUDIO, LLAMA_CPP)
_KINDS: dict[str, ServerSpec] = {s.kind: s for s in DEFAULT_SERVERS}

# Where local servers are looked for: unset means the usual ports; "none" (or empty) means
# nowhere; otherwise "kind=url" pairs separated by commas ("ollama=http://127.0.0.1:21434").
# Tests set it so they never see the machine's own servers; a person can point detection at
# a server on another port.
LOCAL_SERVERS_ENV = "TREECHAT_LOCAL_SERVERS"


def servers_from_environment(environ: Mapping[str, str] = os.environ) -> tuple[ServerSpec, ...]:
    """The servers to probe, as `TREECHAT_LOCAL_SERVERS` says; a bad entry is one line."""
    raw = environ.get(LOCAL_SERVERS_ENV)
    if raw is None:
        return DEFAULT_SERVERS
    raw = raw.strip()
    if raw.lower() in ("", "none"):
        return ()
    specs: list[ServerSpec] = []
    for entry in raw.split(","):
        kind, sep, url = entry.strip().partition("=")
        known = _KINDS.get(kind.strip())
        if not sep or known is None:
            raise ConnectionProblem(
                f"{LOCAL_SERVERS_ENV}: {entry.strip()!r} is not kind=url with kind one of "
                f"{', '.join(_KINDS)} (or 'none')"
            )
        specs.append(ServerSpec(known.kind, known.label, url.strip()))
    return tuple(specs)

ServerState = Literal["detected", "unreachable"]


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """The latest probe of a server that has answered at least once. `models` are the ones
    it offers now, or, when unreachable, the ones it offered last."""

    server: ServerSpec
    state: ServerState
    models: tuple[ConnectionModel, ...] = ()
    error: str = ""
    checked_at: float = 0.0

    @property
    def available(self) -> bool:
        return self.state == "detected"

    @property
    def connection(self) -> Connection:
        return self.server.connection(self.models)


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """One probe, seen or not: what `probe_server` returns."""

    server: ServerSpec
    answered: bool
    models: tuple[ConnectionModel, ...] = ()
    error: str = ""
    checked_at: float = 0.0


async def probe_server(
    server: ServerSpec, client: httpx.AsyncClient, now: Callable[[], float] = time.time
) -> ProbeResult:
    """Ask one server for its models; any failure is a result saying why, never raised."""
    try:
        models = await fetch_models(server.connection(), client)
    except ConnectionProblem as exc:
        return ProbeResult(server, False, error=str(exc), checked_at=now())
    return ProbeResult(server, True, models, checked_at=now())


class LocalServers:
    """The latest known state of the local servers, refreshed in the background.

    Reading (`statuses`, `status`, `models`) never does I/O, so the picker can call it at any
    time; `refresh()`, `start()` and `watch()` probe, on a worker thread.
    """

    def __init__(
        self,
        servers: Iterable[ServerSpec] = DEFAULT_SERVERS,
        *,
        timeout: httpx.Timeout = PROBE_TIMEOUT,
        on_change: Callable[[tuple[ServerStatus, ...]], None] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.servers = tuple(servers)
        # Without a clock, the system's: probe times and the watch interval are real time.
        self._now: Callable[[], float] = clock.now if clock is not None else time.time
        self._sleep: Callable[[float], Awaitable[None]] = (
            clock.sleep if clock is not None else asyncio.sleep
        )
        self._timeout = timeout
        self._listeners: list[Callable[[tuple[ServerStatus, ...]], None]] = []
        if on_change is not None:
            self._listeners.append(on_change)
        self._statuses: dict[ServerSpec, ServerStatus] = {}
        self._last: dict[ServerSpec, ProbeResult] = {}
        self._lock = threading.Lock()
        self._probing: concurrent.futures.Future[tuple[tuple[ServerStatus, ...], bool]] | None = (
            None
        )
        self._task: asyncio.Task[Any] | None = None
        self.probes = 0  # how many probes have finished (a refresh counts once)

    # --- reading (no I/O) ---------------------------------------------------------------

    @property
    def statuses(self) -> tuple[ServerStatus, ...]:
        """Servers that have answered at least once, in probe-list order."""
        with self._lock:
            return tuple(self._statuses[s] for s in self.servers if s in self._statuses)

    @property
    def models(self) -> tuple[tuple[ServerSpec, ConnectionModel], ...]:
        """Every model offered by a server that answered its latest probe."""
        return tuple((s.server, m) for s in self.statuses if s.available for m in s.models)

    @property
    def checked(self) -> bool:
        """Whether a probe has finished at least once."""
        return self.probes > 0

    def spec(self, ident: str) -> ServerSpec | None:
        for server in self.servers:
            if server.id == ident:
                return server
        return None

    def status(self, ident: str) -> ServerStatus | None:
        """The status of the server addressed as `ident` (`ollama`), if it was ever seen."""
        spec = self.spec(ident)
        if spec is None:
            return None
        with self._lock:
            return self._statuses.get(spec)

    def last_error(self, ident: str) -> str:
        """Why the latest probe of `ident` found nothing ('' when it answered or was never
        probed)."""
        spec = self.spec(ident)
        with self._lock:
            result = self._last.get(spec) if spec is not None else None
        return result.error if result is not None else ""

    # --- probing ------------------------------------------------------------------------

    def add_listener(self, listener: Callable[[tuple[ServerStatus, ...]], None]) -> None:
        """Call `listener(statuses)` after a probe that changed what is known, on the thread
        (and event loop) that asked for the probe, never on the probe's own thread."""
        self._listeners.append(listener)

    async def refresh(self) -> tuple[ServerStatus, ...]:
        """Probe every server now, concurrently and off the caller's thread; overlapping
        calls share one probe."""
        with self._lock:
            own = self._probing is None or self._probing.done()
            if own:
                self._probing = concurrent.futures.Future()
                threading.Thread(
                    target=self._probe_on_thread,
                    args=(self._probing,),
                    name="treechat-local-probe",
                    daemon=True,
                ).start()
            probing = self._probing
        assert probing is not None
        # shield: a cancelled caller (the watch being closed) must not cancel the probe that
        # other callers share, nor leave the probe's thread setting a result on a dead future.
        statuses, changed = await asyncio.shield(asyncio.wrap_future(probing))
        if own and changed:
            for listener in list(self._listeners):
                listener(statuses)
        return statuses

    def start(self, interval: float | None = DEFAULT_WATCH_INTERVAL) -> None:
        """Begin probing in the background and return at once (start-up does not wait).
        With an interval, keep re-probing so servers that start or stop later are noticed.
        Call it from a running event loop."""
        if self._task is not None and not self._task.done():
            return
        self._task = asyncio.ensure_future(
            self.watch(interval) if interval is not None else self.refresh()
        )

    async def watch(self, interval: float = DEFAULT_WATCH_INTERVAL) -> None:
        while True:
            await self.refresh()
            await self._sleep(interval)

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _probe_on_thread(
        self, future: concurrent.futures.Future[tuple[tuple[ServerStatus, ...], bool]]
    ) -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            statuses = asyncio.run(self._probe_all())
        except BaseException as exc:  # reported to whoever awaits the probe
            future.set_exception(exc)
        else:
            future.set_result(statuses)

    async def _probe_all(self) -> tuple[tuple[ServerStatus, ...], bool]:
        # trust_env=False: proxies configured for the internet must not see loopback probes.
        async with httpx.AsyncClient(timeout=self._timeout, trust_env=False) as client:
            probes = (probe_server(s, client, self._now) for s in self.servers)
            results = await asyncio.gather(*probes)
        with self._lock:
            before = self._snapshot()
            for result in results:
                self._last[result.server] = result
                if result.answered:
                    self._statuses[result.server] = ServerStatus(
                        result.server, "detected", result.models, checked_at=result.checked_at
                    )
                elif result.server in self._statuses:
                    seen = self._statuses[result.server]
                    self._statuses[result.server] = ServerStatus(
                        result.server, "unreachable", seen.models, result.error, result.checked_at
                    )
            changed = self._snapshot() != before
            self.probes += 1
        return self.statuses, changed

    def _snapshot(self) -> tuple[tuple[ServerSpec, str, tuple[ConnectionModel, ...]], ...]:
        return tuple((s.server, s.state, s.models) for s in self._statuses.values())
