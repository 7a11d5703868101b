"""`treechat sessions` (every chat, newest first) and `treechat session show|set` (a chat's
instructions, parameters and title), through the same services as the window."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.chat_settings import SessionSettings, SettingsError
from ._common import Subcommands, add_command, find_session, open_store

if TYPE_CHECKING:
    from ..store.database import Store

# The services are imported inside the commands: this module is loaded with the parser
# (`--help` builds it), and they would load DuckDB and more.

_UNSET = object()


def add_list_parser(sub: Subcommands) -> None:
    p = add_command(sub, "sessions", cmd_sessions, help="list chats, newest first")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--all", action="store_true", help="include deleted (hidden) chats")


def add_settings_parser(sub: Subcommands) -> None:
    p = add_command(sub, "session", cmd_session,
                    help="show or set a chat's instructions and parameters")
    actions = p.add_subparsers(dest="session_action", metavar="ACTION", required=True)
    show = actions.add_parser("show", help="the chat's instructions, parameters and changes")
    show.add_argument("session", help="the chat: id, unique id prefix or exact title")
    show.add_argument("--json", action="store_true")
    put = actions.add_parser(
        "set", help="change the chat's instructions or parameters (from its next request on)"
    )
    put.add_argument("session", help="the chat: id, unique id prefix or exact title")
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

    # The actions parse everything after their name, so they take `--data-dir` there too.
    for nested in (show, put):
        nested.add_argument("--data-dir", default=argparse.SUPPRESS,
                            help="where the conversation store lives")


def cmd_sessions(args: argparse.Namespace) -> int:
    """Every session, newest first: a table, or JSON with `--json`."""
    with open_store(args) as store:
        sessions = store.call(lambda r: r.list_sessions(include_hidden=args.all))
        counts = store.call(lambda r: r.node_counts_by_session())
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "id": s.id,
                        "title": s.title,
                        "head": s.head,
                        "model": s.model,
                        "created_at": s.created_at,
                        "updated_at": s.updated_at,
                        "forked_from": s.forked_from,
                        "hidden": s.hidden,
                        "nodes": counts.get(s.id, 0),
                    }
                    for s in sessions
                ],
                indent=2,
                ensure_ascii=False,
            )
        )
        return 0
    if not sessions:
        print("No chats yet.")
        return 0
    for s in sessions:
        when = datetime.fromtimestamp(s.updated_at).strftime("%Y-%m-%d %H:%M")
        print(f"{s.id[:12]}  {when}  {counts.get(s.id, 0):>6} nodes  {s.title}")
    return 0


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
    from ..services.turns.chat_settings import ChatSettingsService

    with open_store(args) as store:
        session = find_session(store, args.session)
        session_id = session.id
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
                session = store.call(lambda r: r.get_session(session_id)) or session
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


async def _rename(store: Store, session_id: str, title: str) -> None:
    from ..services.turns.sessions import SessionService

    await SessionService(store).rename(session_id, title)


