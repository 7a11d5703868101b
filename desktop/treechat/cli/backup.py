"""`treechat backup list|create|restore`: the rolling copies of the store that a damaged or
mistaken store can be put back from."""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from pathlib import Path

from ._common import Subcommands, add_command, fail, store_path

# The store is imported inside the functions: this module is loaded with the parser (`--help`
# builds it), and it would load DuckDB.


def add_parser(sub: Subcommands) -> None:
    p = add_command(sub, "backup", cmd_backup,
                    help="list, make or restore backups of the conversation store")
    actions = p.add_subparsers(dest="backup_action", metavar="ACTION", required=True)
    q = actions.add_parser("list", help="the backups beside the store, newest first")
    q.add_argument("--json", action="store_true")
    q = actions.add_parser("create", help="write a backup now")
    q.add_argument("--reason", default="manual", help="a word kept in the backup's name")
    q = actions.add_parser(
        "restore",
        help="put a backup in the store's place (the current store is kept beside it); "
        "Treechat's window and other commands must be closed first",
    )
    q.add_argument("name", help="the backup's file name, a unique prefix of it, or `latest`")
    for action in actions.choices.values():
        action.add_argument("--data-dir", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def cmd_backup(args: argparse.Namespace) -> int:
    from ..store.backup import BackupError

    path = store_path(args)
    try:
        if args.backup_action == "list":
            return _list(path, as_json=args.json)
        if args.backup_action == "create":
            return _create(path, args.reason)
        return _restore(path, args.name)
    except BackupError as exc:
        return fail(str(exc))


def _list(path: Path, *, as_json: bool) -> int:
    from ..store import backup as backups

    found = backups.list_backups(path)
    if as_json:
        print(
            json.dumps(
                [
                    {
                        "name": b.name,
                        "path": str(b.path),
                        "created_at": b.created_at,
                        "reason": b.reason,
                        "bytes": b.size,
                    }
                    for b in found
                ],
                indent=2,
            )
        )
        return 0
    if not found:
        print(f"No backups yet (they are kept in {backups.backups_dir(path)}).")
        return 0
    for b in found:
        when = datetime.fromtimestamp(b.created_at).strftime("%Y-%m-%d %H:%M:%S")
        print(f"{b.name}  {when}  {b.size / 1e6:8.1f} MB  {b.reason}")
    return 0


def _create(path: Path, reason: str) -> int:
    from ..services.store_life.recovery import open_and_recover
    from ..store import backup as backups

    if not path.exists():
        raise backups.BackupError(f"there is no store at {path} to back up")
    with open_and_recover(path) as store:
        made = store.backup(reason)
    print(f"Backup written: {made.path} ({made.size / 1e6:.1f} MB)")
    return 0


def _restore(path: Path, name: str) -> int:
    from ..store import backup as backups
    from ..store.database import StoreError

    chosen = backups.find_backup(path, name)
    try:
        aside = backups.restore_backup(chosen.path, path)
    except StoreError as exc:
        raise backups.BackupError(str(exc)) from None
    print(f"Restored {chosen.name} as {path}.")
    if aside is not None:
        print(f"The store it replaced is kept as {aside}.")
    return 0
