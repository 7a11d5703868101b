"""`treechat connections list|add|remove|test`: the servers and providers models come from,
through the same service the window uses (the probe of this machine's usual ports included)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._common import Subcommands, add_command, data_dir, fail

if TYPE_CHECKING:
    from ..services.bootstrap import Services
    from ..services.models.connections import ConnectionService, ConnectionStatus

# The services are imported inside the commands: this module is loaded with the parser
# (`--help` builds it), and they would load DuckDB, the providers and more.

KINDS_HELP = "hosted, openai-compatible, ollama, lmstudio, llamacpp"


def add_parser(sub: Subcommands) -> None:
    """`connections` and its actions."""
    p = add_command(sub, "connections", cmd_connections,
                    help="the servers and providers models come from: list, add, remove, test")
    actions = p.add_subparsers(dest="connections_command", metavar="ACTION")

    q = actions.add_parser("list", help="every connection, its state and how many models")
    q.add_argument("--json", action="store_true")

    q = actions.add_parser("add", help="add a server or provider; its models are listed from it")
    q.add_argument("--kind", required=True, help=KINDS_HELP)
    q.add_argument("--name", required=True, help="how it is shown, and the first part of its "
                   "models' addresses (lab -> lab/MODEL)")
    q.add_argument("--base-url", default="", help="the server's address, e.g. "
                   "http://127.0.0.1:8000/v1 (http or https)")
    q.add_argument("--key-from-env", metavar="VAR", help="read the API key from this "
                   "environment variable and keep it in the system keychain")
    q.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                   help="an extra header sent with every request (repeatable)")
    q.add_argument("--provider", default="", help="hosted: litellm's provider name "
                   "(openai, anthropic, openrouter, ...); default: the name")
    q.add_argument("--model", action="append", default=[], dest="models", metavar="MODEL",
                   help="hosted: a model to offer (repeatable; default: the usual ones)")
    q.add_argument("--timeout", type=float, help="seconds to connect and for the first byte")
    q.add_argument("--json", action="store_true")

    q = actions.add_parser("remove", help="remove a saved connection and its key")
    q.add_argument("name")

    q = actions.add_parser("test", help="list its models and make a one-token call")
    q.add_argument("name")
    q.add_argument("--model", help="the model to call (default: its first)")
    q.add_argument("--json", action="store_true")
    for parser in actions.choices.values():
        parser.add_argument("--data-dir", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def cmd_connections(args: argparse.Namespace) -> int:
    from ..providers.connections import ConnectionProblem
    from ..services.bootstrap import build_services

    action = args.connections_command or "list"
    services = build_services(data_dir(args))
    try:
        return asyncio.run(_run_connections(services, action, args))
    except ConnectionProblem as exc:
        return fail(str(exc))
    finally:
        services.close_store()


async def _run_connections(services: Services, action: str, args: argparse.Namespace) -> int:
    connections = services.connections
    assert connections is not None  # build_services always makes one
    try:
        if action == "add":
            return await _add(services, connections, args)
        if action == "remove":
            removed = await connections.remove(args.name)
            print(f"Removed {removed.display_label}.")
            return 0
        if action == "test":
            return await _test(connections, args)
        statuses = await connections.refresh()
        return _print_connections(statuses, args.json)
    finally:
        await services.close()


async def _add(
    services: Services, connections: ConnectionService, args: argparse.Namespace
) -> int:
    from ..providers.connections import parse_headers

    key = None
    if args.key_from_env:
        key = os.environ.get(args.key_from_env, "").strip()
        if not key:
            return fail(f"the environment variable {args.key_from_env} is empty or not set")
        keys = services.keys
        if not await asyncio.to_thread(lambda: keys.keychain_available):
            return fail(
                "no system keychain is available, so the key could not be kept; install and "
                "unlock one (GNOME Keyring, KWallet or another Secret Service provider)"
            )
    status = await connections.add(
        args.kind,
        args.name,
        base_url=args.base_url,
        api_key=key,
        headers=parse_headers(args.header),
        provider=args.provider,
        models=args.models,
        timeout=args.timeout,
    )
    if args.json:
        print(json.dumps(_connection_record(status), indent=2, ensure_ascii=False))
    else:
        conn = status.connection
        count = len(conn.offered())
        print(f"Added {conn.display_label} ({conn.kind}): {count} model{'s' if count != 1 else ''}"
              + (f" — {status.reason}" if status.reason else ""))
    return 0 if status.state in ("ready", "unchecked") and not status.reason else 1


async def _test(connections: ConnectionService, args: argparse.Namespace) -> int:
    outcome = await connections.test(args.name, args.model)
    if args.json:
        print(json.dumps({"ok": outcome.ok, "connection": outcome.connection,
                          "model": outcome.model, "message": outcome.message,
                          "detail": outcome.detail, "reply": outcome.reply}, indent=2,
                         ensure_ascii=False))
    elif outcome.ok:
        print(f"OK: {outcome.message} ({outcome.model}).")
    else:
        print(f"Failed: {outcome.message}", file=sys.stderr)
        if outcome.detail and outcome.detail != outcome.message:
            print(f"  {outcome.detail}", file=sys.stderr)
    return 0 if outcome.ok else 1


def _connection_record(status: ConnectionStatus) -> dict[str, Any]:
    conn = status.connection
    return {
        "name": conn.id,
        "label": conn.display_label,
        "kind": conn.kind,
        "base_url": conn.base_url or None,
        "provider": conn.provider or None,
        "state": status.state,
        "reason": status.reason or None,
        "detected": conn.detected,
        "key": conn.has_key or (conn.kind == "hosted" and status.state == "ready"),
        "headers": [name for name, _ in conn.headers],
        "timeout": conn.timeout,
        "models": [m.name for m in conn.offered()],
    }


def _print_connections(statuses: Sequence[ConnectionStatus], as_json: bool) -> int:
    if as_json:
        print(json.dumps([_connection_record(s) for s in statuses], indent=2, ensure_ascii=False))
        return 0
    if not statuses:
        print("No connections yet. Add one with `treechat connections add`.")
        return 0
    for s in statuses:
        conn = s.connection
        where = conn.base_url or conn.provider or ""
        count = len(conn.offered())
        line = f"{conn.id:<14} {conn.kind:<18} {s.state:<12} {count:>5} models  {where}"
        print(line.rstrip() + (f"  ({s.reason})" if s.reason else ""))
    return 0
