"""`treechat send`: the typed message is committed and acknowledged first, then the reply
streams to standard output. Long text comes from a file or standard input, never cut silently;
Ctrl+C, SIGTERM and SIGHUP stop the reply and keep what streamed (`_turn`)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import paths
from ._common import CliInputError, Subcommands, add_command, find_session_id
from ._turn import run_turn, turn_services
from .beam import check_models, several_replies

if TYPE_CHECKING:
    from ..core.bounded_read import Bounds
    from ..services.attachments import PreparedFile
    from ..services.turns.events import TurnFinished
    from ..store.database import Store

# The store, the services and even the bounded reads are imported inside the functions: this
# module is loaded with the parser (`--help` builds it), and they would load DuckDB, the
# providers and more.

STDIN = "-"


def add_parser(sub: Subcommands) -> None:
    p = add_command(sub, "send", cmd_send,
                    help="send one message and stream the reply to standard output")
    p.add_argument("session", nargs="?", help="the chat: id, unique id prefix or exact title")
    p.add_argument("text", nargs="?", help="the message; `-` reads it from standard input")
    p.add_argument(
        "--file",
        metavar="FILE",
        help="read the message from FILE (`-` for standard input): long text need not go "
        "through the command line",
    )
    p.add_argument("--new", action="store_true", help="start a new chat for this message")
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
    p.set_defaults(validate=normalize_send_args)


def normalize_send_args(args: argparse.Namespace) -> None:
    """Sort SESSION and TEXT out of the positionals: with `--new` or `--file` one word is the
    session or the text depending on what else was given."""
    session, text = args.session, args.text
    if args.new and text is None and session is not None and args.file is None:
        session, text = None, session
    if args.file is not None and text is not None:
        raise CliInputError("give the message either as TEXT or with --file, not both")
    if session is not None and args.new:
        raise CliInputError("give either SESSION or --new, not both")
    if session is None and not args.new:
        raise CliInputError("give a SESSION or --new")
    if text is None and args.file is None:
        raise CliInputError(
            "give a SESSION (or --new) and then the message: TEXT, --file FILE, "
            "or --file - for standard input"
        )
    args.session, args.text = session, text
    if getattr(args, "models", None) is not None:
        check_models(args)
    if getattr(args, "api_base", None):
        from ..providers.connections import ConnectionProblem, parse_base_url

        try:
            parse_base_url(args.api_base)
        except ConnectionProblem as exc:
            raise CliInputError(f"--api-base: {exc}") from None


# Every path into a message honours the cap an attached set of files does; a pipe or a FIFO
# that goes silent for this long (or a read that runs past the total) ends with one line.
MESSAGE_READ_IDLE_S = 30.0
MESSAGE_READ_TOTAL_S = 120.0


def message_bounds(interactive: bool = False) -> Bounds:
    """The message's cap, and its time bounds unless a person is typing it at a terminal."""
    from ..core.bounded_read import Bounds
    from ..services.attachments import AttachmentLimits

    cap = AttachmentLimits().max_message_bytes
    if interactive:
        return Bounds(cap)
    return Bounds(cap, deadline=MESSAGE_READ_TOTAL_S, idle=MESSAGE_READ_IDLE_S)


def message_text(args: argparse.Namespace, bounds: Bounds | None = None) -> str:
    """The message to send: TEXT, the file named by --file, or standard input for `-`, read
    within the message's cap and time bounds (`ReadLimitError` says which was hit)."""
    from ..core.bounded_read import ReadLimitError, human_bytes, read_fd, read_path

    source = args.file if args.file is not None else (STDIN if args.text == STDIN else None)
    try:
        if source is None:
            text = str(args.text)
            if len(text) > message_bounds().cap:
                raise CliInputError(
                    f"the message is larger than {human_bytes(message_bounds().cap)}, "
                    "the most one message can be; nothing was sent"
                )
        elif source == STDIN:
            fd = sys.stdin.fileno()
            chosen = bounds or message_bounds(interactive=os.isatty(fd))
            text = _decode(read_fd(fd, chosen, "standard input"), "standard input")
        else:
            try:
                data = read_path(source, bounds or message_bounds(), str(source))
            except OSError as exc:
                raise CliInputError(f"cannot read {source}: {exc.strerror or exc}") from None
            text = _decode(data, str(source))
    except ReadLimitError as exc:
        raise CliInputError(f"{exc}; nothing was sent") from None
    if not text.strip():
        raise CliInputError("the message is empty (only whitespace); nothing was sent")
    return text


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CliInputError(
            f"{where} is not UTF-8 text (byte {exc.start} cannot be read); nothing was sent"
        ) from None


def cmd_send(args: argparse.Namespace) -> int:
    from ..providers import llm
    from ..services.store_life.recovery import open_and_recover
    from ..store.database import default_store_path
    from ..store.opening import COMMAND_MEMORY_LIMIT

    normalize_send_args(args)
    text = message_text(args)
    files = attached_files(args)
    if getattr(args, "models", None):
        # litellm takes seconds to import: start it now, while the store opens and the
        # message is committed, so the user sees the acknowledgment first and the replies
        # sooner. One reply starts it once its request is counted (`_reply`).
        llm.start_warmup()
    data_dir = paths.data_dir(args.data_dir)
    store = open_and_recover(default_store_path(data_dir), memory_limit=COMMAND_MEMORY_LIMIT)
    try:
        session_id, user_id = asyncio.run(_commit(store, args, text, files))
        carried = f" and {len(files)} file{'' if len(files) == 1 else 's'}" if files else ""
        print(
            f"[sent: {len(text):,} characters{carried}, committed to session "
            f"{session_id[:12]}]",
            file=sys.stderr,
            flush=True,
        )
        _daily_backup(store)
        reply = several_replies if getattr(args, "models", None) else _reply
        return reply(store, data_dir, args, session_id, user_id, text)
    finally:
        store.close()


