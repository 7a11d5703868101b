"""Treechat's command line: `treechat` opens the window; subcommands (in `commands`) work
headless on the same store and engine. Kept light: the window's start-up goes through here."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence

from . import __version__, leave_on_interrupt, paths

DATA_DIR_HELP = (
    f"where the conversation store lives (default: ${paths.DATA_DIR_ENV} or the "
    "platform's user data folder)"
)


def _accept_common_options_after(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Let every subcommand take `--data-dir` after its name too (`treechat import F
    --data-dir D`). SUPPRESS as the default keeps a value given before the subcommand: the
    subparser sets the attribute only when the option appears after it."""
    for subparser in sub.choices.values():
        if not any("--data-dir" in a.option_strings for a in subparser._actions):
            subparser.add_argument("--data-dir", default=argparse.SUPPRESS, help=DATA_DIR_HELP)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="treechat",
        description="A chat client where a conversation is a git-like graph. "
        "With no command, opens the window.",
    )
    parser.add_argument("--version", action="version", version=f"treechat {__version__}")
    parser.add_argument("--data-dir", help=DATA_DIR_HELP)
    parser.add_argument(
        "--smoke",
        nargs=argparse.REMAINDER,
        metavar="OPTION",
        help="check this installation: open the window offscreen, run one turn (the bundled "
        "model, or --api-base URL --model M), print the reply; see `treechat --smoke --help`",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("sessions", help="list sessions, newest first")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--all", action="store_true", help="include deleted (hidden) sessions")

    p = sub.add_parser(
        "import",
        help="import a ChatGPT, Claude.ai, LibreChat, Open WebUI or Treechat export, branches kept",
    )
    p.add_argument("file", help="conversations.json, the zip that holds it, or a JSON export")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")

    p = sub.add_parser("export", help="write a session as JSON (whole graph) or Markdown")
    p.add_argument("session", nargs="?", help="session id, unique id prefix, or exact title")
    p.add_argument("--all-sessions", action="store_true", help="every chat, one after another "
                   "(JSON: a list that `treechat import` reads back)")
    p.add_argument("--format", choices=("json", "md"), default="md")
    p.add_argument(
        "--all-branches",
        action="store_true",
        help="Markdown: include every branch, not only HEAD's",
    )
    p.add_argument("-o", "--output", help="write to this file instead of standard output")

    p = sub.add_parser(
        "doctor", help="show the store, schema version, node count and environment"
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="read every table back and verify the file's checksums (read-only)",
    )

    p = sub.add_parser("send", help="send one message and stream the reply to standard output")
    p.add_argument("session", nargs="?", help="session id, unique id prefix, or exact title")
    p.add_argument("text", nargs="?", help="the message; `-` reads it from standard input")
    p.add_argument(
        "--file",
        metavar="FILE",
        help="read the message from FILE (`-` for standard input): long text need not go "
        "through the command line",
    )
    p.add_argument("--new", action="store_true", help="start a new session for this message")
    p.add_argument(
        "--model",
        help="litellm model id, e.g. openai/gpt-4o (default: the "
        "configured default, else the bundled offline model)",
    )
    p.add_argument("--api-base", help="an OpenAI-compatible server to send to")
    p.add_argument("--models", metavar="A,B,C", help="send to several models at once: one "
                   "reply each, side by side in the chat (`treechat fuse` combines them)")
    p.add_argument(
        "--attach", metavar="FILE", action="append", default=[],
        help="attach FILE to the message (repeatable): text or code, a PNG, JPEG, WebP or "
        "GIF image (for models that see images), or a PDF",
    )

    p = sub.add_parser("context", help="what the next request would carry: occupancy and breakdown")
    p.add_argument("session", help="session id, unique id prefix, or exact title")
    p.add_argument("--model", help="estimate for this model instead of the session's")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("ledger", help="tokens, cache reads/writes and cost per model")
    p.add_argument("session", nargs="?", help="only this session")
    p.add_argument("--json", action="store_true")

    from .commands_chat_controls import add_parsers as add_chat_control_parsers

    add_chat_control_parsers(sub)
    from .commands_mcp import add_parsers as add_mcp_parsers

    add_mcp_parsers(sub)
    from .commands_model_library import add_models_parser

    add_models_parser(sub)
    from .commands_connections import add_models_list
    from .commands_connections import add_parsers as add_connection_parsers

    add_connection_parsers(sub)
    add_models_list(sub)
    from .commands_search import add_parsers as add_search_parsers

    add_search_parsers(sub)
    from .commands_beam import add_parsers as add_beam_parsers

    add_beam_parsers(sub)
    from .cli_store import register as register_store_commands
    from .commands_sync import add_parsers as add_sync_parsers

    add_sync_parsers(sub)

    register_store_commands(sub)
    _accept_common_options_after(sub)
    return parser


def window_arguments(words: Sequence[str]) -> list[str] | None:
    """The arguments of a plain `treechat [--data-dir D] [-option …]` that opens the window,
    or None for a subcommand, `--smoke`, help or anything else. Worked out without building
    the full parser: the subcommands' modules (asyncio, json and more) would otherwise load
    before the window's first paint."""
    out: list[str] = []
    it = iter(words)
    for word in it:
        if word in ("-h", "--help", "--version", "--smoke") or not word.startswith("-"):
            return None
        out.append(word)
        if word == "--data-dir":
            value = next(it, None)
            if value is None:
                return None
            out.append(value)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """The `treechat` command. Ctrl+C at any instant, even while modules still load, ends it
    with one line and status 130; run as the command itself (no `argv`), it then leaves at
    once rather than wait on a thread still importing or a library's shutdown."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print("treechat: interrupted", file=sys.stderr)
        if argv is None:
            leave_now(130)
        return 130


def leave_now(code: int) -> None:
    """End the process now: streams flushed, no interpreter shutdown (a daemon thread halfway
    through an import or a C++ call can hang or abort it)."""
    import contextlib
    import os

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _default_interrupt() -> None:
    if signal.getsignal(signal.SIGINT) is leave_on_interrupt:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _main(argv: Sequence[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    window = window_arguments(words)
    if window is not None:  # the window sets up its log once it has painted
        from .app import main as run_app

        _default_interrupt()
        return run_app(window)
    parser = build_parser()
    from .commands_mcp import split_command_tail

    words, server_command = split_command_tail(sys.argv[1:] if argv is None else argv)
    args, rest = parser.parse_known_args(words)
    if server_command is not None:
        args.server_command = server_command
    if args.smoke is not None:
        # before logging is set up: the check logs into its own (often temporary) data dir
        from .smoke import main as run_smoke

        return run_smoke([*(["--data-dir", args.data_dir] if args.data_dir else []), *args.smoke])
    if args.command is None:  # the window sets up its log once it has painted
        from .app import main as run_app

        _default_interrupt()
        return run_app([*(["--data-dir", args.data_dir] if args.data_dir else []), *rest])
    from .logs import configure_logging

    configure_logging(paths.data_dir(args.data_dir))
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    bad = _unreadable_argument(args)
    if bad is not None:
        parser.error(bad)
    if args.command == "send":
        from .commands_send import CliInputError, normalize_send_args

        try:
            normalize_send_args(args)
        except CliInputError as exc:
            parser.error(str(exc))
    from .commands import run as run_command

    if args.command != "send":  # `send` stops its reply gracefully itself; the others are
        _default_interrupt()  # interrupted the usual way (a download pauses, and says so)
    try:
        return run_command(args)
    except BrokenPipeError:  # `treechat export … | head`: the reader left, nothing to say
        _silence_stdout()
        return 141


# Arguments that name files to read or write: the OS takes a name in any bytes, so an
# undecodable one is still a valid path here.
_PATH_ARGUMENTS = frozenset({"file", "output"})


def _unreadable_argument(args: argparse.Namespace) -> str | None:
    """One line for an argument that arrived as bytes that are not UTF-8 (Python keeps them as
    lone surrogates, which no text field or the store can hold)."""
    for name, value in vars(args).items():
        if not isinstance(value, str) or name in _PATH_ARGUMENTS:
            continue
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            shown = name.replace("_", "-")
            raw = value.encode("utf-8", "surrogateescape")
            return (
                f"{shown}: not valid UTF-8 text ({raw!r}, byte {exc.start + 1} cannot be read); "
                "pass text and names in UTF-8, or long text with `send --file`"
            )
    return None


def _silence_stdout() -> None:
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    raise SystemExit(main())
