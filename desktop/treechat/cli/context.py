"""`treechat context SESSION`: what the chat's next request would carry, the occupancy
record and its breakdown, as the window's ring and Context tab show it."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from ._common import Subcommands, add_command, data_dir, find_session_id

# The services are imported inside the command: this module is loaded with the parser
# (`--help` builds it), and they would load DuckDB, the providers and more.


def add_parser(sub: Subcommands) -> None:
    p = add_command(sub, "context", cmd_context,
                    help="what the next request would carry: occupancy and breakdown")
    p.add_argument("session", help="the chat: id, unique id prefix or exact title")
    p.add_argument("--model", help="estimate for this model instead of the chat's")
    p.add_argument("--json", action="store_true")


def cmd_context(args: argparse.Namespace) -> int:
    from ..services.bootstrap import build_services

    services = build_services(data_dir(args), detect_local_servers=False)
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
