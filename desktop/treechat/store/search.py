"""Full-text search over every session's title and every message on every branch, for the
session list's search field. Runs on the store's worker like any other repository call."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.model import Session
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
