"""The bundled model's server process: its command line, loading and warming the model, the
one JSON line (port, window) it prints on stdout when it is ready, and staying alive only as
long as the app that started it."""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence

from .generation import Engine
from .handler import serve

_PR_SET_PDEATHSIG = 1

# --- staying alive only as long as the parent -----------------------------------------------


def exit_now(reason: str) -> None:
    print(f"local model server: {reason}; exiting", file=sys.stderr, flush=True)
    os._exit(0)


def watch_parent(parent_pid: int, poll_seconds: float = 0.5) -> None:
    """Make sure this process ends when the process that started it ends, however it ends.

    Three independent guards, because each has a gap: PR_SET_PDEATHSIG (Linux; the kernel
    signals us when the parent dies), EOF on stdin (every OS: the parent holds the write end
    of our stdin pipe and the OS closes it when the parent dies) and polling the parent pid
    (POSIX, where an orphan is re-parented).
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    # The parent may have died before prctl took effect.
    if os.name == "posix" and os.getppid() != parent_pid:
        exit_now("parent already gone")

    def stdin_eof() -> None:
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except (OSError, ValueError):
            pass
        exit_now("parent closed the pipe")

    def poll_ppid() -> None:
        while True:
            time.sleep(poll_seconds)
            if os.getppid() != parent_pid:
                exit_now("parent is gone")

    threading.Thread(target=stdin_eof, name="watch-stdin", daemon=True).start()
    if os.name == "posix":
        threading.Thread(target=poll_ppid, name="watch-ppid", daemon=True).start()


# --- the process ----------------------------------------------------------------------------

def default_threads() -> int:
    """Half the logical CPUs, at most 4.

    llama.cpp's worker threads spin while they wait for each other, so asking for every core
    on a machine that is busy with something else (the app itself, other programs) collapses
    throughput: measured on a shared 2-core machine, 2 threads gave 1-2 tokens/s where 1
    thread gave 22-36. A 135M model gains little beyond 4 threads.
    """
    return max(1, min(4, (os.cpu_count() or 2) // 2))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True, help="path of the .gguf file")
    parser.add_argument("--name", default="local-model", help="model id served in /v1/models")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--n-ctx", type=int, default=0, help="0 uses the model's trained window")
    parser.add_argument("--threads", type=int, default=default_threads())
    parser.add_argument("--parent-pid", type=int, default=None)
    parser.add_argument("--chat-template", metavar="FILE", default=None,
                        help="a Jinja chat template to use instead of the GGUF's own")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)

    if args.parent_pid is not None:
        watch_parent(args.parent_pid)
    template = None
    if args.chat_template:
        with open(args.chat_template, encoding="utf-8") as f:
            template = f.read()
    engine = Engine(args.model, args.n_ctx, args.threads, args.name, template)
    engine.warm_up()
    server = serve(engine, args.host, args.port, quiet=not args.verbose)
    host, port = server.server_address[:2]
    ready = {"port": port, "host": host, "n_ctx": engine.n_ctx, "model": engine.name,
             "pid": os.getpid()}
    sys.stdout.write(json.dumps(ready) + "\n")
    sys.stdout.flush()
    signal.signal(signal.SIGTERM, lambda *_: exit_now("terminated"))
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever(poll_interval=0.5)
    return 0

