"""`treechat doctor`: where the store is, its schema version and size, how fast it opens;
`--check` reads every table back and verifies the file's checksums."""

from __future__ import annotations

import argparse
import sys
import time

from .. import __version__
from ._common import Subcommands, add_command, open_store, store_path

# The store is imported inside the commands: this module is loaded with the parser
# (`--help` builds it), and it would load DuckDB.


def add_parser(sub: Subcommands) -> None:
    p = add_command(
        sub, "doctor", cmd_doctor,
        help="show the store, schema version, node count and environment",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="read every table back and verify the file's checksums (read-only)",
    )


def cmd_doctor(args: argparse.Namespace) -> int:
    if args.check:
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
    print(f"chats:          {sessions}")
    print(f"nodes:          {nodes}")
    print(f"opened in:      {(time.perf_counter() - started) * 1000:.0f} ms")
    return 0


def cmd_doctor_check(args: argparse.Namespace) -> int:
    from ..store.database import StoreCorruptError, damaged_message
    from ..store.integrity import check_store_file
    from ..store.opening import COMMAND_MEMORY_LIMIT

    path = store_path(args)
    print(f"store:          {path}")
    try:
        report = check_store_file(path, COMMAND_MEMORY_LIMIT)
    except StoreCorruptError as exc:
        print(f"treechat: {exc}", file=sys.stderr)
        return 1
    for table in report.tables:
        state = f"{table.rows:,} rows" if table.ok else f"DAMAGED: {table.error}"
        print(f"  {table.name:<16} {state}")
    for index in report.indexes:
        if not index.ok:
            print(f"  index {index.name}: DAMAGED: {index.error}")
    if report.ok:
        print("integrity:      ok (every table read back and every index looked up: "
              "their blocks' checksums verified)")
        return 0
    print(f"integrity:      FAILED: {report.problem}")
    print(f"treechat: {damaged_message(path, report.problem)}", file=sys.stderr)
    return 1
