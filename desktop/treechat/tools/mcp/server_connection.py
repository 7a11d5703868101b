"""One MCP server's connection, driven from the MCP thread's loop: spawning a stdio server
under the guard (or connecting to a URL), the handshake and listings, its stderr's last lines,
calls with their time limits, and stopping it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO, cast

from ... import __version__, paths
from .config import ServerConfig
from .naming import schema_problem
from .server_state import (
    CallOutcome,
    McpCallError,
    PromptArgument,
    PromptInfo,
    PromptText,
    ResourceInfo,
    ServerState,
    ToolInfo,
    block_text,
    call_outcome,
    contents_text,
)

GUARD_SCRIPT = Path(__file__).with_name("guard.py")
MCP_GUARD_FLAG = "--mcp-guard"
STDERR_TAIL_LINES = 40
STDERR_TAIL_CHARS = 4000
_STOP_TIMEOUT = 8.0  # the SDK's own shutdown is bounded at about 6 s


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


class ServerConnection:
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
        self._relisting: asyncio.Task[None] | None = None
        self._changed_again = False

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
                listening = asyncio.get_running_loop().create_task(self._listen(client))
                try:
                    await self._stop.wait()
                finally:
                    listening.cancel()
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise
        except BaseException as exc:
            if generation == self._generation and self.state.status != "stopped":
                self._set(status="failed", error=describe(exc), stderr_tail=self._tail())
            if not ready.done():
                ready.set_exception(RuntimeError(describe(exc)))
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
            client = Client(stdio_client(params, errlog=self._stderr.writer), client_info=info,
                            message_handler=self._heard)
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
        client = Client(transport, client_info=info, message_handler=self._heard)
        await stack.enter_async_context(client)
        return client

    async def _listen(self, client: Any) -> None:
        """Hear a server's changes: since the 2026-07-28 protocol they come on a stream the
        client asks for (`subscriptions/listen`); an older server sends them unasked
        (`_heard`)."""
        from mcp.client.subscriptions import ListenNotSupportedError

        caps = client.server_capabilities
        kinds = {"tools_list_changed": caps.tools is not None,
                 "prompts_list_changed": caps.prompts is not None,
                 "resources_list_changed": caps.resources is not None}
        if not any(kinds.values()):
            return
        try:
            async with client.listen(**kinds) as changes:
                async for _event in changes:
                    self._changed()
        except ListenNotSupportedError:
            return
        except Exception as exc:  # a server that refuses to be listened to still serves
            logging.getLogger(__name__).info(
                "%s cannot be listened to for changes: %s", self.config.name, describe(exc))

    async def _heard(self, message: Any) -> None:
        """A server's notice that its tools, prompts or resources changed: they are listed
        again, and the next request offers what it lists now (a tool it no longer has would
        only fail when called)."""
        from mcp.types import (
            PromptListChangedNotification,
            ResourceListChangedNotification,
            ToolListChangedNotification,
        )

        changed = (ToolListChangedNotification, PromptListChangedNotification,
                   ResourceListChangedNotification)
        if isinstance(message, changed):
            self._changed()

    def _changed(self) -> None:
        self._changed_again = True
        if self._relisting is None:
            # not in the handler itself: the listing's answers come through the same reader
            self._relisting = asyncio.get_running_loop().create_task(self._relist())

    async def _relist(self) -> None:
        try:
            while self._changed_again:  # a notice during a listing: list once more after it
                self._changed_again = False
                client = self._client
                if client is None or self.state.status != "ready":
                    return
                try:
                    tools, prompts, resources = await asyncio.wait_for(
                        self._listing(client), self.config.start_timeout)
                except Exception as exc:  # the old listing stays; the next call tells
                    logging.getLogger(__name__).warning(
                        "listing %s again after its change notice failed: %s",
                        self.config.name, describe(exc))
                    return
                if self._client is client:
                    self._set(tools=tools, prompts=prompts, resources=resources)
        finally:
            self._relisting = None

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
            message = f"the {name} server stopped answering during {what} ({describe(exc)})"
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
            PromptText(str(m.role), block_text(m.content)[0]) for m in result.messages
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
        return "\n".join(contents_text(c) for c in result.contents)


def describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        if inner:
            return describe(inner[0])
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED

    if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED:
        return "the server closed the connection (it may have exited; see its output)"
    text = str(exc).strip()
    if isinstance(exc, McpCallError):
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
