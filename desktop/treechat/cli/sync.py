"""`treechat sync add|now|status|remove`: one encrypted history across computers through a
folder or a WebDAV server, from the command line, through the same service as the window."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import os
import sys
from datetime import datetime
from typing import TYPE_CHECKING

from ._common import Subcommands, add_command, open_store

if TYPE_CHECKING:
    from ..services.sync.engine import SyncReport
    from ..services.sync.service import Progress

# The sync service is imported inside the command: this module is loaded with the parser
# (`--help` builds it), and it would load DuckDB and more.

PASSPHRASE_HELP = ("read the passphrase from this environment variable (default: ask); the "
                   "same passphrase on every computer")


def add_parser(sub: Subcommands) -> None:
    p = add_command(sub, "sync", cmd_sync, help="one encrypted history on every computer, "
                    "through a folder or WebDAV")
    actions = p.add_subparsers(dest="sync_action", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="sync through a folder or a WebDAV server")
    kinds = add.add_subparsers(dest="sync_kind", metavar="KIND", required=True)
    folder = kinds.add_parser("folder", help="a folder your own sync tool carries "
                              "(Syncthing, Dropbox, iCloud Drive, a network share)")
    folder.add_argument("path")
    folder.add_argument("--passphrase-env", metavar="VAR", help=PASSPHRASE_HELP)
    dav = kinds.add_parser("webdav", help="a WebDAV folder (Nextcloud, ownCloud, a NAS)")
    dav.add_argument("url")
    dav.add_argument("--user", metavar="U", default="")
    dav.add_argument("--password-env", metavar="VAR",
                     help="read the WebDAV password from this environment variable")
    dav.add_argument("--passphrase-env", metavar="VAR", help=PASSPHRASE_HELP)
    now = actions.add_parser("now", help="sync once, now")
    now.add_argument("--json", action="store_true")
    status = actions.add_parser("status", help="the target and the last sync")
    status.add_argument("--json", action="store_true")
    remove = actions.add_parser("remove", help="stop syncing (what came in stays; the "
                                "target is left as it is)")
    for nested in (folder, dav, now, status, remove):
        nested.add_argument("--data-dir", default=argparse.SUPPRESS,
                            help="where the conversation store lives")


def _secret(env: str | None, prompt: str, *, confirm: bool = False) -> str:
    if env:
        value = os.environ.get(env)
        if value is None:
            raise LookupError(f"the environment variable {env} is not set")
        return value
    if not sys.stdin.isatty():
        raise LookupError(f"no terminal to ask for the {prompt.lower()}; pass it with "
                          "an environment variable (--passphrase-env VAR)")
    value = getpass.getpass(f"{prompt}: ")
    if confirm and getpass.getpass(f"{prompt} again: ") != value:
        raise LookupError("the two entries differ")
    return value


def _when(at: float) -> str:
    return datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M:%S")


def _print_report(report: SyncReport) -> None:
    print(f"Sent {report.sent_nodes} message{'s' if report.sent_nodes != 1 else ''} "
          f"({report.sent_files} file{'s' if report.sent_files != 1 else ''}); "
          f"received {report.received_nodes} from {report.received_files} file"
          f"{'s' if report.received_files != 1 else ''}.")
    for title in report.new_chats:
        print(f"  new chat: {title}")
    if report.changed:
        print(f"  {len(report.changed)} change{'s' if len(report.changed) != 1 else ''} from "
              "other computers (titles, pins, settings, …)")
    for refused in report.refused:
        print(f"  refused {refused.path}: {refused.reason}", file=sys.stderr)


def cmd_sync(args: argparse.Namespace) -> int:
    from ..core.clock import SYSTEM_CLOCK
    from ..providers.keys import KeyStore
    from ..services.sync.service import SyncError, SyncService, TargetConfig

    with open_store(args) as store:
        service = SyncService(store, KeyStore(environ={}), clock=SYSTEM_CLOCK)
        try:
            if args.sync_action == "add":
                if args.sync_kind == "folder":
                    config = TargetConfig("folder", args.path)
                    password = ""
                else:
                    config = TargetConfig("webdav", args.url, args.user)
                    password = (_secret(args.password_env, "WebDAV password")
                                if args.password_env or args.user else "")
                passphrase = _secret(args.passphrase_env, "Sync passphrase")
                asyncio.run(service.add(config, passphrase, password))
                print(f"Syncing through {config.location}. Run `treechat sync now`, or open "
                      "Treechat: it syncs in the background.")
                return 0
            if args.sync_action == "remove":
                had = asyncio.run(service.remove())
                print("Sync is off." if had else "No sync target was set.")
                return 0
            if args.sync_action == "status":
                status = asyncio.run(service.status())
                if args.json:
                    print(json.dumps(status.as_dict(), indent=2, ensure_ascii=False))
                    return 0
                if status.target is None:
                    print("No sync target is set (treechat sync add folder PATH).")
                    return 0
                print(f"target:    {status.target.kind} {status.target.location}")
                print(f"device:    {status.device}")
                if status.last is None:
                    print("last sync: never")
                else:
                    print(f"last sync: {_when(status.last.at)}")
                    _print_report(status.last)
                return 0
            report = asyncio.run(service.sync_now(_progress(args)))
        except SyncError as exc:
            print(f"treechat: {exc}", file=sys.stderr)
            return 1
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        _print_report(report)
    return 1 if report.refused else 0


def _progress(args: argparse.Namespace) -> Progress | None:
    if args.json or not sys.stderr.isatty():
        return None

    def show(phase: str, done: int, total: int) -> None:
        end = "\n" if done >= total else ""
        print(f"\r{phase} {done}/{total}", end=end, file=sys.stderr, flush=True)

    return show

