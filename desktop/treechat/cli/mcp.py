"""`treechat mcp`: configure MCP servers from the command line (the same settings as the
window's Settings → Tools) and test one. A turn's tool approvals are asked in `_turn`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ._common import Subcommands, add_command, find_session_id, open_store

if TYPE_CHECKING:
    from ..services.mcp.service import McpService

# The MCP service and its configuration are imported inside the command: this module is
# loaded with the parser (`--help` builds it), and they would load DuckDB and the MCP SDK.


def add_parser(sub: Subcommands) -> None:
    mcp = add_command(
        sub, "mcp", cmd_mcp,
        help="MCP servers: list, add, remove, test, import",
        description="Tools, prompts and resources from Model Context Protocol servers.",
    )
    verbs = mcp.add_subparsers(dest="mcp_command", metavar="ACTION", required=True)

    p = verbs.add_parser("list", help="the configured servers")
    p.add_argument("--json", action="store_true")

    p = verbs.add_parser(
        "add",
        help="add a server: NAME -- COMMAND ARGS... (stdio) or NAME --url URL (HTTP)",
        description="Add an MCP server. stdio: `treechat mcp add NAME -- COMMAND ARGS...`; "
        "streamable HTTP: `treechat mcp add NAME --url URL [--header K=V]`.",
    )
    p.add_argument("name")
    policy = p.add_mutually_exclusive_group()
    policy.add_argument(
        "--allow", dest="policy", action="store_const", const="allow",
        help="run this server's tools without asking",
    )
    policy.add_argument(
        "--deny", dest="policy", action="store_const", const="deny",
        help="never run this server's tools",
    )
    p.add_argument("--url", help="a streamable HTTP (or, with --sse, SSE) endpoint")
    p.add_argument("--sse", action="store_true", help="the URL is an older SSE endpoint")
    p.add_argument(
        "--header", action="append", default=[], metavar="K=V",
        help="an HTTP header (kept in the keyring); repeatable",
    )
    p.add_argument(
        "--env", action="append", default=[], metavar="K=V",
        help="an environment variable for a stdio server (kept in the keyring); repeatable",
    )
    p.add_argument("--cwd", help="the working folder of a stdio server")
    p.add_argument("--replace", action="store_true", help="replace a server of that name")
    p.set_defaults(server_command=[])

    p = verbs.add_parser("remove", help="remove a server (and its keyring entry)")
    p.add_argument("name")

    p = verbs.add_parser("test", help="start a server and list its tools, prompts and resources")
    p.add_argument("name")
    p.add_argument("--json", action="store_true")

    p = verbs.add_parser(
        "import", help='add the servers of a Claude Desktop / Cursor {"mcpServers": ...} file'
    )
    p.add_argument("file", help="the JSON file, or - for standard input")

    for verb, text in (("enable", "use a server"), ("disable", "stop using a server")):
        p = verbs.add_parser(verb, help=f"{text} in every chat, or in one with --session")
        p.add_argument("name")
        p.add_argument("--session", help="only in this chat (id, id prefix or exact title)")

    p = verbs.add_parser("protect", help="keep a tool's results whole, never aged")
    p.add_argument("name")
    p.add_argument("tool")
    p.add_argument("--off", action="store_true", help="let the tool's results age again")


def split_command_tail(argv: Sequence[str]) -> tuple[list[str], list[str] | None]:
    """`treechat mcp add NAME [options] -- COMMAND ARGS...`: the words after `--` are the
    server's command line, options and all, so they are taken off before argparse sees them
    (it cannot give a positional the words on both sides of NAME's options)."""
    words = list(argv)
    if "--" not in words or "mcp" not in words[: words.index("--")]:
        return words, None
    cut = words.index("--")
    return words[:cut], words[cut + 1 :]


def cmd_mcp(args: argparse.Namespace) -> int:
    from ..providers.keys import KeyStore
    from ..services.mcp.service import McpService
    from ..tools.mcp.config import ConfigError

    handler = _HANDLERS[args.mcp_command]
    with open_store(args) as store:
        service = McpService(store, KeyStore())

        async def run() -> int:
            try:
                await service.ensure_loaded()
                return await handler(service, args)
            finally:
                await service.close()

        try:
            return asyncio.run(run())
        except ConfigError as exc:
            print(f"treechat mcp: {exc}", file=sys.stderr)
            return 2


async def _list(service: McpService, args: argparse.Namespace) -> int:
    configs = service.configs()
    listings = {c.name: service._tools_of(c.name) for c in configs}
    if args.json:
        print(
            json.dumps(
                [
                    {**c.public(), "tools": [t.name for t in listings[c.name]]}
                    for c in configs
                ],
                indent=2,
            )
        )
        return 0
    if not configs:
        print("No MCP servers yet. Add one with `treechat mcp add NAME -- COMMAND ARGS...`.")
        return 0
    for c in configs:
        tools = listings[c.name]
        known = f"{len(tools)} tools" if tools else "not started yet"
        state = "on" if c.enabled else "off"
        print(f"{c.name:<20} {c.transport:<5} {state:<3} {c.policy:<5} {known:<16} {c.where}")
    return 0


def _pairs(items: list[str], what: str) -> dict[str, str]:
    from ..tools.mcp.config import parse_header

    out: dict[str, str] = {}
    for item in items:
        key, value = parse_header(item)
        out[key] = value
    return out


async def _add(service: McpService, args: argparse.Namespace) -> int:
    from ..tools.mcp.config import ConfigError, ServerConfig

    command = list(args.server_command)
    if args.url and command:
        raise ConfigError("give either --url URL or -- COMMAND ARGS, not both")
    if not args.url and not command:
        raise ConfigError("give the server's command after `--`, or --url URL")
    if args.url and args.env:
        raise ConfigError("--env is for stdio servers; an HTTP server takes --header")
    if command and args.header:
        raise ConfigError("--header is for HTTP servers; a stdio server takes --env")
    config = ServerConfig(
        name=args.name,
        transport=("sse" if args.sse else "http") if args.url else "stdio",
        command=command[0] if command else "",
        args=tuple(command[1:]),
        env=_pairs(args.env, "env"),
        cwd=args.cwd or "",
        url=args.url or "",
        headers=_pairs(args.header, "header"),
        policy=args.policy or "ask",
    )
    if config.env or config.headers:
        keys = service.keys
        if not await asyncio.to_thread(lambda: keys.keychain_available):
            # kept in memory only, the secret would be gone when this command ends, and the
            # server started later with it empty
            raise ConfigError(
                "no system keychain is available, so the server's secrets (--env, --header) "
                "could not be kept and nothing was added; install and unlock one (GNOME "
                "Keyring, KWallet or another Secret Service provider)"
            )
    await service.add(config, replace_existing=args.replace)
    asks = {
        "ask": "each tool call is asked about",
        "allow": "its tools run without asking",
        "deny": "its tools never run",
    }[config.policy]
    print(f"Added {config.name} ({config.transport}: {config.where}); {asks}.")
    if config.env or config.headers:
        print("Its secrets are kept in the keyring.")
    return 0


async def _remove(service: McpService, args: argparse.Namespace) -> int:
    await service.remove(args.name)
    print(f"Removed {args.name}.")
    return 0


async def _test(service: McpService, args: argparse.Namespace) -> int:
    service.config(args.name)
    print(f"Starting {args.name}...", file=sys.stderr, flush=True)
    state = await service.restart(args.name)
    if args.json:
        print(
            json.dumps(
                {
                    "name": state.name,
                    "status": state.status,
                    "error": state.error,
                    "stderr_tail": state.stderr_tail,
                    "started_ms": state.started_ms,
                    "tools": [
                        {"name": t.name, "problem": t.problem, "description": t.description}
                        for t in state.tools
                    ],
                    "prompts": [p.name for p in state.prompts],
                    "resources": [r.uri for r in state.resources],
                },
                indent=2,
            )
        )
        return 0 if state.status == "ready" else 1
    if state.status != "ready":
        print(f"{args.name}: {state.status}: {state.error}")
        if state.stderr_tail:
            print("Its last output:")
            for line in state.stderr_tail.splitlines()[-20:]:
                print(f"  {line}")
        return 1
    print(f"{args.name}: ready in {state.started_ms or 0:.0f} ms ({state.server_info})")
    for t in state.tools:
        note = f"  (not offered: {t.problem})" if t.problem else ""
        print(f"  tool      {t.name}{note}")
    for p in state.prompts:
        print(f"  prompt    /{args.name}:{p.name}")
    for r in state.resources:
        print(f"  resource  {r.uri}")
    return 0


async def _import(service: McpService, args: argparse.Namespace) -> int:
    if args.file == "-":
        result = await service.import_json(sys.stdin.read())
    else:
        result = await service.import_file(Path(args.file))
    for c in result.servers:
        print(f"Added {c.name} ({c.transport}: {c.where})")
    for problem in result.problems:
        print(f"Skipped {problem}", file=sys.stderr)
    if not result.servers and not result.problems:
        print("The file lists no servers.")
    return 0 if result.servers or not result.problems else 1


async def _enable(service: McpService, args: argparse.Namespace) -> int:
    return await _switch(service, args, True)


async def _disable(service: McpService, args: argparse.Namespace) -> int:
    return await _switch(service, args, False)


async def _switch(service: McpService, args: argparse.Namespace, on: bool) -> int:
    word = "on" if on else "off"
    if args.session:
        session_id = find_session_id(service.store, args.session)
        await service.set_enabled_in_chat(session_id, args.name, on)
        print(f"{args.name} is {word} in chat {session_id[:12]}.")
    else:
        await service.set_enabled(args.name, on)
        print(f"{args.name} is {word} in every chat that does not say otherwise.")
    return 0


async def _protect(service: McpService, args: argparse.Namespace) -> int:
    await service.set_protected(args.name, args.tool, not args.off)
    state = "ages like other tools again" if args.off else "is protected from aging"
    print(f"{args.name} › {args.tool} {state}.")
    return 0


_HANDLERS: dict[str, Callable[[McpService, argparse.Namespace], Awaitable[int]]] = {
    "list": _list,
    "add": _add,
    "remove": _remove,
    "test": _test,
    "import": _import,
    "enable": _enable,
    "disable": _disable,
    "protect": _protect,
}
