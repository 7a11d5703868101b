"""Treechat's command line: `treechat` opens the window; the subcommands (one module each in
this package) work headless on the same store and engine. Kept light: the window's start-up
goes through here."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from .. import __version__, leave_on_interrupt, paths
from ._common import CliInputError, Subcommands, leave_now, run_command

DATA_DIR_HELP = (
    f"where the conversation store lives (default: ${paths.DATA_DIR_ENV} or the "
    "platform's user data folder)"
)


def _accept_common_options_after(sub: Subcommands) -> None:
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
    # Each subcommand's module is loaded here, not at the top: the window's start goes
    # through this package and would otherwise load them (asyncio, json and more) before
    # its first paint.
    from . import (
        backup,
        beam,
        connections,
        context,
        doctor,
        import_export,
        knowledge,
        mcp,
        models,
        presets,
        projects,
        search,
        send,
        sessions,
        sync,
        usage,
    )

    for add in (  # in the order `treechat --help` lists them
        sessions.add_list_parser,
        import_export.add_import_parser,
        import_export.add_export_parser,
        doctor.add_parser,
        send.add_parser,
        context.add_parser,
        usage.add_ledger_parser,
        sessions.add_settings_parser,
        presets.add_parser,
        usage.add_usage_parser,
        mcp.add_parser,
        models.add_parser,
        connections.add_parser,
        search.add_parser,
        knowledge.add_parser,
        projects.add_parser,
        beam.add_parser,
        sync.add_parser,
        backup.add_parser,
    ):
        add(sub)
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


def _default_interrupt() -> None:
    if signal.getsignal(signal.SIGINT) is leave_on_interrupt:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _main(argv: Sequence[str] | None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    window = window_arguments(words)
    # The window, the check and the log are loaded only on the path that uses them.
    if window is not None:  # the window sets up its log once it has painted
        from ..app import main as run_app

        _default_interrupt()
        return run_app(window)
    parser = build_parser()
    from .mcp import split_command_tail

    words, server_command = split_command_tail(sys.argv[1:] if argv is None else argv)
    args, rest = parser.parse_known_args(words)
    if server_command is not None:
        args.server_command = server_command
    if args.smoke is not None:
        # before logging is set up: the check logs into its own (often temporary) data dir
        from ..smoke import main as run_smoke

        return run_smoke([*(["--data-dir", args.data_dir] if args.data_dir else []), *args.smoke])
    if args.command is None:  # the window sets up its log once it has painted
        from ..app import main as run_app

        _default_interrupt()
        return run_app([*(["--data-dir", args.data_dir] if args.data_dir else []), *rest])
    from ..logs import configure_logging

    try:
        configure_logging(paths.data_dir(args.data_dir))
    except paths.NotAFolderError as exc:
        print(f"treechat: {exc}", file=sys.stderr)
        return 2
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    bad = _unreadable_argument(args)
    if bad is not None:
        parser.error(bad)
    validate = getattr(args, "validate", None)  # a command's own check of its arguments
    if validate is not None:
        try:
            validate(args)
        except CliInputError as exc:
            parser.error(str(exc))
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
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
