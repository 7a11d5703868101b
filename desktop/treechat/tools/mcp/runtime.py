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
import json
import logging
import os
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, TextIO, TypeVar, cast

from ... import __version__, paths
from .config import ServerConfig
from .naming import schema_problem

log = logging.getLogger(__name__)

Status = Literal["stopped", "starting", "ready", "failed"]
GUARD_SCRIPT = Path(__file__).with_name("guard.py")
MCP_GUARD_FLAG = "--mcp-guard"
STDERR_TAIL_LINES = 40
STDERR_TAIL_CHARS = 4000
_STOP_TIMEOUT = 8.0  # the SDK's own shutdown is bounded at about 6 s

T = TypeVar("T")


class McpCallError(Exception):
    """A call that could not be made or did not finish; the message is for the model and
    the user (which server, what happened, what its stderr said)."""


@dataclass(frozen=True, slots=True)
class ToolInfo:
    name: str
    description: str
    input_schema: Mapping[str, Any]
    problem: str | None = None  # why a provider would refuse it; such a tool is not sent


@dataclass(frozen=True, slots=True)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True, slots=True)
class PromptInfo:
    name: str
    description: str = ""
    arguments: tuple[PromptArgument, ...] = ()


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    uri: str
    name: str
    description: str = ""
    mime_type: str = ""


@dataclass(frozen=True, slots=True)
class ServerState:
    """What a list of servers shows: status, why it failed, and what the server offers."""

    name: str
    status: Status = "stopped"
    error: str = ""
    stderr_tail: str = ""
    tools: tuple[ToolInfo, ...] = ()
    prompts: tuple[PromptInfo, ...] = ()
    resources: tuple[ResourceInfo, ...] = ()
    started_ms: float | None = None  # spawn (or connect) to tools listed
    server_info: str = ""


@dataclass(frozen=True, slots=True)
class CallOutcome:
    ok: bool
    text: str
    # Images and audio the server returned: (mime type, bytes of base64 data). Shown as a
    # placeholder in the text until messages carry attachments.
    media: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class PromptText:
    role: str
    text: str


class _StderrTail:
    """The last lines a server wrote to stderr, read from a pipe on a daemon thread; the
    read end reports end-of-file once the server (and everything holding its stderr) exits."""

    def __init__(self, on_eof: Callable[[], None]) -> None:
        read_fd, write_fd = os.pipe()
        self.writer = cast(TextIO, os.fdopen(write_fd, "w", encoding="utf-8", errors="replace"))
        self._reader = read_fd
        self._lines: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._partial = ""
        self._lock = threading.Lock()
        self._on_eof = on_eof
        self.closed = threading.Event()
        threading.Thread(target=self._read, name="mcp-stderr", daemon=True).start()

    def _read(self) -> None:
        try:
            while chunk := os.read(self._reader, 65536):
                text = chunk.decode("utf-8", errors="replace")
                with self._lock:
                    lines = (self._partial + text).split("\n")
                    self._partial = lines.pop()[-STDERR_TAIL_CHARS:]
                    self._lines.extend(line[-STDERR_TAIL_CHARS:] for line in lines)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                os.close(self._reader)
            self.closed.set()
            self._on_eof()

    def close_writer(self) -> None:
        """Drop our copy of the write end, once the server holds its own."""
        with contextlib.suppress(OSError):
            self.writer.close()

    def text(self) -> str:
        with self._lock:
            lines = [*self._lines, *([self._partial] if self._partial else [])]
        return "\n".join(lines)[-STDERR_TAIL_CHARS:].strip()


def stdio_command(config: ServerConfig, parent_pid: int | None = None) -> tuple[str, list[str]]:
    """The executable and arguments that start a stdio server under the guard (POSIX); on
    Windows the SDK puts the server in a job object that dies with us, so it starts bare."""
    if os.name != "posix":
        return config.command, list(config.args)
    launcher = paths.script_command(GUARD_SCRIPT, MCP_GUARD_FLAG)
    pid = os.getpid() if parent_pid is None else parent_pid
    return launcher[0], [
        *launcher[1:], "--parent-pid", str(pid), "--", config.command, *config.args
    ]


