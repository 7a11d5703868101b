"""`treechat ledger` (tokens, cache reads and writes and cost per model) and `treechat usage`
(spend by day, model or chat): the same usage rows the window counts."""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.money import UNPRICED, spend_text
from ._common import (
    Subcommands,
    add_command,
    find_session_id,
    open_store,
    usage_record,
)

if TYPE_CHECKING:
    from ._common import UsageFigures

# The store and the services are imported inside the commands: this module is loaded with
# the parser (`--help` builds it), and they would load DuckDB and more.


def add_ledger_parser(sub: Subcommands) -> None:
    p = add_command(sub, "ledger", cmd_ledger,
                    help="tokens, cache reads/writes and cost per model")
    p.add_argument("session", nargs="?", help="only this chat")
    p.add_argument("--json", action="store_true")


def add_usage_parser(sub: Subcommands) -> None:
    p = add_command(sub, "usage", cmd_usage,
                    help="spend by day, model or chat (the same ledger as the window)")
    p.add_argument("--by", choices=("day", "model", "session"), default="day")
    p.add_argument("--json", action="store_true")


def cmd_ledger(args: argparse.Namespace) -> int:
    from ..providers.connections import display_name
    from ..services.models.catalog import runs_here
    from ..store.usage import ledger

    with open_store(args) as store:
        session_id = find_session_id(store, args.session) if args.session else None
        rows = store.call(lambda r: ledger(r, session_id))
        local = runs_here(store)

    free = [r.requests if local(r.model) else 0 for r in rows]  # ran on this computer
    if args.json:
        print(json.dumps([{"model": r.model, **usage_record(r), "free_requests": f}
                          for r, f in zip(rows, free, strict=True)], indent=2))
        return 0
    if not rows:
        print("No requests recorded yet.")
        return 0
    print(
        f"{'model':<36} {'requests':>8} {'input':>10} {'cache read':>10} "
        f"{'cache write':>11} {'output':>9} {'cost':>11}"
    )
    for r, f in zip(rows, free, strict=True):
        print(
            f"{display_name(r.model):<36} {r.requests:>8} {r.input_tokens:>10,} "
            f"{r.cache_read:>10,} "
            f"{r.cache_write:>11,} {r.output_tokens:>9,} "
            f"{cost_cell(r, f):>11}"
        )
    print_unpriced_note(rows, free)
    return 0


def cmd_usage(args: argparse.Namespace) -> int:
    from ..services.models.catalog import runs_here
    from ..services.turns.spending import SpendingService

    with open_store(args) as store:
        rows = asyncio.run(SpendingService(store).spend(args.by, local=runs_here(store)))
    if args.json:
        print(json.dumps([
            {
                args.by: r.key,
                **({"title": r.label} if args.by == "session" else {}),
                **usage_record(r),
                "free_requests": r.free_requests,
            }
            for r in rows
        ], indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print("No requests recorded yet.")
        return 0
    head = {"day": "day", "model": "model", "session": "chat"}[args.by]
    print(f"{head:<36} {'requests':>8} {'input':>10} {'cached':>10} {'output':>9} {'cost':>11}")
    for r in rows:
        label = r.label if len(r.label) <= 36 else r.label[:35] + "…"
        print(f"{label:<36} {r.requests:>8} {r.input_tokens:>10,} {r.cache_read:>10,} "
              f"{r.output_tokens:>9,} {cost_cell(r, r.free_requests):>11}")
    total = spend_text(sum(r.cost_usd for r in rows), sum(r.requests for r in rows),
                       sum(r.unpriced_requests for r in rows),
                       sum(r.free_requests for r in rows))
    print(f"{'total':<36} {sum(r.requests for r in rows):>8} {'':>10} {'':>10} {'':>9} "
          f"{total:>11}")
    print_unpriced_note(rows, [r.free_requests for r in rows])
    return 0


def cost_cell(row: UsageFigures, free: int = 0) -> str:
    """A row's cost in the window's words: "$0.0125", "free" for requests that ran on this
    computer, "unpriced" for models with no known price, "$0.01 + 2 unpriced" for a mix."""
    return spend_text(row.cost_usd, row.requests, row.unpriced_requests, free) or "$0"


def print_unpriced_note(rows: Sequence[UsageFigures], free: Sequence[int]) -> None:
    """Under a table with unpriced requests: what the word means (their cost is not known, so
    no sum includes it). Requests that ran on this computer (`free`) are not unpriced."""
    if any(min(r.unpriced_requests, r.requests - f) > 0
           for r, f in zip(rows, free, strict=True)):
        print(f"{UNPRICED}: requests to a model with no known price; no sum above counts them.")
