"""`treechat projects list|add|rename|remove|move|instructions|memory|knowledge`: groups of
chats with shared instructions, knowledge and memory across chats."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING

from ._common import Subcommands, add_command, count, fail, find_session_id, open_store

if TYPE_CHECKING:
    from ..services.projects import ProjectService
    from ..store.database import Store

# The services are imported inside the command: this module is loaded with the parser.


def add_parser(sub: Subcommands) -> None:
    p = add_command(sub, "projects", cmd_projects,
                    help="groups of chats with shared instructions and knowledge")
    actions = p.add_subparsers(dest="projects_action", metavar="ACTION", required=True)
    q = actions.add_parser("list", help="the projects and their chats")
    q.add_argument("--json", action="store_true")
    q = actions.add_parser("add", help="make a project")
    q.add_argument("name")
    q.add_argument("--instructions", default="", help="instructions every chat in it follows")
    q = actions.add_parser("rename", help="rename a project")
    q.add_argument("project", help="its name or id")
    q.add_argument("name")
    q = actions.add_parser("remove", help="delete a project (its chats are kept)")
    q.add_argument("project", help="its name or id")
    q = actions.add_parser("move", help="put a chat in a project (`--out`: in none)")
    q.add_argument("session", help="the chat: id, unique id prefix or title")
    q.add_argument("project", nargs="?", help="its name or id")
    q.add_argument("--out", action="store_true", help="take the chat out of its project")
    q = actions.add_parser("instructions", help="set the project's instructions")
    q.add_argument("project", help="its name or id")
    q.add_argument("text")
    q = actions.add_parser("memory", help="let the project's chats search the other chats")
    q.add_argument("project", help="its name or id")
    q.add_argument("state", choices=("on", "off"))
    q = actions.add_parser("knowledge", help="the knowledge bases the project's chats search "
                           "(none: stop using any)")
    q.add_argument("project", help="its name or id")
    q.add_argument("names", nargs="*", metavar="NAME")
    for action in actions.choices.values():
        action.add_argument("--data-dir", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def cmd_projects(args: argparse.Namespace) -> int:
    from ..services.projects import ProjectService

    with open_store(args) as store:
        try:
            return asyncio.run(_projects(store, ProjectService(store), args))
        except (LookupError, ValueError) as exc:
            return fail(str(exc))


async def _projects(store: Store, service: ProjectService, args: argparse.Namespace) -> int:
    action = args.projects_action
    if action == "list":
        return await _list(store, service, as_json=args.json)
    if action == "add":
        made = await service.create(args.name, args.instructions)
        print(f"{made.id}  {made.name}")
        return 0
    if action == "move":
        session_id = find_session_id(store, args.session)
        if args.out == (args.project is not None):
            return fail("give a project, or --out to take the chat out of its project")
        target = None if args.out else (await service.find(args.project)).id
        await service.move(session_id, target)
        print(f"{session_id}: " + (f"in {args.project}" if target else "in no project"))
        return 0
    project = await service.find(args.project)
    if action == "rename":
        project = await service.update(project.id, name=args.name)
    elif action == "remove":
        await service.remove(project.id)
        print(f"removed {project.name} (its chats are kept)")
        return 0
    elif action == "instructions":
        project = await service.update(project.id, instructions=args.text)
    elif action == "memory":
        project = await service.update(project.id, memory=args.state == "on")
    elif action == "knowledge":
        from ..services.retrieval.knowledge import BASES_SETTING

        known = store.call(lambda r: r.get_setting(BASES_SETTING, {})) or {}
        for name in args.names:
            if name not in known:
                return fail(f"no knowledge base named {name!r} (see `treechat knowledge list`)")
        project = await service.update(project.id, knowledge=tuple(args.names))
    print(f"{project.id}  {project.name}")
    return 0


async def _list(store: Store, service: ProjectService, *, as_json: bool) -> int:
    found = await service.all()
    titles = {s.id: s.title for s in store.call(lambda r: r.list_sessions())}
    chats: dict[str, list[str]] = {}
    for sid, pid in (found.member_of or {}).items():
        if sid in titles:
            chats.setdefault(pid, []).append(sid)
    if as_json:
        print(json.dumps([{"id": p.id, "name": p.name, "instructions": p.instructions,
                           "knowledge": list(p.knowledge), "memory": p.memory,
                           "chats": [{"id": s, "title": titles[s]}
                                     for s in sorted(chats.get(p.id, []))]}
                          for p in found.projects], indent=2))
        return 0
    if not found.projects:
        print("no projects; make one with `treechat projects add NAME`", file=sys.stderr)
    for p in found.projects:
        bits = [count(len(chats.get(p.id, [])), "chat")]
        if p.knowledge:
            bits.append("knowledge: " + ", ".join(p.knowledge))
        if p.memory:
            bits.append("memory across chats on")
        print(f"{p.id}  {p.name}  ({'; '.join(bits)})")
        for sid in sorted(chats.get(p.id, []), key=lambda s: titles[s].lower()):
            print(f"  {sid}  {titles[sid]}")
    return 0
