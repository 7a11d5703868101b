"""`treechat knowledge add|list|remove|reindex|use|search|model`: folders and files searched
by words and meaning, cited by file, page and line, and the model that embeds them and the
chats for search."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._common import Subcommands, add_command, count, data_dir, fail, open_store, result_limit

if TYPE_CHECKING:
    from ..services.bootstrap import OpenServices
    from ..services.retrieval.knowledge import KnowledgeService

# The knowledge service is imported inside the command: this module is loaded with the
# parser (`--help` builds it), and it would load DuckDB and the embedding model.


def add_parser(sub: Subcommands) -> None:
    p = add_command(sub, "knowledge", cmd_knowledge,
                    help="folders and files searched by words and meaning")
    actions = p.add_subparsers(dest="knowledge_action", metavar="ACTION", required=True)
    q = actions.add_parser("add", help="add folders or files to a knowledge base and index them")
    q.add_argument("name")
    q.add_argument("paths", nargs="+", metavar="PATH")
    actions.add_parser("list", help="the knowledge bases, their paths, files and passages")
    q = actions.add_parser("remove", help="forget a knowledge base (its files are untouched)")
    q.add_argument("name")
    q = actions.add_parser("reindex", help="bring a base up to date with its files")
    q.add_argument("name")
    q = actions.add_parser("use", help="the knowledge bases a chat's model may search "
                           "(none: stop using any)")
    q.add_argument("session", help="the chat: id, unique id prefix or title")
    q.add_argument("names", nargs="*", metavar="NAME")
    q = actions.add_parser("search", help="search one knowledge base")
    q.add_argument("name")
    q.add_argument("query", help="what to look for, in any words")
    q.add_argument("--json", action="store_true",
                   help="print the passages as JSON: file, page, line, passage, score")
    q.add_argument("--limit", type=int, default=5, help="at most this many passages (5)")
    q = actions.add_parser("model", help="the model that embeds chats and knowledge for "
                           "search: without NAME the current one and the choices; "
                           "choosing one embeds everything again with it")
    q.add_argument("name", nargs="?", metavar="NAME",
                   help="'offline' (built in), or a model the connections offer")
    for action in actions.choices.values():
        action.add_argument("--data-dir", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def _progress(p: Any) -> None:
    if sys.stderr.isatty() or p.done == p.total:
        print(f"\rindexed {p.done}/{p.total} files, {p.files_per_s:.1f} files/s, "
              f"{p.seconds_left:.0f} s left", end="\n" if p.done == p.total else "",
              file=sys.stderr, flush=True)


def cmd_knowledge(args: argparse.Namespace) -> int:
    from ..services.retrieval.knowledge import KnowledgeError, KnowledgeService
    from ..store.fulltext import QueryError

    if args.knowledge_action == "model":
        return _search_model(args)
    with open_store(args) as store:
        service = KnowledgeService(store)
        action = args.knowledge_action
        try:
            return asyncio.run(_knowledge(service, action, args))
        except (KnowledgeError, QueryError) as exc:
            print(f"treechat: {exc}", file=sys.stderr)
            return 2


async def _knowledge(service: KnowledgeService, action: str, args: argparse.Namespace) -> int:
    from ..services.retrieval.knowledge import KnowledgeError

    if action == "add":
        paths = await service.add(args.name, args.paths)
        report = await service.reindex(args.name, _progress)
        print(f"{args.name}: {count(len(paths), 'path')}, {count(report.files, 'file')}, "
              f"{report.read} read in {report.seconds:.1f} s")
        for line in report.skipped:
            print(f"  skipped {line}", file=sys.stderr)
        return 0
    if action == "reindex":
        report = await service.reindex(args.name, _progress)
        print(f"{args.name}: {count(report.files, 'file')}, {report.read} read, "
              f"{report.removed} removed, {report.seconds:.1f} s")
        return 0
    if action == "remove":
        await service.remove(args.name)
        print(f"removed {args.name}")
        return 0
    if action == "use":
        found = await service.store.run(lambda r: r.find_session(args.session))
        if found is None:
            raise KnowledgeError(f"no chat matches {args.session!r}")
        await service.use_in_session(found.id, args.names)
        print(f"{found.id}: " + (", ".join(args.names) or "no knowledge"))
        return 0
    if action == "list":
        bases = await service.bases()
        stats = await service.stats()
        if not bases:
            print("no knowledge bases; add one with `treechat knowledge add NAME PATH...`")
        for name, paths in sorted(bases.items()):
            files, passages = stats.get(name, (0, 0))
            print(f"{name}: {count(files, 'file')}, {count(passages, 'passage')}")
            for p in paths:
                print(f"  {p}" + ("" if Path(p).exists() else "  (not there any more)"))
        return 0
    hits = await service.search([args.name], args.query, limit=result_limit(args))
    if args.json:
        print(json.dumps([{"file": h.path, "page": h.page, "line": h.line, "passage": h.text,
                           "score": round(h.score, 6)} for h in hits], indent=2))
        return 0
    if not hits:
        print("no match")
    for h in hits:
        print(f"{h.citation}  ({h.score:.4f})\n  {' '.join(h.text.split())[:200]}")
    return 0


def _search_model(args: argparse.Namespace) -> int:
    from ..providers.connections import ConnectionProblem
    from ..providers.embeddings import EmbedderUnavailable
    from ..services.bootstrap import build_services

    services = build_services(data_dir(args))
    try:
        return asyncio.run(_choose_model(services, args.name))
    except (EmbedderUnavailable, ConnectionProblem) as exc:
        return fail(str(exc))
    finally:
        services.close_store()


async def _choose_model(services: OpenServices, name: str | None) -> int:
    from ..services.retrieval.search_model import (
        OFFLINE,
        change_search_model,
        embedding_models_of,
        find_offered,
        label_of,
        offered,
        reembed,
        saved_search_model,
    )

    try:
        assert services.connections is not None  # build_services always makes one
        await services.connections.refresh()
        found = await embedding_models_of(services.connections)
        library = services.models.library
        installed = (await asyncio.to_thread(library.library.installed)
                     if library is not None else [])
        choices = await asyncio.to_thread(offered, found, [Path(m.path) for m in installed])
        current = await services.store.run(saved_search_model)
        if name is None:
            print(f"search model: {label_of(current)}")
            for choice in [None, *choices]:
                mark = "*" if choice == current else " "
                print(f" {mark} {OFFLINE if choice is None else choice.name}")
            return 0
        if name.strip().lower() in (OFFLINE, "offline (built in)"):
            model = None
        else:
            model = find_offered(name, choices)
            if model is None:
                names = ", ".join([OFFLINE, *(c.name for c in choices)])
                return fail(f"no embedding model {name!r} is offered; the choices: {names}")
        await change_search_model(services.store, model)
        print(f"search model: {label_of(model)}; embedding chats and knowledge again",
              file=sys.stderr)

        def chats(done: int, last: int) -> None:
            if sys.stderr.isatty():
                print(f"\rchats: {done:,} passages embedded", end="", file=sys.stderr,
                      flush=True)

        done = await reembed(services.store, chats=chats,
                             knowledge=lambda base, p: _progress(p))
        print(f"search model: {label_of(model)}; {count(done, 'chat passage')} embedded")
        return 0
    finally:
        await services.close()
