"""`treechat import` (ChatGPT, Claude.ai, LibreChat, Open WebUI and Treechat exports, branches
kept) and `treechat export` (a chat, or every chat, as JSON or Markdown)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from ._common import Subcommands, add_command, count, find_session_id, open_store

# The importers and exporters are imported inside the commands: this module is loaded with
# the parser (`--help` builds it), and they would load DuckDB and more.


def add_import_parser(sub: Subcommands) -> None:
    p = add_command(
        sub, "import", cmd_import,
        help="import a ChatGPT, Claude.ai, LibreChat, Open WebUI or Treechat export, branches kept",
    )
    p.add_argument("file", help="conversations.json, the zip that holds it, or a JSON export")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def add_export_parser(sub: Subcommands) -> None:
    p = add_command(sub, "export", cmd_export,
                    help="write a chat as JSON (whole graph) or Markdown")
    p.add_argument("session", nargs="?", help="the chat: id, unique id prefix or exact title")
    p.add_argument("--all-sessions", action="store_true", help="every chat, one after another "
                   "(JSON: a list that `treechat import` reads back)")
    p.add_argument("--format", choices=("json", "md"), default="md")
    p.add_argument(
        "--all-branches",
        action="store_true",
        help="Markdown: include every branch, not only HEAD's",
    )
    p.add_argument("-o", "--output", help="write to this file instead of standard output")


def cmd_import(args: argparse.Namespace) -> int:
    from ..core.imports import FORMAT_NAMES, ImportFileError
    from ..services.transfer.importing import ImportProgress, import_file

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
            f"Imported from {name}: {count(summary.sessions, 'new session')}, "
            f"{count(summary.nodes, 'node')}, {count(summary.branches, 'branch')} "
            f"({count(summary.conversations, 'conversation')} read)."
        )
    else:
        print(
            f"Nothing new: {count(summary.conversations, 'conversation')} in this {name} "
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


def cmd_export(args: argparse.Namespace) -> int:
    from ..services.transfer.exporting import (
        export_session,
        export_sessions,
        write_markdown_attachments,
    )

    if bool(args.session) == bool(getattr(args, "all_sessions", False)):
        print("treechat: give a chat (id, id prefix or title) or --all-sessions",
              file=sys.stderr)
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
            ids = ([session_id] if args.session
                   else [s.id for s in store.call(lambda r: r.list_sessions())])
            asyncio.run(write_markdown_attachments(store, Path(args.output), ids,
                                                   all_branches=args.all_branches))
    if args.output:
        from ..core.bounded_read import write_path

        write_path(args.output, text.encode("utf-8"))
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
