"""The words of a question and the FTS5 queries made of them.

`question_query` is the query of the retrieval engine's lexical half, shaped by how many
passages hold each word. BM25 reads every ranked passage's length and its hits: at a million
passages ranking the thousands that hold "name" or "give" costs a tenth of a second and
more, while the question's rare words decide the order anyway. So each word's passages are
counted up to `RARE_PASSAGES` (FTS5 stops walking its list there), and the query is

- the rare words (held by at most `RARE_PASSAGES` passages), any of them, when there are any;
- otherwise the `COMMON_TOGETHER` rarest words together (AND), the newest passages holding
  them all first, unranked: BM25 would count every passage holding each common word first
  (for its inverse document frequency), which is most of its cost;
- words no passage holds left out (None when that is all of them).

An index where no word is that common gets the plain OR of every word; the ranking downstream
(`covering`) still counts every word of the question.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

MAX_QUERY_TERMS = 32
MAX_TERM_CHARS = 64
RARE_PASSAGES = 200
COMMON_TOGETHER = 3

_WORD = re.compile(r"\w+", re.UNICODE)
# Function words carry no meaning of their own; an OR query (recall) leaves them out so they
# do not pull in every message. A plain English list, not tuned to any conversation.
_STOPWORDS_TEXT = """a an and are as at be been but by can could did do does for from had has
have he her his how i if in into is it its me my no not of on or our she so than that the
their them then there these they this to up us was we were what when where which who whom
why will with would you your again also about please tell remind say said"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())


class QueryError(ValueError):
    """A query with nothing to search for (empty, or only punctuation)."""


def terms_of(query: str) -> list[str]:
    """The distinct words of a query, in order, at most `MAX_QUERY_TERMS` of them (a pasted
    page of text is a query too, and must not become a pathological one)."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(query.lower()):
        w = word[:MAX_TERM_CHARS]
        if w not in seen:
            seen[w] = None
            if len(seen) >= MAX_QUERY_TERMS:
                break
    return list(seen)


def quote_term(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def all_terms_query(query: str) -> str:
    """FTS5 query: every word must occur; the last may be the start of a word (typing)."""
    terms = terms_of(query)
    if not terms:
        raise QueryError("nothing to search for")
    parts = [quote_term(t) for t in terms]
    parts[-1] += "*"
    return " AND ".join(parts)


def content_terms(query: str) -> list[str]:
    """The words of a question that carry its meaning (function words left out)."""
    terms = terms_of(query)
    return [t for t in terms if t not in STOPWORDS] or terms


def near_pairs_query(query: str, distance: int = 6) -> str | None:
    """FTS5 query matching passages where two of the question's content words stand within
    `distance` words of each other (proximity: "on call this month" beats a file that says
    "call" a hundred times and "month" once, far away). None for a one-word question."""
    terms = content_terms(query)[:10]
    if len(terms) < 2:
        return None
    pairs = [f"NEAR({quote_term(a)} {quote_term(b)}, {distance})"
             for i, a in enumerate(terms) for b in terms[i + 1:]]
    return " OR ".join(pairs)


def any_terms_query(query: str) -> str:
    """FTS5 query for a question: any of its content words, best BM25 first."""
    content = content_terms(query)
    if not content:
        raise QueryError("nothing to search for")
    return " OR ".join(quote_term(t) for t in content)



def passages_holding(con: sqlite3.Connection, table: str, word: str, most: int) -> int:
    """How many passages of the FTS5 `table` hold `word`, counted up to `most + 1`."""
    row = con.execute(f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? "
                      "LIMIT ?)", (quote_term(word), most + 1)).fetchone()
    return int(row[0]) if row else 0


@dataclass(frozen=True, slots=True)
class QuestionQuery:
    fts: str
    ranked: bool  # by BM25 (rare words), or the newest first (common words only)


def question_query(con: sqlite3.Connection, table: str, query: str) -> QuestionQuery | None:
    """The FTS5 query for a question over `table` (see the module's docstring)."""
    words = content_terms(query)
    held = sorted((c, -len(w), w) for w in words
                  if (c := passages_holding(con, table, w, RARE_PASSAGES)))
    if not held:
        return None
    rare = [w for c, _, w in held if c <= RARE_PASSAGES]
    if rare:
        return QuestionQuery(" OR ".join(quote_term(w) for w in rare), ranked=True)
    return QuestionQuery(" AND ".join(quote_term(w) for _, _, w in held[:COMMON_TOGETHER]),
                         ranked=False)
