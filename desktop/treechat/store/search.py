"""Search over every session's title and every message on every branch, for the session
list's search field. Runs on the store's worker like any other repository call.

`search_ranked` answers from the full-text index (`store.fulltext`, BM25); `search_sessions`
is the substring scan it replaces, kept for callers that want literal substring matches."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.model import Session
from .fulltext import PASSAGES_PER_NODE, FullTextIndex, Passage, QueryError, all_terms_query
from .repository import SESSION_COLUMNS, Repository, session_from_row

SNIPPET_CHARS = 120

# A node's display text in SQL, matching `Node.text`: a JSON string is unwrapped, a dict
# with "text" gives that, anything else is searched as its JSON.
_NODE_TEXT = (
    "CASE json_type(output) WHEN 'VARCHAR' THEN output->>'$' "
    "ELSE coalesce(output->>'$.text', CAST(output AS VARCHAR)) END"
)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A session that matches, with the newest matching message (empty when only the title
    matched) cut down to a snippet around the match."""

    session: Session
    snippet: str
    node_id: str | None


# Matching passages ranked per query, newest first: up to this many the ranking is exact
# BM25 over every match; a word found in more passages than this is ranked among its newest
# `RANKED_SCAN` matches (FTS5 stops walking its doclist there, which keeps a common word
# as fast as a rare one on a store of years).
RANKED_SCAN = 1000


def search_ranked(
    repo: Repository, index: FullTextIndex, query: str, limit: int = 500
) -> tuple[SearchHit, ...]:
    """Visible sessions matching `query`, best first: sessions whose title holds it first
    (newest first), then sessions by their best-matching message (BM25 over every word of
    the query, the last one possibly unfinished). Each message hit carries its best
    passage's snippet and node. The index is brought up to date first."""
    needle = " ".join(query.split()).lower()
    if not needle:
        return ()
    index.sync(repo)
    try:
        fts = all_terms_query(needle)
    except QueryError:
        fts = ""
    scored = index.newest(fts, scan=RANKED_SCAN) if fts else []
    owners = index.owners(r // PASSAGES_PER_NODE for r, _ in scored)
    best_of: dict[str, tuple[int, float]] = {}
    for rowid, score in scored:  # already best first
        owner = owners.get(rowid // PASSAGES_PER_NODE)
        if owner is not None and owner[1] not in best_of:
            best_of[owner[1]] = (rowid, score)
    # only the passages shown are read (for their snippets)
    best: dict[str, Passage] = {p.session_id: p for p in index.passages_of(
        list(best_of.values())[:limit], owners)}
    cols = ", ".join(f"s.{c.strip()}" for c in SESSION_COLUMNS.split(","))
    width = len(SESSION_COLUMNS.split(","))
    candidates = list(best_of)[:limit]
    # One read for both: sessions whose title matches, and the sessions the messages found.
    rows = repo.con.execute(
        f"SELECT {cols}, contains(lower(s.title), $needle) AS titled FROM sessions s "
        "WHERE NOT s.hidden AND (contains(lower(s.title), $needle) "
        "OR s.id IN (SELECT unnest($ids))) ORDER BY s.updated_at DESC, s.id",
        {"needle": needle, "ids": candidates},
    ).fetchall()
    hits: list[SearchHit] = []
    by_id: dict[str, Session] = {}
    for row in rows:
        session = session_from_row(row[:width])
        if row[width]:
            if len(hits) < limit:
                top = best.get(session.id)
                hits.append(SearchHit(session, snippet(top.text, _first_term(needle))
                                      if top else "", top.node_id if top else None))
        else:
            by_id[session.id] = session
    for sid in candidates:
        if len(hits) >= limit:
            break
        found_session = by_id.get(sid)
        p = best.get(sid)
        if found_session is None or p is None:
            continue
        hits.append(SearchHit(found_session, snippet(p.text, _first_term(needle)), p.node_id))
    return tuple(hits)


def _first_term(needle: str) -> str:
    words = needle.split()
    return max(words, key=len) if words else needle


def search_sessions(repo: Repository, query: str, limit: int = 500) -> tuple[SearchHit, ...]:
    """Visible sessions whose title or any message (on any branch) contains `query`,
    case-insensitively, newest first."""
    needle = " ".join(query.split()).lower()
    if not needle:
        return ()
    cols = ", ".join(f"s.{c.strip()}" for c in SESSION_COLUMNS.split(","))
    rows = repo.con.execute(
        f"""
        WITH texts AS (
            SELECT id, session_id, seq, {_NODE_TEXT} AS body
            FROM nodes
            WHERE role IN ('user', 'assistant', 'tool') AND output IS NOT NULL
        ),
        hits AS (
            SELECT id, session_id, body,
                   row_number() OVER (PARTITION BY session_id ORDER BY seq DESC) AS rank
            FROM texts
            WHERE contains(lower(body), $needle)
        )
        SELECT {cols}, h.id, h.body
        FROM sessions s
        LEFT JOIN hits h ON h.session_id = s.id AND h.rank = 1
        WHERE NOT s.hidden AND (h.id IS NOT NULL OR contains(lower(s.title), $needle))
        ORDER BY s.updated_at DESC, s.id
        LIMIT $limit
        """,
        {"needle": needle, "limit": limit},
    ).fetchall()
    width = len(SESSION_COLUMNS.split(","))
    return tuple(
        SearchHit(
            session=session_from_row(row[:width]),
            snippet=snippet(row[width + 1] or "", needle),
            node_id=row[width],
        )
        for row in rows
    )


def snippet(text: str, needle: str, width: int = SNIPPET_CHARS) -> str:
    """One line of `text` around the first occurrence of `needle`, with ellipses where cut."""
    flat = " ".join(text.split())
    if not flat:
        return ""
    at = flat.lower().find(needle)
    if at < 0:
        return flat[:width] + ("…" if len(flat) > width else "")
    # a little before the match, so it stays visible even where the snippet is elided
    start = max(0, at - min(width // 3, 24))
    end = min(len(flat), start + width)
    start = max(0, end - width)
    if start > 0:
        # begin at a word, not in the middle of one
        space = flat.find(" ", start, at)
        start = space + 1 if space >= 0 else start
    return ("…" if start > 0 else "") + flat[start:end] + ("…" if end < len(flat) else "")
