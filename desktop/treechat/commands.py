"""The headless subcommands of `treechat`: they work on the same store and engine as the
window, and are imported only when one is asked for (the window's start-up skips them)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from . import __version__, paths
from .commands_chat_controls import COMMANDS as CHAT_CONTROL_COMMANDS
from .commands_connections import cmd_connections, models_command
from .commands_mcp import cmd_mcp
from .commands_model_library import cmd_models
from .commands_search import COMMANDS as SEARCH_COMMANDS
from .commands_sync import COMMANDS as SYNC_COMMANDS
from .store.database import Store, StoreError, default_store_path


def run(args: argparse.Namespace) -> int:
    """Run the subcommand `args.command`; store and lookup failures become one line."""
    from .commands_send import CliInputError
    from .core.model import GraphError

    handler = COMMANDS[args.command]
    try:
        return handler(args)
    except StoreError as exc:
        from .store.database import StoreDamagedError

        if isinstance(exc, StoreDamagedError) and _damage_said:
            # the store's damage was said when it opened: say only that it stopped this
            print("treechat: stopped here: the damaged part of the store cannot be read",
                  file=sys.stderr)
        else:
            print(f"treechat: {exc}", file=sys.stderr)
        return 2
    except LookupError as exc:
        print(f"treechat: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    except (CliInputError, GraphError) as exc:  # an ambiguous session prefix, bad input
        print(f"treechat: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. `export -o` into a folder that does not exist
        where = f" {exc.filename}" if exc.filename else ""
        print(f"treechat: cannot use{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2


def store_path(args: argparse.Namespace) -> Path:
    return default_store_path(paths.data_dir(args.data_dir))


def open_store(args: argparse.Namespace) -> Store:
    from .services.store_life.recovery import open_and_recover
    from .store.database import damaged_message

    store = open_and_recover(store_path(args))
    if store.damage is not None:  # what can be read is shown, with the warning first
        print(f"treechat: {damaged_message(store.path, store.damage.problem)}", file=sys.stderr)
        _damage_said.add(store.path)
    return store


# Stores whose damage this command has already described (once is enough).
_damage_said: set[Path] = set()


def cmd_sessions(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        sessions = store.call(lambda r: r.list_sessions(include_hidden=args.all))
        counts = store.call(lambda r: r.node_counts_by_session())
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "id": s.id,
                        "title": s.title,
                        "head": s.head,
                        "model": s.model,
                        "created_at": s.created_at,
                        "updated_at": s.updated_at,
                        "forked_from": s.forked_from,
                        "hidden": s.hidden,
                        "nodes": counts.get(s.id, 0),
                    }
                    for s in sessions
                ],
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    if not sessions:
        print("No sessions yet.")
        return 0
    for s in sessions:
        when = datetime.fromtimestamp(s.updated_at).strftime("%Y-%m-%d %H:%M")
        print(f"{s.id[:12]}  {when}  {counts.get(s.id, 0):>6} nodes  {s.title}")
    return 0


def find_session_id(store: Store, ref: str) -> str:
    if not ref.strip():
        raise LookupError("the session is empty; give its id, a unique id prefix or its title")
    session = store.call(lambda r: r.find_session(ref))
    if session is None:
        raise LookupError(f"no session matches {ref!r} (see `treechat sessions`)")
    return session.id


def cmd_import(args: argparse.Namespace) -> int:
    from .core.imports import FORMAT_NAMES, ImportFileError
    from .services.transfer.importing import ImportProgress, import_file

    live = sys.stderr.isatty()

    def report(progress: ImportProgress) -> None:
        if live and progress.total:
            print(
                f"\rimporting {progress.done}/{progress.total}", end="", file=sys.stderr, flush=True
            )
        elif live and progress.bytes_total:  # a large file, read as it is written
            share = 100 * progress.bytes_done // progress.bytes_total
            print(f"\rimporting {progress.done} ({share}% of the file)", end="", file=sys.stderr,
                  flush=True)

    with open_store(args) as store:
        try:
            summary = asyncio.run(import_file(store, Path(args.file), progress=report))
        except ImportFileError as exc:
            print(f"treechat: {exc}", file=sys.stderr)
            return 2
        finally:
            if live:
                print(file=sys.stderr)
    if args.json:
        print(
            json.dumps(
                {
                    "format": summary.source_format,
                    "conversations": summary.conversations,
                    "sessions": summary.sessions,
                    "nodes": summary.nodes,
                    "branches": summary.branches,
                    "attachments": summary.attachments,
                    "placeholders": summary.placeholders,
                    "session_ids": list(summary.session_ids),
                    "kept_head": list(summary.kept_head),
                    "notes": list(summary.notes),
                    "skipped": [
                        {
                            "conversation": s.conversation,
                            "source_id": s.source_id,
                            "reason": s.reason,
                        }
                        for s in summary.skipped
                    ],
                },
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    name = FORMAT_NAMES.get(summary.source_format, summary.source_format)
    if summary.nodes or summary.sessions:
        print(
            f"Imported from {name}: {_count(summary.sessions, 'new session')}, "
            f"{_count(summary.nodes, 'node')}, {_count(summary.branches, 'branch')} "
            f"({_count(summary.conversations, 'conversation')} read)."
        )
    else:
        print(
            f"Nothing new: {_count(summary.conversations, 'conversation')} in this {name} "
            "export, all imported before."
        )
    for note in summary.notes:
        print(note)
    if summary.skipped:
        print(f"Skipped {len(summary.skipped)}:")
        for s in summary.skipped:
            where = s.conversation if s.conversation not in ("", s.source_id) else ""
            print(f"  {where + ': ' if where else ''}{s.source_id}: {s.reason}")
    return 0


def _count(n: int, word: str) -> str:
    plural = word + ("es" if word.endswith("ch") else "s")
    return f"{n} {word if n == 1 else plural}"


def cmd_export(args: argparse.Namespace) -> int:
    from .services.transfer.exporting import export_session, export_sessions

    if bool(args.session) == bool(getattr(args, "all_sessions", False)):
        print("treechat: give a SESSION or --all-sessions", file=sys.stderr)
        return 2
    with open_store(args) as store:
        if args.session:
            session_id = find_session_id(store, args.session)
            text = asyncio.run(
                export_session(store, session_id, fmt=args.format, all_branches=args.all_branches)
            )
        else:
            text = asyncio.run(
                export_sessions(
                    store, args.format, scope="all" if args.all_branches else None
                )
            )
        if args.output and args.format == "md":  # the files the messages carry, beside it
            from .services.transfer.exporting import write_markdown_attachments

            ids = ([session_id] if args.session
                   else [s.id for s in store.call(lambda r: r.list_sessions())])
            asyncio.run(write_markdown_attachments(store, Path(args.output), ids,
                                                   all_branches=args.all_branches))
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    if getattr(args, "check", False):
        from .commands_store import cmd_doctor_check

        return cmd_doctor_check(args)
    path = store_path(args)
    print(f"treechat {__version__}")
    print(f"store:          {path}")
    started = time.perf_counter()
    with open_store(args) as store:
        version = store.call(lambda r: r.schema_version())
        nodes = store.call(lambda r: r.node_count())
        sessions = store.call(lambda r: len(r.list_sessions(include_hidden=True)))
    print(f"schema version: {version}")
    print(f"sessions:       {sessions}")
    print(f"nodes:          {nodes}")
    print(f"opened in:      {(time.perf_counter() - started) * 1000:.0f} ms")
    return 0


def cmd_send(args: argparse.Namespace) -> int:
    from .commands_send import cmd_send as run_send

    return run_send(args)


def cmd_context(args: argparse.Namespace) -> int:
    from .services.bootstrap import build_services

    services = build_services(paths.data_dir(args.data_dir), detect_local_servers=False)
    try:
        session_id = find_session_id(services.store, args.session)

        async def run() -> Any:
            try:
                return await services.chat.occupancy(session_id, model=args.model)
            finally:
                await services.close()

        occupancy = asyncio.run(run())
    finally:
        services.close_store()
    record = occupancy.as_dict()
    if args.json:
        print(json.dumps(record, indent=2))
        return 0
    print(
        f"{record['total_used']:,} / {record['window']:,} tokens "
        f"({100 * record['total_used'] / max(record['window'], 1):.1f}%), {record['basis']}"
        + (f", calibration {record['calibration']:.3f}" if record.get("calibration") else "")
    )
    for name, tokens in record.get("breakdown", {}).items():
        share = 100 * tokens / max(record["window"], 1)
        print(f"  {name:<14} {tokens:>9,}  {share:5.1f}%")
    return 0


def cmd_ledger(args: argparse.Namespace) -> int:
    from .providers.connections import display_name
    from .store.usage import ledger

    with open_store(args) as store:
        session_id = find_session_id(store, args.session) if args.session else None
        rows = store.call(lambda r: ledger(r, session_id))
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "model": r.model,
                        "requests": r.requests,
                        "input_tokens": r.input_tokens,
                        "cache_read": r.cache_read,
                        "cache_write": r.cache_write,
                        "output_tokens": r.output_tokens,
                        "cost_usd": r.cost_usd,
                        "unpriced_requests": r.unpriced_requests,
                    }
                    for r in rows
                ],
                indent=2,
            )
        )
        return 0
    if not rows:
        print("No requests recorded yet.")
        return 0
    print(
        f"{'model':<36} {'requests':>8} {'input':>10} {'cache read':>10} "
        f"{'cache write':>11} {'output':>9} {'cost':>11}"
    )
    for r in rows:
        cost = f"${r.cost_usd:.4f}" + ("*" if r.unpriced_requests else "")
        print(
            f"{display_name(r.model):<36} {r.requests:>8} {r.input_tokens:>10,} "
            f"{r.cache_read:>10,} "
            f"{r.cache_write:>11,} {r.output_tokens:>9,} {cost:>11}"
        )
    if any(r.unpriced_requests for r in rows):
        print("* some requests were to models with no known price; they count as $0.")
    return 0


def cmd_backup(args: argparse.Namespace) -> int:
    from .commands_store import cmd_backup as run_backup

    return run_backup(args)


def cmd_fuse(args: argparse.Namespace) -> int:
    from .commands_beam import cmd_fuse as run_fuse

    return run_fuse(args)


COMMANDS = {
    "sessions": cmd_sessions,
    "import": cmd_import,
    "export": cmd_export,
    "doctor": cmd_doctor,
    "send": cmd_send,
    "context": cmd_context,
    "ledger": cmd_ledger,
    "mcp": cmd_mcp,
    "models": models_command(cmd_models),
    "connections": cmd_connections,
    "backup": cmd_backup,
    "fuse": cmd_fuse,
    **CHAT_CONTROL_COMMANDS,
    **SEARCH_COMMANDS,
    **SYNC_COMMANDS,
}
