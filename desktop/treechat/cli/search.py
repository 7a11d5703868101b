"""`treechat search`: every chat and branch searched by words and meaning, the same ranked
search as the window's."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from ._common import Subcommands, add_command, open_store, result_limit

# The search engine is imported inside the command: this module is loaded with the parser
# (`--help` builds it), and it would load DuckDB and the embedding model.

# Passages the fine model embeds before a search answers, when the window has not done it yet
# (the rest are judged by it only when the quick model ranks them among the likeliest).
REFINE_FIRST = 1000


def add_parser(sub: Subcommands) -> None:
    p = add_command(sub, "search", cmd_search,
                    help="search every chat and branch by words and meaning")
    p.add_argument("query", help="what to look for, in any words")
    p.add_argument("--json", action="store_true",
                   help="print the hits as JSON: session, node, role, offset, passage, score")
    p.add_argument("--limit", type=int, default=10, help="at most this many hits (10)")
    p.add_argument("--session", help="only this chat (id or unique prefix)")


def cmd_search(args: argparse.Namespace) -> int:
    from ..providers.embeddings import EmbedderUnavailable
    from ..services.retrieval.engine import RetrievalHit, engine_for
    from ..store.fulltext import QueryError

    limit = result_limit(args)
    with open_store(args) as store:
        session = None
        if args.session:
            found = store.call(lambda r: r.find_session(args.session))
            if found is None:
                raise LookupError(f"no chat matches {args.session!r}")
            session = found.id
        engine = engine_for(store)  # with the search model the settings name

        async def search() -> list[RetrievalHit]:
            await engine.catch_up()
            await engine.refine(limit=REFINE_FIRST)
            return await engine.search(args.query, limit=limit, session_id=session,
                                       catch_up=False)

        try:
            hits = asyncio.run(search())
        except QueryError:
            print("treechat: the query has no words to search for", file=sys.stderr)
            return 2
        except EmbedderUnavailable as exc:
            print(f"treechat: the search model: {exc}", file=sys.stderr)
            return 2
    rows = [{"session": h.session_id, "node": h.node_id, "role": h.role, "offset": h.offset,
             "passage": h.text, "score": round(h.score, 6)} for h in hits]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no match")
    for r in rows:
        text = " ".join(str(r["passage"]).split())
        print(f"{r['session']}  {r['node']}  {r['role']:<9}  {r['score']:.4f}  {text[:160]}")
    return 0
