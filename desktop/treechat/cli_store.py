"""The argument parsers of `treechat backup`; light, so the window's start-up can build the
whole command line without importing the store."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("backup", help="list, make or restore backups of the conversation store")
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
