"""`treechat connections list|add|remove|test` and `treechat models [list]`: the connections
and every model they offer, from the command line, through the same services the window
uses (the probe of this machine's usual ports included)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from . import paths

KINDS_HELP = "hosted, openai-compatible, ollama, lmstudio, llamacpp"


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `connections` and its actions."""
    p = sub.add_parser("connections", help="the servers and providers models come from: "
                       "list, add, remove, test")
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


def add_models_list(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`treechat models [list]`: into the `models` group when there is one, else a new one."""
    models = sub.choices.get("models")
    if models is None:
        models = sub.add_parser("models", help="every model of every connection")
        models.add_argument("--json", action="store_true")
    add_list_parser(models)


def models_command(
    others: Callable[[argparse.Namespace], int] | None = None,
) -> Callable[[argparse.Namespace], int]:
    """The `models` command: bare or `list` lists every model; any other action goes to
    `others` (the model library's)."""

    def run(args: argparse.Namespace) -> int:
        action = getattr(args, "models_command", None)
        if action in (None, "list") or others is None:
            return cmd_models_list(args)
        return others(args)

    return run


def add_list_parser(models: argparse.ArgumentParser) -> None:
    """Add `list` to the `models` group (the action its bare form runs)."""
    group = next(
        (a for a in models._actions if isinstance(a, argparse._SubParsersAction)), None
    )
    if group is None:
        group = models.add_subparsers(dest="models_command", metavar="ACTION")
    q = group.add_parser("list", help="every model of every connection, with its window, "
                         "price and reachability (the default)")
    q.add_argument("--json", action="store_true")
    q.add_argument("--data-dir", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


# --- running ----------------------------------------------------------------------------


def _services(args: argparse.Namespace) -> Any:
    from .services.bootstrap import build_services

    return build_services(paths.data_dir(getattr(args, "data_dir", None)))


def _fail(message: str) -> int:
    print(f"treechat: {message}", file=sys.stderr)
    return 2


def cmd_connections(args: argparse.Namespace) -> int:
    from .providers.connections import ConnectionProblem

    action = getattr(args, "connections_command", None) or "list"
    services = _services(args)
    try:
        return asyncio.run(_run_connections(services, action, args))
    except ConnectionProblem as exc:
        return _fail(str(exc))
    finally:
        services.close_store()


async def _run_connections(services: Any, action: str, args: argparse.Namespace) -> int:
    try:
        if action == "add":
            return await _add(services, args)
        if action == "remove":
            removed = await services.connections.remove(args.name)
            print(f"Removed {removed.display_label}.")
            return 0
        if action == "test":
            return await _test(services, args)
        statuses = await services.connections.refresh()
        return _print_connections(statuses, args.json)
    finally:
        await services.close()


async def _add(services: Any, args: argparse.Namespace) -> int:
    from .providers.connections import parse_headers

    key = None
    if args.key_from_env:
        key = os.environ.get(args.key_from_env, "").strip()
        if not key:
            return _fail(f"the environment variable {args.key_from_env} is empty or not set")
        keys = services.keys
        if not await asyncio.to_thread(lambda: keys.keychain_available):
            return _fail(
                "no system keychain is available, so the key could not be kept; install and "
                "unlock one (GNOME Keyring, KWallet or another Secret Service provider)"
            )
    status = await services.connections.add(
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


async def _test(services: Any, args: argparse.Namespace) -> int:
    outcome = await services.connections.test(args.name, args.model)
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


def _connection_record(status: Any) -> dict[str, Any]:
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


def _print_connections(statuses: Sequence[Any], as_json: bool) -> int:
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


def cmd_models_list(args: argparse.Namespace) -> int:
    services = _services(args)

    async def run() -> Any:
        try:
            return await services.models.refresh()
        finally:
            await services.close()

    try:
        groups = asyncio.run(run())
    finally:
        services.close_store()
    if getattr(args, "json", False):
        print(json.dumps([_group_record(g) for g in groups], indent=2, ensure_ascii=False))
        return 0
    if not any(g.models for g in groups):
        print("No models yet. Add a connection with `treechat connections add`.")
        return 0
    for g in groups:
        mark = "" if g.state in ("ready", "detected") else f" — {g.state}"
        detected = " (detected)" if g.detected and g.state == "detected" else ""
        print(f"{g.label}{detected}{mark}" + (f": {g.reason}" if g.reason else ""))
        for c in g.models:
            print(f"  {c.id:<44} {_window(c):>16}  {_price(c, services.models.is_local(c.id))}")
    return 0


def _window(choice: Any) -> str:
    if not choice.window:
        return "window ?"
    return f"{choice.window:,}" + (" (estimated)" if choice.window_estimated else "")


def _price(choice: Any, local: bool = False) -> str:
    """As the window says it: a model on this computer is free, a hosted one litellm has no
    price for is unpriced."""
    if local:
        return "free"
    if choice.price_in is None:
        return "unpriced"
    return f"${choice.price_in:g} in / ${choice.price_out:g} out per M"


def _group_record(g: Any) -> dict[str, Any]:
    return {
        "connection": g.connection,
        "label": g.label,
        "kind": g.kind,
        "state": g.state,
        "detected": g.detected,
        "reason": g.reason or None,
        "models": [
            {
                "address": c.id,
                "name": c.name or c.id,
                "display_name": c.label,
                "window": c.window,
                "window_estimated": c.window_estimated,
                "price_in_per_million": c.price_in,
                "price_out_per_million": c.price_out,
                "available": c.available,
            }
            for c in g.models
        ],
    }
