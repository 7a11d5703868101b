"""`treechat doctor --check` and `treechat backup list|create|restore`: is the store whole,
and the rolling copies of it that a damaged or mistaken store can be put back from."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from . import paths
from .store import backup as backups
from .store.database import StoreCorruptError, StoreError, default_store_path
from .store.integrity import check_store_file


def _store_path(args: argparse.Namespace) -> Path:
    return default_store_path(paths.data_dir(args.data_dir))


def cmd_doctor_check(args: argparse.Namespace) -> int:
    path = _store_path(args)
    print(f"store:          {path}")
    try:
        report = check_store_file(path)
    except StoreCorruptError as exc:
        print(f"treechat: {exc}", file=sys.stderr)
        return 1
    for table in report.tables:
        state = f"{table.rows:,} rows" if table.ok else f"DAMAGED: {table.error}"
        print(f"  {table.name:<16} {state}")
    if report.ok:
        print("integrity:      ok (every table read back, every block's checksum verified)")
        return 0
    from .store.database import damaged_message

    print(f"integrity:      FAILED: {report.problem}")
    print(f"treechat: {damaged_message(path, report.problem)}", file=sys.stderr)
    return 1


def cmd_backup(args: argparse.Namespace) -> int:
    path = _store_path(args)
    try:
        if args.backup_action == "list":
            return _list(path, as_json=args.json)
        if args.backup_action == "create":
            return _create(path, args.reason)
        return _restore(path, args.name)
    except backups.BackupError as exc:
        print(f"treechat: {exc}", file=sys.stderr)
        return 2


def _list(path: Path, *, as_json: bool) -> int:
    found = backups.list_backups(path)
    if as_json:
        import json

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
    from .services.store_life.recovery import open_and_recover

    if not path.exists():
        raise backups.BackupError(f"there is no store at {path} to back up")
    with open_and_recover(path) as store:
        made = store.backup(reason)
    print(f"Backup written: {made.path} ({made.size / 1e6:.1f} MB)")
    return 0


def _restore(path: Path, name: str) -> int:
    chosen = backups.find_backup(path, name)
    try:
        aside = backups.restore_backup(chosen.path, path)
    except StoreError as exc:
        raise backups.BackupError(str(exc)) from None
    print(f"Restored {chosen.name} as {path}.")
    if aside is not None:
        print(f"The store it replaced is kept as {aside}.")
    return 0