def resolve_command(config: ServerConfig) -> str | None:
    """Where the server's command is, or None: checked first, so a typo reads as one."""
    path = (config.env or {}).get("PATH") or os.environ.get("PATH", os.defpath)
    command = config.command
    if os.sep in command or (os.altsep and os.altsep in command):
        base = Path(config.cwd) if config.cwd and not Path(command).is_absolute() else Path()
        candidate = base / command
        return str(candidate) if candidate.is_file() and os.access(candidate, os.X_OK) else None
    return shutil.which(command, path=path)


class _Connection:
    """One server, driven only from the MCP thread's loop."""

    def __init__(self, config: ServerConfig, notify: Callable[[ServerState], None]) -> None:
        self.config = config
        self.state = ServerState(config.name)
        self._notify = notify
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self._starting: asyncio.Future[ServerState] | None = None
        self._stop = asyncio.Event()
        self._stderr: _StderrTail | None = None
        self._generation = 0

    def _set(self, **changes: Any) -> ServerState:
        self.state = replace(self.state, **changes)
        self._notify(self.state)
        return self.state

    def _tail(self) -> str:
        return self._stderr.text() if self._stderr is not None else ""

    async def start(self) -> ServerState:
        if self.state.status == "ready":
            return self.state
        if self._starting is not None:
            return await asyncio.shield(self._starting)
        loop = asyncio.get_running_loop()
        self._starting = loop.create_future()
        self._stop = asyncio.Event()
        self._generation += 1
        self._set(status="starting", error="", stderr_tail="", started_ms=None)
        ready: asyncio.Future[None] = loop.create_future()
        self._task = loop.create_task(self._run(ready, self._generation))
        try:
            await asyncio.wait_for(asyncio.shield(ready), self.config.start_timeout)
        except TimeoutError:
            await self._halt()
            self._set(
                status="failed",
                error=f"the server did not finish starting within "
                f"{self.config.start_timeout:.0f} s",
                stderr_tail=self._tail(),
            )
        except asyncio.CancelledError:
            await self._halt()
            self._set(status="stopped", error="")
            self._resolve_start()
            raise
        except Exception:
            pass  # _run has recorded why
        self._resolve_start()
        return self.state

    def _resolve_start(self) -> None:
        starting, self._starting = self._starting, None
        if starting is not None and not starting.done():
            starting.set_result(self.state)

    async def _run(self, ready: asyncio.Future[None], generation: int) -> None:
        began = time.perf_counter()
        try:
            async with AsyncExitStack() as stack:
                client = await self._connect(stack)
                self._client = client
                tools, prompts, resources = await self._listing(client)
                info = client.server_info
                self._set(
                    status="ready",
                    tools=tools,
                    prompts=prompts,
                    resources=resources,
                    started_ms=(time.perf_counter() - began) * 1000,
                    server_info=f"{info.name} {info.version}".strip() if info else "",
                    stderr_tail=self._tail(),
                )
                if not ready.done():
                    ready.set_result(None)
                await self._stop.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise
        except BaseException as exc:
            if generation == self._generation and self.state.status != "stopped":
                self._set(status="failed", error=_describe(exc), stderr_tail=self._tail())
            if not ready.done():
                ready.set_exception(RuntimeError(_describe(exc)))
                ready.exception()  # seen: start() reads the state instead
            if not isinstance(exc, Exception):
                raise
        finally:
            self._client = None
            if self._stderr is not None:
                self._stderr.close_writer()

    async def _connect(self, stack: AsyncExitStack) -> Any:
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp.types import Implementation

        config = self.config
        info = Implementation(name="treechat", version=__version__)
        if config.transport == "stdio":
            if config.cwd and not Path(config.cwd).is_dir():
                raise McpCallError(f"the working folder {config.cwd} does not exist")
            if resolve_command(config) is None:
                raise McpCallError(
                    f"command not found: {config.command!r} is not on PATH"
                    if os.sep not in config.command
                    else f"command not found: {config.command}"
                )
            generation = self._generation
            loop = asyncio.get_running_loop()

            def eof() -> None:
                # the server may outlive the loop by a moment when the app closes
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self._exited, generation)

            self._stderr = _StderrTail(eof)
            command, args = stdio_command(config)
            params = StdioServerParameters(
                command=command,
                args=args,
                env=dict(config.env) or None,
                cwd=config.cwd or None,
            )
            client = Client(stdio_client(params, errlog=self._stderr.writer), client_info=info)
            try:
                await stack.enter_async_context(client)
            finally:
                self._stderr.close_writer()
            return client
        self._stderr = None
        if config.transport == "http":
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            http = await stack.enter_async_context(
                create_mcp_http_client(headers=dict(config.headers) or None)
            )
            transport = streamable_http_client(config.url, http_client=http)
        else:
            from mcp.client.sse import sse_client

            transport = sse_client(config.url, headers=dict(config.headers) or None)
        client = Client(transport, client_info=info)
        await stack.enter_async_context(client)
        return client

    async def _listing(
        self, client: Any
    ) -> tuple[tuple[ToolInfo, ...], tuple[PromptInfo, ...], tuple[ResourceInfo, ...]]:
        caps = client.server_capabilities
        tools: list[ToolInfo] = []
        if caps.tools is not None:
            cursor: str | None = None
            for _ in range(100):  # a paginator that never ends cannot hang the start
                page = await client.list_tools(cursor=cursor)
                for t in page.tools:
                    schema = t.input_schema
                    tools.append(
                        ToolInfo(t.name, t.description or "", schema, schema_problem(schema))
                    )
                cursor = page.next_cursor
                if cursor is None:
                    break
        prompts: list[PromptInfo] = []
        if caps.prompts is not None:
            page_p = await client.list_prompts()
            prompts = [
                PromptInfo(
                    p.name,
                    p.description or "",
                    tuple(
                        PromptArgument(a.name, a.description or "", bool(a.required))
                        for a in p.arguments or ()
                    ),
                )
                for p in page_p.prompts
            ]
        resources: list[ResourceInfo] = []
        if caps.resources is not None:
            page_r = await client.list_resources()
            resources = [
                ResourceInfo(str(r.uri), r.name, r.description or "", r.mime_type or "")
                for r in page_r.resources
            ]
        return (
            tuple(sorted(tools, key=lambda t: t.name)),
            tuple(sorted(prompts, key=lambda p: p.name)),
            tuple(sorted(resources, key=lambda r: r.uri)),
        )

    def _exited(self, generation: int) -> None:
        """The server's stderr closed: it has exited (on its own, crashed or was killed)."""
        if generation != self._generation or self.state.status in ("stopped", "failed"):
            return
        if self.state.status == "ready":
            self._set(status="failed", error="the server exited", stderr_tail=self._tail())
        self._stop.set()

    async def _halt(self) -> None:
        self._stop.set()
        task, self._task = self._task, None
        if task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), _STOP_TIMEOUT)
        except (TimeoutError, Exception, asyncio.CancelledError):
            task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, _STOP_TIMEOUT)

    async def stop(self) -> ServerState:
        self._generation += 1
        await self._halt()
        return self._set(status="stopped", error="")

    def _client_or_fail(self) -> Any:
        if self.state.status != "ready" or self._client is None:
            detail = f": {self.state.error}" if self.state.error else ""
            raise McpCallError(f"the {self.config.name} server is {self.state.status}{detail}")
        return self._client

    def _failure(self, exc: BaseException, what: str, timeout: float) -> McpCallError:
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        name = self.config.name
        code = getattr(exc, "code", None) if isinstance(exc, MCPError) else None
        if code == REQUEST_TIMEOUT or isinstance(exc, TimeoutError):
            return McpCallError(
                f"the {name} server did not answer {what} within {timeout:g} s; "
                "the call was abandoned"
            )
        if code == CONNECTION_CLOSED or not isinstance(exc, MCPError):
            # Give the stderr reader a moment: a crash usually says why on the way out.
            if self._stderr is not None:
                self._stderr.closed.wait(0.3)
            tail = self._tail()
            if self.state.status == "ready":
                self._set(
                    status="failed",
                    error=f"the connection was lost during {what}",
                    stderr_tail=tail,
                )
            self._stop.set()
            message = f"the {name} server stopped answering during {what} ({_describe(exc)})"
            last = "\n".join(tail.splitlines()[-8:])
            return McpCallError(message + (f"; its last output:\n{last}" if last else ""))
        return McpCallError(f"the {name} server refused {what}: {exc}")

    async def call_tool(self, tool: str, args: Mapping[str, Any]) -> CallOutcome:
        client = self._client_or_fail()
        timeout = self.config.call_timeout
        try:
            result = await client.call_tool(tool, dict(args), read_timeout_seconds=timeout)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise self._failure(exc, f"the call to {tool}", timeout) from exc
        return call_outcome(result)

    async def get_prompt(self, prompt: str, args: Mapping[str, str]) -> tuple[PromptText, ...]:
        client = self._client_or_fail()
        try:
            result = await asyncio.wait_for(
                client.get_prompt(prompt, dict(args)), self.config.call_timeout
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise self._failure(exc, f"the prompt {prompt}", self.config.call_timeout) from exc
        return tuple(
            PromptText(str(m.role), _block_text(m.content)[0]) for m in result.messages
        )

    async def read_resource(self, uri: str) -> str:
        client = self._client_or_fail()
        try:
            result = await asyncio.wait_for(
                client.read_resource(uri), self.config.call_timeout
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise self._failure(exc, f"reading {uri}", self.config.call_timeout) from exc
        return "\n".join(_contents_text(c) for c in result.contents)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        if inner:
            return _describe(inner[0])
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED

    if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
        return "the server closed the connection (it may have exited; see its output)"
    text = str(exc).strip()
    if isinstance(exc, McpCallError):
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _contents_text(contents: Any) -> str:
    text = getattr(contents, "text", None)
    if isinstance(text, str):
        return text
    blob = getattr(contents, "blob", "") or ""
    mime = getattr(contents, "mime_type", None) or "binary"
    return f"[{mime} content of {getattr(contents, 'uri', '')}, {len(blob) * 3 // 4:,} bytes]"


def _block_text(block: Any) -> tuple[str, tuple[str, int] | None]:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text), None
    if kind in ("image", "audio"):
        mime = str(getattr(block, "mime_type", "") or kind)
        size = len(getattr(block, "data", "") or "") * 3 // 4
        return f"[{kind} {mime}, {size:,} bytes]", (mime, size)
    if kind == "resource":
        return _contents_text(block.resource), None
    if kind == "resource_link":
        return f"[resource {block.uri}]", None
    return f"[{kind or 'unknown'} content]", None


def call_outcome(result: Any) -> CallOutcome:
    """A CallToolResult as text for the model; structured output when there is no text."""
    parts: list[str] = []
    media: list[tuple[str, int]] = []
    for block in result.content or ():
        text, item = _block_text(block)
        parts.append(text)
        if item is not None:
            media.append(item)
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, sort_keys=True))
    return CallOutcome(not result.is_error, "\n".join(parts) or "(no output)", tuple(media))


class McpRuntime:
    """Every MCP server this process talks to. Thread-safe; methods are awaited from any
    loop. `close()` stops them all (also at interpreter exit)."""

    def __init__(self, on_state: Callable[[ServerState], None] | None = None) -> None:
        self._listeners: list[Callable[[ServerState], None]] = [on_state] if on_state else []
        self._connections: dict[str, _Connection] = {}
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

    def _connection(self, config: ServerConfig) -> _Connection:
        conn = self._connections.get(config.name)
        if conn is None:
            conn = _Connection(config, self._notify)
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

    def _live(self, name: str) -> _Connection:
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

