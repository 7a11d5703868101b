"""Treechat: a desktop chat client where a conversation is a git-like graph."""

import os as _os
import signal as _signal
import sys as _sys

__version__ = "0.1.0"


def leave_on_interrupt(signum: int, frame: object) -> None:
    """Ctrl+C while the `treechat` command starts (or outside a reply's stream): end at once,
    with one line. Python's own handler raises KeyboardInterrupt wherever the main thread is,
    which can be inside an import's module lock (left held: a later import hangs) or a
    library's cleanup (a traceback)."""
    _os.write(2, b"treechat: interrupted\n")
    _os._exit(130)


def _started_as_the_command() -> bool:
    """`treechat …` or `python -m treechat.cli …`, not an import by another program."""
    if _os.path.basename(_sys.argv[0] if _sys.argv else "") in ("treechat", "treechat.exe"):
        return True
    argv = list(getattr(_sys, "orig_argv", ()))
    return any(a == "-m" and argv[i + 1:i + 2] == ["treechat.cli"] for i, a in enumerate(argv))


# Before anything else of Treechat loads: Ctrl+C in the first instant too.
if _started_as_the_command() and _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
    _signal.signal(_signal.SIGINT, leave_on_interrupt)


def _without_httpx_command_line() -> None:
    """httpx imports its own command-line tool whenever click is installed (as it is here, for
    other libraries): click, rich and Pygments' lexers, ~50 ms and ~6 MB in every Treechat
    process, which never runs that tool. A module marked missing makes httpx keep its stub."""
    if "httpx" not in _sys.modules:
        _sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]


_without_httpx_command_line()