def _daily_backup(store: Store) -> None:
    """The command line's "on start": a backup when the newest is a day old, made once the
    message is committed and before the reply, whose litellm would otherwise hold its 190 MB
    while DuckDB copies the store (a send's peak memory). Never fails the command; the log
    says why when one could not be made."""
    import logging

    from ..store.backup import BackupError
    from ..store.database import StoreError

    try:
        store.backup_if_due()
    except (BackupError, StoreError, OSError) as exc:
        logging.getLogger(__name__).warning("the daily backup was not made: %s", exc)


def attached_files(args: argparse.Namespace) -> tuple[PreparedFile, ...]:
    """The `--attach` files, checked and prepared before anything is written: a file that
    cannot be sent stops the command with the reason, and nothing is committed."""
    names = list(getattr(args, "attach", None) or ())
    if not names:
        return ()
    from ..services.attachments import AttachmentError, linked_elsewhere, prepare_files

    for note in linked_elsewhere(names):
        print(f"treechat: {note}", file=sys.stderr)
    try:
        return prepare_files(names)
    except AttachmentError as exc:
        raise CliInputError(f"{exc}; nothing was sent") from None


async def _commit(
    store: Store, args: argparse.Namespace, text: str, files: tuple[PreparedFile, ...] = ()
) -> tuple[str, str]:
    from ..services.turns.sessions import SessionService

    sessions = SessionService(store)
    if args.new:
        session_id = (await sessions.create(model=args.model or "")).id
    else:
        session_id = find_session_id(store, args.session)
    metadata = None
    if files:
        from ..core.attachments import with_attachments
        from ..providers.tokenizer import CachedTiktokenCounter
        from ..services.attachments import AttachmentService

        attachments = AttachmentService(store, CachedTiktokenCounter())
        await attachments.save(files)  # the bytes before the node that names them
        metadata = with_attachments({}, await asyncio.to_thread(attachments.refs, files))
    user = await sessions.append_message(session_id, text.strip(), metadata=metadata)
    return session_id, user.id


def _reply(
    store: Store,
    data_dir: Path,
    args: argparse.Namespace,
    session_id: str,
    user_id: str,
    text: str,
) -> int:
    from ..core.tokens import estimated_tokens
    from ..services.turns.events import TextDelta, TurnFailed, TurnFinished, TurnStarted

    services = turn_services(store, data_dir)
    services.chat.config.request_ready = _counting_done
    services.chat.config.occupancy_after_reply = False  # only its window is shown
    services.chat.config.count_stopped_reply = estimated_tokens  # the tables are let go of
    failed: list[TurnFailed] = []
    finished: list[TurnFinished] = []

    def on_event(event: object) -> None:
        if isinstance(event, TextDelta):
            sys.stdout.write(event.text)
            sys.stdout.flush()
        elif isinstance(event, TurnStarted):
            print(f"[{services.models.display_name(event.model)}]", file=sys.stderr, flush=True)
        elif isinstance(event, TurnFailed):
            failed.append(event)
        elif isinstance(event, TurnFinished):
            finished.append(event)

    code = run_turn(services, session_id, lambda: services.chat.retry(
        session_id, user_id, model=args.model, api_base=args.api_base, on_event=on_event))
    if code is not None:
        return code
    if failed:
        print(f"treechat: {failed[0].error.message}", file=sys.stderr)
        return 1
    if finished:
        _print_summary(session_id, finished[0], text)
    return 0


def _counting_done() -> None:
    """The request is counted: the token tables are let go of before litellm loads, so its
    190 MB take the pages they held instead of adding to them (a send's peak memory)."""
    from ..providers import llm
    from ..providers.tokenizer import release_encodings

    release_encodings()
    llm.start_warmup()


def _print_summary(session_id: str, event: TurnFinished, text: str) -> None:
    node = event.node
    usage = node.metadata.get("usage") or {}
    parts = [f"session {session_id[:12]}"]
    if usage:
        parts.append(
            f"{usage.get('prompt_tokens', 0)} prompt tokens ({usage.get('cache_read', 0)} cached)"
        )
        parts.append(f"{usage.get('output_tokens', 0)} output")
        if usage.get("cost_usd") is not None:
            parts.append(f"${usage['cost_usd']:.6f}")
    if node.interrupted:
        parts.append("interrupted")
    print("[" + " · ".join(parts) + "]", file=sys.stderr)
    unreadable = int(node.metadata.get("unreadable_stream_lines") or 0)
    if unreadable:
        print(
            f"treechat: {unreadable} line(s) of the server's stream could not be read and were "
            "left out; the reply may be incomplete",
            file=sys.stderr,
        )
    occupancy = getattr(event, "occupancy", None)
    _warn_if_cut(text, usage, occupancy)


def _warn_if_cut(text: str, usage: dict[str, Any], occupancy: Any) -> None:
    """Say so when the message could not go whole: the model's window is smaller than it."""
    window = getattr(occupancy, "window", None)
    prompt = int(usage.get("prompt_tokens") or 0)
    if not window or not prompt:
        return
    # Four characters a token is the conservative end for prose; code and CJK run denser.
    if len(text) // 4 > int(window):
        print(
            f"treechat: the message ({len(text):,} characters) is longer than the model's "
            f"window ({int(window):,} tokens): the request carried {prompt:,} prompt tokens, "
            "so only part of it was sent. The whole message is stored in the session.",
            file=sys.stderr,
        )
