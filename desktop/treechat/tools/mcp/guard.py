"""The launcher a stdio MCP server runs under, so it never outlives Treechat.

Run as a script (`python guard.py --parent-pid P -- COMMAND ARGS...`); standard library only,
it never imports the rest of Treechat. It starts COMMAND in the process group the guard leads,
with the guard's stdin and stderr, and ends that whole group when Treechat goes away, however
it goes: an MCP server is
any program (`npx` starting `node`, `uvx` starting Python), so it cannot be asked to watch its
parent itself the way the bundled model's server does (`providers/local/bundled_server/`).

Three guards, because each has a gap: PR_SET_PDEATHSIG (Linux: the kernel sends SIGTERM when
the thread that spawned us ends), a hang-up on stdin (every POSIX system: the parent holds the
write end of the pipe and the OS closes it when the parent dies; the guard only polls for the
hang-up and never reads, so no byte meant for the server is taken) and polling the parent pid
(an orphan is re-parented). SIGTERM from the SDK's own shutdown takes the same path.

The server's stdout is relayed one message (one line) at a time with a cap: the SDK's stdio
reader joins a line's pieces by copying all of it again for each piece, so a 100 MB answer
costs it minutes. A line over `MAX_MESSAGE_BYTES` is not passed on; in its place goes an
error answer to the same request id, which the caller reports in one line.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

_PR_SET_PDEATHSIG = 1
GRACE_SECONDS = 1.5  # to exit on its own, then between SIGTERM and SIGKILL
NOT_FOUND_EXIT = 127
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
_REQUEST_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


class _Guard:
    """Ends the process group the guard leads (the server and everything it started)."""

    def __init__(self, child: subprocess.Popen[bytes]) -> None:
        self.child = child
        self.ending = threading.Event()
        self.child_exited = threading.Event()

    def end_group(self, reason: str, *, polite: bool) -> None:
        if self.ending.is_set():
            return
        self.ending.set()
        # Said if it can be: with Treechat gone, its end of the stderr pipe may be closed, and
        # a write that fails must not stop the ending (the group would outlive it).
        with contextlib.suppress(OSError, ValueError):
            print(f"treechat mcp guard: {reason}; stopping the server", file=sys.stderr,
                  flush=True)
        if polite:  # a closed stdin is how MCP asks a stdio server to exit
            self.child_exited.wait(GRACE_SECONDS)
        # The SIGTERM this sends reaches the guard too; its handler ignores it from now on.
        with contextlib.suppress(OSError):
            os.killpg(0, signal.SIGTERM)
        self.child_exited.wait(GRACE_SECONDS)
        # Whatever is left (a grandchild ignoring SIGTERM) goes too, and the guard with it.
        with contextlib.suppress(OSError):
            os.killpg(0, signal.SIGKILL)
        os._exit(0)

    def end_in_background(self, reason: str, *, polite: bool) -> None:
        if self.ending.is_set():
            return
        threading.Thread(
            target=self.end_group, args=(reason,), kwargs={"polite": polite}, daemon=True
        ).start()


def _watch_stdin_hangup(guard: _Guard) -> None:
    if not hasattr(select, "poll"):
        return
    poller = select.poll()
    # No events asked for: poll still reports POLLHUP / POLLERR, and never consumes data.
    poller.register(0, 0)
    while not guard.ending.is_set():
        try:
            events = poller.poll(500)
        except InterruptedError:
            continue
        except OSError:
            return
        if any(mask & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, mask in events):
            guard.end_group("Treechat closed the pipe", polite=True)
            return


def _too_large(head: bytes, cap: int) -> bytes:
    """The error answer sent in place of an oversized message (nothing, when the message's
    first bytes name no request id to answer)."""
    found = _REQUEST_ID.search(head)
    if found is None:
        return b""
    error = {"jsonrpc": "2.0", "id": json.loads(found.group(1)), "error": {
        # JSON-RPC's internal error (-32000 and -32001 mean a lost connection and a timeout
        # to the SDK)
        "code": -32603,
        "message": f"its answer is larger than {cap / 2**20:g} MB, "
                   "the most that is read from a server"}}
    return json.dumps(error).encode() + b"\n"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def relay_messages(source: int, target: int, cap: int = MAX_MESSAGE_BYTES) -> None:
    """Copy newline-ended messages from `source` to `target`, each whole or, over `cap`
    bytes, replaced by `_too_large`; ends at end of file (then closes `target`)."""
    line = bytearray()
    skipping = False  # inside an oversized message: dropped up to its newline
    try:
        while chunk := os.read(source, 1 << 16):
            start = 0
            while start < len(chunk):
                end = chunk.find(b"\n", start)
                piece = chunk[start:] if end < 0 else chunk[start:end + 1]
                start += len(piece)
                if skipping:
                    skipping = end < 0
                    continue
                line += piece
                if len(line) > cap:
                    _write_all(target, _too_large(bytes(line[:4096]), cap))
                    line.clear()
                    skipping = end < 0
                elif end >= 0:
                    _write_all(target, bytes(line))
                    line.clear()
        if line and not skipping:
            _write_all(target, bytes(line))
    except OSError:
        pass  # Treechat closed its end: nobody reads any more
    finally:
        with contextlib.suppress(OSError):
            os.close(target)


def _watch_parent_pid(guard: _Guard, parent_pid: int, poll_seconds: float) -> None:
    while not guard.ending.is_set():
        time.sleep(poll_seconds)
        if os.getppid() != parent_pid:
            guard.end_group("Treechat is gone", polite=False)
            return


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="treechat-mcp-guard")
    parser.add_argument("--parent-pid", type=int, required=True)
    parser.add_argument("--poll", type=float, default=0.5)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        parser.error("no server command given")
    if os.getpgrp() != os.getpid():
        # Lead a group of our own (the SDK starts us in a new session already), so ending
        # "our group" can never reach the app's.
        os.setpgid(0, 0)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    # A stop asked for while the server is being started (Treechat died in that instant)
    # must not kill the guard alone and orphan the server: it is remembered and acted on.
    early_stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: early_stop.set())
    if os.getppid() != args.parent_pid:
        return 0  # the parent died before prctl took effect
    try:
        child = subprocess.Popen(command, stdout=subprocess.PIPE)
    except FileNotFoundError:
        print(f"command not found: {command[0]}", file=sys.stderr, flush=True)
        return NOT_FOUND_EXIT
    except PermissionError:
        print(f"command is not executable: {command[0]}", file=sys.stderr, flush=True)
        return NOT_FOUND_EXIT
    except OSError as exc:
        print(f"could not start {command[0]}: {exc}", file=sys.stderr, flush=True)
        return NOT_FOUND_EXIT
    # The relay holds the only copy of Treechat's end of stdout and closes it when the
    # server's stdout ends, so the SDK sees end-of-file exactly when the server is gone.
    assert child.stdout is not None
    target = os.dup(1)
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    relay = threading.Thread(target=relay_messages, args=(child.stdout.fileno(), target),
                             daemon=True)
    relay.start()
    guard = _Guard(child)
    # The handler only starts the stop: the main thread must keep reaping the child.
    signal.signal(signal.SIGTERM, lambda *_: guard.end_in_background("asked to stop", polite=False))
    if early_stop.is_set() or os.getppid() != args.parent_pid:
        guard.end_in_background("Treechat is gone", polite=False)
    threading.Thread(target=_watch_stdin_hangup, args=(guard,), daemon=True).start()
    threading.Thread(
        target=_watch_parent_pid, args=(guard, args.parent_pid, args.poll), daemon=True
    ).start()
    code = child.wait()
    relay.join(GRACE_SECONDS)  # what the server wrote before it ended reaches Treechat
    guard.child_exited.set()
    if guard.ending.is_set():
        time.sleep(3 * GRACE_SECONDS)  # end_group ends the process
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    raise SystemExit(main())
