"""`treechat session show|set`, `treechat presets list|export|import` and `treechat usage`: a
chat's instructions and parameters, presets and spend from the command line, through the
same services as the window."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from .core.chat_settings import SessionSettings, SettingsError

_UNSET = object()


def add_parsers(sub: Any) -> None:
    """Register the subcommands on `treechat`'s subparsers."""
    p = sub.add_parser("session", help="show or set a chat's instructions and parameters")
    actions = p.add_subparsers(dest="session_action", metavar="ACTION", required=True)
    show = actions.add_parser("show", help="the chat's instructions, parameters and changes")
    show.add_argument("session", help="session id, unique id prefix, or exact title")
    show.add_argument("--json", action="store_true")
    put = actions.add_parser(
        "set", help="change the chat's instructions or parameters (from its next request on)"
    )
    put.add_argument("session", help="session id, unique id prefix, or exact title")
    put.add_argument("--title", metavar="T", help="rename the chat")
    prompt = put.add_mutually_exclusive_group()
    prompt.add_argument("--system-prompt", metavar="TEXT", help="the chat's own instructions "
                        "(on top of the global ones); an empty string clears them")
    prompt.add_argument("--system-prompt-file", metavar="F", help="read them from a file")
    put.add_argument("--temperature", metavar="T", help="0 to 2, or 'default'")
    put.add_argument("--top-p", metavar="P", help="above 0 up to 1, or 'default'")
    put.add_argument("--max-tokens", metavar="N", help="longest reply in tokens, or 'default'")
    put.add_argument("--reasoning-effort", metavar="E",
                     help="minimal, low, medium or high (models that reason), or 'default'")
    put.add_argument("--thinking-budget", metavar="N",
                     help="reasoning tokens (models with a thinking budget), or 'default'")
    put.add_argument("--json", action="store_true")

    p = sub.add_parser("presets", help="list, export or import presets")
    actions = p.add_subparsers(dest="presets_action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="shipped presets and your own")
    listing.add_argument("--json", action="store_true")
    out = actions.add_parser("export", help="write presets as JSON")
    out.add_argument("names", nargs="*", help="presets to export (default: all)")
    out.add_argument("-o", "--output", help="write to this file instead of standard output")
    into = actions.add_parser("import", help="add the presets in a JSON file as your own")
    into.add_argument("file")

    p = sub.add_parser("usage", help="spend by day, model or chat (the same ledger as the window)")
    p.add_argument("--by", choices=("day", "model", "session"), default="day")
    p.add_argument("--json", action="store_true")

    # The actions parse everything after their name, so they take `--data-dir` there too.
    for nested in (show, put, listing, out, into):
        nested.add_argument("--data-dir", default=argparse.SUPPRESS,
                            help="where the conversation store lives")


def _store(args: argparse.Namespace) -> Any:
    from .commands import open_store

    return open_store(args)


def _settings_record(s: SessionSettings) -> dict[str, Any]:
    return {
        "revision": s.revision,
        "changed_at": s.changed_at or None,
        "instructions": s.instructions,
        "parameters": s.parameters.as_dict(),
        "preset": s.preset or None,
    }


def _print_settings(s: SessionSettings, title: str) -> None:
    print(f"{title}  (revision {s.revision})" if s.revision else f"{title}  (nothing set)")
    params = s.parameters.as_dict()
    if s.preset:
        print(f"preset:        {s.preset}")
    for key, value in params.items():
        print(f"{key.replace('_', ' '):<15}{value}")
    if not params:
        print("parameters:    the model's defaults")
    if s.instructions:
        print("instructions:")
        for line in s.instructions.splitlines() or [""]:
            print(f"  {line}")
    else:
        print("instructions:  none of its own (the global ones apply)")


def _value(raw: str | None, kind: type) -> Any:
    if raw is None:
        return _UNSET
    if raw.strip().lower() in ("default", "none", ""):
        return None
    try:
        return kind(raw)
    except ValueError:
        raise SettingsError(f"{raw!r} is not a {'number' if kind is float else 'whole number'}"
                            ) from None


def cmd_session(args: argparse.Namespace) -> int:
    from .commands import find_session_id
    from .services.turns.chat_settings import ChatSettingsService

    with _store(args) as store:
        session_id = find_session_id(store, args.session)
        session = store.call(lambda r: r.get_session(session_id))
        service = ChatSettingsService(store)
        if args.session_action == "show":
            current = asyncio.run(service.current(session_id))
            history = asyncio.run(service.history(session_id))
            if args.json:
                print(json.dumps({**_settings_record(current), "session": session_id,
                                  "history": [_settings_record(h) for h in history]},
                                 indent=2, ensure_ascii=False))
            else:
                _print_settings(current, session.title)
            return 0
        changes: dict[str, Any] = {}
        try:
            for key, kind in (("temperature", float), ("top_p", float), ("max_tokens", int),
                              ("thinking_budget", int)):
                value = _value(getattr(args, key), kind)
                if value is not _UNSET:
                    changes[key] = value
            if args.reasoning_effort is not None:
                effort = _value(args.reasoning_effort, str)
                changes["reasoning_effort"] = effort.lower() if effort else None
            instructions: str | None = args.system_prompt
            if args.system_prompt_file:
                try:
                    instructions = Path(args.system_prompt_file).read_text(encoding="utf-8")
                except OSError as exc:
                    print(f"treechat: cannot read {args.system_prompt_file}: "
                          f"{exc.strerror or exc}", file=sys.stderr)
                    return 2
            if args.title is not None:
                asyncio.run(_rename(store, session_id, args.title))
                session = store.call(lambda r: r.get_session(session_id))
                if instructions is None and not changes:
                    print(json.dumps({"session": session_id, "title": session.title},
                                     ensure_ascii=False) if args.json
                          else f"Renamed to {session.title}")
                    return 0
            if instructions is None and not changes:
                print("treechat: nothing to set (see `treechat session set --help`)",
                      file=sys.stderr)
                return 2
            updated = asyncio.run(service.update(session_id, instructions=instructions,
                                                 **changes))
        except SettingsError as exc:
            print(f"treechat: {exc}", file=sys.stderr)
            return 2
    if args.json:
        print(json.dumps(_settings_record(updated), indent=2, ensure_ascii=False))
    else:
        _print_settings(updated, session.title)
        if instructions is not None:
            print("(the instructions are part of every request's cached prefix: the next "
                  "request rewrites it)")
    return 0


async def _rename(store: Any, session_id: str, title: str) -> None:
    from .services.turns.sessions import SessionService

    await SessionService(store).rename(session_id, title)


def cmd_presets(args: argparse.Namespace) -> int:
    from .services.turns.chat_settings import ChatSettingsService

    with _store(args) as store:
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


def cmd_usage(args: argparse.Namespace) -> int:
    from .services.turns.spending import SpendingService

    with _store(args) as store:
        rows = asyncio.run(SpendingService(store).spend(args.by))
    if args.json:
        print(json.dumps([
            {
                args.by: r.key,
                **({"title": r.label} if args.by == "session" else {}),
                "requests": r.requests,
                "input_tokens": r.input_tokens,
                "cache_read": r.cache_read,
                "cache_write": r.cache_write,
                "output_tokens": r.output_tokens,
                "cost_usd": r.cost_usd,
                "unpriced_requests": r.unpriced_requests,
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
        cost = f"${r.cost_usd:.4f}" + ("*" if r.unpriced_requests else "")
        print(f"{label:<36} {r.requests:>8} {r.input_tokens:>10,} {r.cache_read:>10,} "
              f"{r.output_tokens:>9,} {cost:>11}")
    total = sum(r.cost_usd for r in rows)
    print(f"{'total':<36} {sum(r.requests for r in rows):>8} {'':>10} {'':>10} {'':>9} "
          f"{'$' + format(total, '.4f'):>11}")
    if any(r.unpriced_requests for r in rows):
        print("* some requests were to models with no known price; they count as $0.")
    return 0


COMMANDS = {"session": cmd_session, "presets": cmd_presets, "usage": cmd_usage}
