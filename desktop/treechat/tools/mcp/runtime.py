"""MCP servers' life cycle and calls, on a thread of their own.

Every connection lives on one background thread running its own asyncio loop: spawning a
server, its handshake, JSON parsing and a server that floods us all stay off the caller's
loop (the window's loop is the GUI thread). Callers await `McpRuntime` methods from any loop;
cancelling such an await cancels the work on the MCP thread too (the SDK then tells the server
the request is cancelled).
"""
from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import logging
import threading
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

from .config import ServerConfig
from .server_connection import GUARD_SCRIPT, ServerConnection
from .server_state import (
    CallOutcome,
    McpCallError,
    PromptArgument,
    PromptInfo,
    PromptText,
    ResourceInfo,
    ServerState,
    Status,
    ToolInfo,
    call_outcome,
)

__all__ = [
    "GUARD_SCRIPT",
    "CallOutcome",
    "McpCallError",
    "McpRuntime",
    "PromptArgument",
    "PromptInfo",
    "PromptText",
    "ResourceInfo",
    "ServerState",
    "Status",
    "ToolInfo",
    "call_outcome",
]

log = logging.getLogger(__name__)

T = TypeVar("T")


class McpRuntime:
    """Every MCP server this process talks to. Thread-safe; methods are awaited from any
    loop. `close()` stops them all (also at interpreter exit)."""

    def __init__(self, on_state: Callable[[ServerState], None] | None = None) -> None:
        self._listeners: list[Callable[[ServerState], None]] = [on_state] if on_state else []
        self._connections: dict[str, ServerConnection] = {}
        self._states: dict[str, ServerState] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._closed = False

    # --- the thread ------------------------------------------------------------------

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise McpCallError("MCP servers are shut down")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                started = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(started.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=run, name="mcp", daemon=True)
                self._thread.start()
                started.wait()
                self._loop = loop
                atexit.register(self.close)
            return self._loop

    def _submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self._ensure_loop())

    async def _on_mcp(self, coro: Coroutine[Any, Any, T]) -> T:
        return await asyncio.wrap_future(self._submit(coro))

    def run_sync(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """For callers with no loop (the command line)."""
        return self._submit(coro).result(timeout)

    def add_listener(self, listener: Callable[[ServerState], None]) -> None:
        """Called on the MCP thread whenever a server's state changes."""
        self._listeners.append(listener)

    def _notify(self, state: ServerState) -> None:
        with self._lock:
            self._states[state.name] = state
        for listener in list(self._listeners):
            try:
                listener(state)
            except Exception:
                log.exception("an MCP state listener failed")

    # --- state -----------------------------------------------------------------------

    def state(self, name: str) -> ServerState:
        with self._lock:
            return self._states.get(name, ServerState(name))

    def states(self) -> dict[str, ServerState]:
        with self._lock:
            return dict(self._states)

    # --- life cycle ------------------------------------------------------------------

    def _connection(self, config: ServerConfig) -> ServerConnection:
        conn = self._connections.get(config.name)
        if conn is None:
            conn = ServerConnection(config, self._notify)
            self._connections[config.name] = conn
        return conn

    async def start(self, config: ServerConfig) -> ServerState:
        """Start the server unless it is running or starting; failures are in the state."""

        async def work() -> ServerState:
            conn = self._connection(config)
            if conn.config != config and conn.state.status in ("ready", "starting"):
                await conn.stop()
            conn.config = config
            return await conn.start()

        return await self._on_mcp(work())

    async def restart(self, config: ServerConfig) -> ServerState:
        async def work() -> ServerState:
            conn = self._connection(config)
            await conn.stop()
            conn.config = config
            return await conn.start()

        return await self._on_mcp(work())

    async def stop(self, name: str) -> None:
        async def work() -> None:
            conn = self._connections.pop(name, None)
            if conn is not None:
                await conn.stop()
            with self._lock:
                self._states.pop(name, None)

        if self._loop is not None:
            await self._on_mcp(work())

    async def _stop_all(self) -> None:
        conns = list(self._connections.values())
        self._connections.clear()
        await asyncio.gather(*(c.stop() for c in conns), return_exceptions=True)

    def close(self, timeout: float = 15.0) -> None:
        """Stop every server and the thread. Safe to call twice and from atexit."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        atexit.unregister(self.close)
        if loop is None or thread is None:
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._stop_all(), loop).result(timeout)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        if not thread.is_alive():
            loop.close()

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    # --- calls -----------------------------------------------------------------------

    def _live(self, name: str) -> ServerConnection:
        conn = self._connections.get(name)
        if conn is None:
            raise McpCallError(f"the {name} server is not running")
        return conn

    async def call_tool(self, server: str, tool: str, args: Mapping[str, Any]) -> CallOutcome:
        async def work() -> CallOutcome:
            return await self._live(server).call_tool(tool, args)

        return await self._on_mcp(work())

    async def get_prompt(
        self, server: str, prompt: str, args: Mapping[str, str]
    ) -> tuple[PromptText, ...]:
        async def work() -> tuple[PromptText, ...]:
            return await self._live(server).get_prompt(prompt, args)

        return await self._on_mcp(work())

    async def read_resource(self, server: str, uri: str) -> str:
        async def work() -> str:
            return await self._live(server).read_resource(uri)

        return await self._on_mcp(work())
