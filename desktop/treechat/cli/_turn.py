"""One turn run from the command line (`send`, `send --models`, `fuse`): the services it runs
on, tool approvals asked on the terminal, and Ctrl+C, SIGTERM and SIGHUP stopping the reply
while keeping what streamed."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING, Any, TypeAlias

from ._common import leave_now

if TYPE_CHECKING:
    from ..services.bootstrap import Services
    from ..services.mcp.approval import ApprovalRequest, Decision
    from ..store.database import Store

# The services are imported inside the functions: this module is loaded with the parser
# (`--help` builds it), and they would load DuckDB, the providers and more.

SIGNAL_NAMES = {signal.SIGINT: "Ctrl+C", signal.SIGTERM: "SIGTERM"}
if hasattr(signal, "SIGHUP"):
    SIGNAL_NAMES[signal.SIGHUP] = "SIGHUP"

# A stop that the turn does not finish within this long (a peer or a library that does not
# let go) ends the process: what streamed is in the journal and is recovered on the next open.
STOP_GRACE_S = 20.0

SignalHandler: TypeAlias = Callable[[int, FrameType | None], Any] | int | None


def turn_services(store: Store, data_dir: Path) -> Services:
    """The services a command-line turn runs on. A detected server is addressable
    (`ollama/llama3.2:3b`): it is probed when asked for. The store is let go of while the
    provider is awaited (the reply, a model's summary, a call to an MCP server over HTTP):
    another `treechat` command or the window can open it meanwhile; the reply so far is
    journaled beside it. An MCP server whose tools are known starts only when one is
    called."""
    from ..services.bootstrap import build_services
    from ..services.store_life.drafts import StoreRelease

    services = build_services(data_dir, store=store)
    release = StoreRelease(
        notify=lambda message: print(f"treechat: {message}…", file=sys.stderr, flush=True)
    )
    services.chat.config.release_store = release
    if services.connections is not None:  # a local server probed for the model's address
        services.connections.release_store = release
    if services.mcp is not None:  # MCP tool calls are asked about here; no terminal: denied
        services.mcp.set_approver(terminal_approver())
        services.mcp.release_store = release
        # a server already listed starts when the model calls one of its tools, not before
        services.mcp.start_listed_servers = False
    return services


def run_turn(
    services: Services, session_id: str, work: Callable[[], Awaitable[object]]
) -> int | None:
    """Run `work` (a turn) until it ends or a signal stops it, then close the services: the
    exit code when it was stopped or its reply could not be kept, None when it ran through."""
    from ..services.store_life.drafts import ReplyKeptError

    stopped_by: list[str] = []
    watchdog: list[threading.Timer] = []

    async def run() -> None:
        try:
            with stop_on_signals(stopped_by, watchdog):
                await work()
        finally:
            await services.close()

    kept: ReplyKeptError | None = None
    # Ctrl+C outside the stream does what it did before it (the command ends at once);
    # the loop's handler, which stops the reply gracefully, replaces it while it runs.
    before = signal.getsignal(signal.SIGINT)
    try:
        asyncio.run(run())
    except (KeyboardInterrupt, asyncio.CancelledError):
        stopped_by.append("Ctrl+C")
    except ReplyKeptError as exc:
        kept = exc
    finally:
        for timer in watchdog:
            timer.cancel()
        _restore_interrupt(before)
    sys.stdout.write("\n")
    sys.stdout.flush()
    if kept is not None:
        print(f"treechat: {kept}", file=sys.stderr)
        return 1
    if stopped_by:
        print(
            f"treechat: stopped by {stopped_by[0]}; the message and the reply so far are kept "
            f"in session {session_id[:12]}",
            file=sys.stderr,
        )
        return 130
    return None


@contextlib.contextmanager
def stop_on_signals(
    stopped_by: list[str], watchdog: list[threading.Timer] | None = None
) -> Iterator[None]:
    """Ctrl+C, SIGTERM and SIGHUP stop the turn: the running task is cancelled, the chat
    service writes the text so far as an interrupted reply, then the command ends. A stop
    that has not ended the turn after `STOP_GRACE_S` ends the process (the timer goes in
    `watchdog`, for the caller to cancel once the turn has ended)."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    installed: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is None or task is None:
            continue

        def stop(sig: signal.Signals = sig, task: asyncio.Task[Any] = task) -> None:
            if stopped_by:  # a second signal while stopping: the first one is being obeyed
                return
            stopped_by.append(SIGNAL_NAMES.get(sig, sig.name))
            timer = threading.Timer(STOP_GRACE_S, _stopped_too_slowly, args=(stopped_by[0],))
            timer.daemon = True
            timer.start()
            if watchdog is not None:
                watchdog.append(timer)
            task.cancel()

        try:
            loop.add_signal_handler(sig, stop)
        except (NotImplementedError, RuntimeError):  # Windows: no loop signal handlers
            continue
        installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


def _restore_interrupt(handler: SignalHandler) -> None:
    if threading.current_thread() is threading.main_thread() and handler is not None:
        signal.signal(signal.SIGINT, handler)


def _stopped_too_slowly(by: str) -> None:
    print(
        f"treechat: stopped by {by}; the turn did not end within {STOP_GRACE_S:g} s, so the "
        "command ends here (the reply so far is journaled and recovered on the next start)",
        file=sys.stderr,
    )
    leave_now(130)


def terminal_approver(
    stdin: IO[str] | None = None, stderr: IO[str] | None = None
) -> Callable[[ApprovalRequest], Awaitable[Decision]]:
    """Tool approvals for a command-line turn: asked on the terminal; with no terminal,
    denied."""
    from ..services.mcp.approval import Decision

    def streams() -> tuple[IO[str], IO[str]]:
        return stdin or sys.stdin, stderr or sys.stderr

    async def ask(request: ApprovalRequest) -> Decision:
        source, out = streams()
        if not (source.isatty() if hasattr(source, "isatty") else False):
            print(
                f"\ntreechat: {request.server} › {request.tool} needs approval and there is "
                f"no terminal to ask; denied. (`treechat mcp add {request.server} --allow "
                "--replace ...` lets its tools run without asking.)",
                file=out,
                flush=True,
            )
            return Decision.DENY

        def read() -> str:
            print(
                f"\n{request.server} › {request.tool} wants to run with:\n"
                f"{request.arguments_text()}\n"
                "Allow? [y] once, [a] always in this chat, [N] deny: ",
                end="",
                file=out,
                flush=True,
            )
            return source.readline()

        answer = (await asyncio.to_thread(read)).strip().lower()
        if answer in ("y", "yes"):
            return Decision.ALLOW_ONCE
        if answer in ("a", "always"):
            return Decision.ALLOW_ALWAYS
        return Decision.DENY

    return ask
