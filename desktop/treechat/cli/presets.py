"""`treechat presets list|export|import`: the shipped presets and your own, as the window's
settings keep them."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from ..core.chat_settings import SettingsError
from ._common import Subcommands, add_command, open_store

# The services are imported inside the command: this module is loaded with the parser
# (`--help` builds it), and they would load DuckDB and more.


def add_parser(sub: Subcommands) -> None:
    p = add_command(sub, "presets", cmd_presets, help="list, export or import presets")
    actions = p.add_subparsers(dest="presets_action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="shipped presets and your own")
    listing.add_argument("--json", action="store_true")
    out = actions.add_parser("export", help="write presets as JSON")
    out.add_argument("names", nargs="*", help="presets to export (default: all)")
    out.add_argument("-o", "--output", help="write to this file instead of standard output")
    into = actions.add_parser("import", help="add the presets in a JSON file as your own")
    into.add_argument("file")

    # The actions parse everything after their name, so they take `--data-dir` there too.
    for nested in (listing, out, into):
        nested.add_argument("--data-dir", default=argparse.SUPPRESS,
                            help="where the conversation store lives")


def cmd_presets(args: argparse.Namespace) -> int:
    from ..services.turns.chat_settings import ChatSettingsService

    with open_store(args) as store:
        service = ChatSettingsService(store)
        try:
            if args.presets_action == "list":
                presets = asyncio.run(service.presets())
                if args.json:
                    print(json.dumps([{**p.as_dict(), "builtin": p.builtin} for p in presets],
                                     indent=2, ensure_ascii=False))
                    return 0
                for p in presets:
                    where = "shipped" if p.builtin else "yours"
                    model = p.model or "default model"
                    print(f"{p.name:<24} {where:<8} {model:<32} {p.description}")
                return 0
            if args.presets_action == "export":
                text = asyncio.run(service.export_presets(args.names))
                if args.output:
                    Path(args.output).write_text(text, encoding="utf-8")
                else:
                    sys.stdout.write(text)
                return 0
            try:
                raw = Path(args.file).read_bytes()
            except OSError as exc:
                print(f"treechat: cannot read {args.file}: {exc.strerror or exc}",
                      file=sys.stderr)
                return 2
            added = asyncio.run(service.import_presets(raw))
        except SettingsError as exc:
            print(f"treechat: {exc}", file=sys.stderr)
            return 2
    print(f"Imported {len(added)} preset{'s' if len(added) != 1 else ''}: "
          + ", ".join(p.name for p in added))
    return 0
