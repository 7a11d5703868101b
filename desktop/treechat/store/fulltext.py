"""The full-text index of every message: SQLite FTS5 (Python's own `sqlite3`) in a file beside
the DuckDB store. It is derived data: rebuilt from the store when missing, damaged, of another
version or behind a different store, and brought up to date with the nodes appended since it
last looked (node `seq` is strictly increasing across the store, so a high-water mark is all
the bookkeeping it needs).

Why FTS5 and not DuckDB's own: DuckDB's `fts` extension builds a static index that has to be
rebuilt whole after every insert, and is fetched from the network on first use; FTS5 ships
with Python, updates incrementally and ranks with BM25.

A message is indexed in passages of at most `PASSAGE_CHARS` characters (paragraphs, code
blocks, a tool result's sections: `core.chunking`), so a match inside a 30,000-character tool
result comes back as the passage that holds it. The
row id encodes the passage: `seq * PASSAGES_PER_NODE + k`.

Attachments have a table of their own (`files`), filled when `recall` first needs a file's
text (a text file's, a PDF's page text, an image's description): keyed by the bytes' hash, so
an entry never goes stale, and session search never sees it.

All calls run on the store's worker thread (the index is opened there and used only there).
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
import time
import uuid
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.chunking import TARGET_CHARS, chunks
from .database import Store
from .question_query import (
    MAX_QUERY_TERMS,
    STOPWORDS,
    QueryError,
    all_terms_query,
    any_terms_query,
    content_terms,
    near_pairs_query,
    question_query,
    terms_of,
)
from .question_query import quote_term as _quote
from .repository import Repository

__all__ = [  # the words of a question live in question_query; callers import them here too
    "MAX_QUERY_TERMS", "STOPWORDS", "FilePassage", "FullTextIndex", "Passage", "QueryError",
    "all_terms_query", "any_terms_query", "content_terms", "index_for", "index_path",
    "near_pairs_query", "passages", "question_query", "terms_of",
]

INDEX_VERSION = "treechat-fts-4"
PASSAGE_CHARS = 1000
PASSAGES_PER_NODE = 1024
_SYNC_BATCH = 20_000
STORE_ID_SETTING = "fulltext.store_id"
TOKENIZE = "porter unicode61 remove_diacritics 2"
# How often a search checks for purged nodes (a purge is rare and explicit).
RECONCILE_SECONDS = 5.0

# A node's display text in SQL, matching `Node.text`: a JSON string is unwrapped, a dict
# with "text" gives that, anything else is searched as its JSON.
NODE_TEXT_SQL = (
    "CASE json_type(output) WHEN 'VARCHAR' THEN output->>'$' "
    "ELSE coalesce(output->>'$.text', CAST(output AS VARCHAR)) END"
)
INDEXED_ROLES = ("user", "assistant", "tool")



@dataclass(frozen=True, slots=True)
class Passage:
    """One indexed passage that matched: the node, its session, where in the node's text it
    starts, the original text of the passage, and BM25's score (lower is better)."""

    node_id: str
    session_id: str
    role: str
    seq: int
    offset: int
    text: str
    score: float
    rowid: int = 0  # the passage's number: seq * PASSAGES_PER_NODE + its place in the node


def passages(text: str, size: int = PASSAGE_CHARS) -> Iterator[tuple[int, str]]:
    """(offset, passage) pieces of `text`, each at most `size` characters: paragraphs, code
    blocks and tool-result sections (`core.chunking`), the same cut the semantic index uses."""
    return chunks(text, target=min(TARGET_CHARS, size), size=size)


class FullTextIndex:
    """One store's index. `path` None keeps it in memory (rebuilt on every open)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._con: sqlite3.Connection | None = None
        self._mark = 0
        self._mark_id = ""
        self._checked: Repository | None = None
        self._reconciled = -RECONCILE_SECONDS

    # --- opening and rebuilding ----------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        if self._con is not None:
            return self._con
        target = str(self.path) if self.path is not None else ":memory:"
        try:
            con = self._connect(target)
        except sqlite3.DatabaseError:
            # Derived data: a damaged index file is replaced, the store is never touched.
            if self.path is None:
                raise
            self._discard()
            con = self._connect(target)
        self._con = con
        return con

    def _connect(self, target: str) -> sqlite3.Connection:
        if target != ":memory:" and os.name != "nt":
            # The index holds the chats' text: this user's only, like the store. SQLite
            # gives its -wal and -shm files the main file's mode.
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o600))
            os.chmod(target, 0o600)
        con = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            row = con.execute("SELECT value FROM meta WHERE key='version'").fetchone()
            if row is None or row[0] != INDEX_VERSION:
                con.execute("DROP TABLE IF EXISTS passages")
                con.execute("DROP TABLE IF EXISTS docs")
                con.execute("DROP TABLE IF EXISTS files")
                con.execute("DROP TABLE IF EXISTS file_docs")
                con.execute("DELETE FROM meta")
                con.execute("INSERT INTO meta VALUES ('version', ?)", (INDEX_VERSION,))
            # Which build of the index this is: what is derived from its row ids (the
            # passages' embeddings) is valid only for the build that numbered them.
            con.execute("INSERT OR IGNORE INTO meta VALUES ('generation', ?)",
                        (uuid.uuid4().hex,))
            con.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS passages USING fts5(body, start UNINDEXED, "
                f"tokenize={TOKENIZE!r})"
            )
            # Which node and session a passage belongs to, by seq: reading these from a
            # plain table keeps a ranking pass from touching the passages' text at all.
            con.execute("CREATE TABLE IF NOT EXISTS docs (seq INTEGER PRIMARY KEY, "
                        "node_id TEXT NOT NULL, session_id TEXT NOT NULL, role TEXT NOT NULL)")
            # Attachments' text by hash; row ids `fileno * PASSAGES_PER_NODE + k` as above.
            con.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS files USING fts5(body, start UNINDEXED, "
                "tokenize='porter unicode61 remove_diacritics 2')"
            )
            con.execute("CREATE TABLE IF NOT EXISTS file_docs (fileno INTEGER PRIMARY KEY, "
                        "sha256 TEXT NOT NULL UNIQUE, chars INTEGER NOT NULL)")
            mark = con.execute("SELECT value FROM meta WHERE key='mark'").fetchone()
            mark_id = con.execute("SELECT value FROM meta WHERE key='mark_id'").fetchone()
            self._mark = int(mark[0]) if mark else 0
            self._mark_id = str(mark_id[0]) if mark_id else ""
        except sqlite3.DatabaseError:
            con.close()
            raise
        return con

    def _discard(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None
        if self.path is not None:
            for suffix in ("", "-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
        self._mark, self._mark_id = 0, ""

    def rebuild(self, repo: Repository) -> int:
        """Drop everything and index the whole store again. Returns the nodes read."""
        self._discard()
        self._open()
        self._belongs(repo)  # records the store it is built from
        return self._catch_up(repo, None)

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

    # --- keeping current ---------------------------------------------------------------

    def _belongs(self, repo: Repository) -> bool:
        """Whether the index was built from this store: the store's identity matches (kept in
        its settings) and the node at the high-water mark is still there under the same id
        (a replaced or rewound store fails this)."""
        con = self._open()
        store_id = repo.get_setting(STORE_ID_SETTING)
        if not isinstance(store_id, str) or not store_id:
            store_id = uuid.uuid4().hex
            repo.set_setting(STORE_ID_SETTING, store_id)
        row = con.execute("SELECT value FROM meta WHERE key='store'").fetchone()
        if row is None:
            if self._mark != 0:
                return False
            con.execute("INSERT OR REPLACE INTO meta VALUES ('store', ?)", (store_id,))
            return True
        if row[0] != store_id:
            return False
        if self._mark == 0:
            return True
        if repo.last_seq < self._mark:
            return False
        row = repo.con.execute("SELECT id FROM nodes WHERE seq = ?", [self._mark]).fetchone()
        return row is not None and str(row[0]) == self._mark_id

    def sync(self, repo: Repository, batch: int | None = None) -> int:
        """Index the nodes appended since the last call (at most `batch` of them; all when
        None). Returns how many nodes were read. Cheap when nothing is new."""
        self._open()
        read = 0
        self._reconcile(repo)
        if self._checked is not repo:
            # Checked once per open store: a store's identity does not change under it.
            if not self._belongs(repo):
                read = self.rebuild(repo)
            self._checked = repo
        elif repo.last_seq < self._mark:
            read = self.rebuild(repo)  # the store was rewound under us (a restored backup)
        return read + self._catch_up(repo, batch)

    def _reconcile(self, repo: Repository) -> None:
        """Nodes are deleted only by an explicit purge; when the store holds fewer nodes up to
        the mark than the index has read, drop the passages of the ones that are gone (one
        count per search; the set difference only after a purge)."""
        if self._mark == 0:
            return
        now_t = time.monotonic()
        if now_t - self._reconciled < RECONCILE_SECONDS:
            return
        self._reconciled = now_t
        con = self._open()
        row = con.execute("SELECT value FROM meta WHERE key='count'").fetchone()
        seen = int(row[0]) if row else None
        found = repo.con.execute("SELECT count(*) FROM nodes WHERE seq <= ?",
                                 [self._mark]).fetchone()
        now = int(found[0]) if found else 0
        if seen is not None and now < seen:
            alive = {str(r[0]) for r in repo.con.execute(
                "SELECT id FROM nodes WHERE seq <= ?", [self._mark]).fetchall()}
            indexed = {str(r[0]) for r in con.execute("SELECT node_id FROM docs")}
            self.forget(indexed - alive)
        if seen != now:
            con.execute("INSERT OR REPLACE INTO meta VALUES ('count', ?)", (str(now),))

    def _catch_up(self, repo: Repository, batch: int | None) -> int:
        con = self._open()
        read = 0
        while repo.last_seq > self._mark:
            rows = repo.con.execute(
                f"SELECT seq, id, session_id, role, {NODE_TEXT_SQL} FROM nodes "
                "WHERE seq > ? ORDER BY seq LIMIT ?",
                [self._mark, batch or _SYNC_BATCH],
            ).fetchall()
            if not rows:
                break
            con.execute("BEGIN")
            try:
                docs: list[tuple[int, str, str, str]] = []
                con.executemany(
                    "INSERT OR REPLACE INTO passages(rowid, body, start) VALUES (?, ?, ?)",
                    _rows(rows, docs),
                )
                con.executemany("INSERT OR REPLACE INTO docs VALUES (?, ?, ?, ?)", docs)
                row = con.execute("SELECT value FROM meta WHERE key='count'").fetchone()
                count = (int(row[0]) if row else 0) + len(rows)
                con.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                                [("mark", str(rows[-1][0])), ("mark_id", str(rows[-1][1])),
                                 ("count", str(count))])
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
            self._mark, self._mark_id = int(rows[-1][0]), str(rows[-1][1])
            read += len(rows)
            if batch is not None:
                break
        return read

    def forget(self, node_ids: Iterable[str]) -> None:
        """Drop the passages of nodes that are no longer in the store."""
        ids = list(node_ids)
        if not ids:
            return
        con = self._open()
        seqs = [int(r[0]) for i in ids
                for r in con.execute("SELECT seq FROM docs WHERE node_id = ?", (i,))]
        con.executemany(
            "DELETE FROM passages WHERE rowid >= ? AND rowid < ?",
            ((q * PASSAGES_PER_NODE, (q + 1) * PASSAGES_PER_NODE) for q in seqs))
        con.executemany("DELETE FROM docs WHERE seq = ?", ((q,) for q in seqs))

    @property
    def mark(self) -> int:
        """The newest node seq the index has seen."""
        return self._mark

    # --- searching ---------------------------------------------------------------------

    def search(self, fts_query: str, *, limit: int = 50, seqs: Iterable[int] | None = None,
               ranked: bool = True) -> list[Passage]:
        """Passages matching an FTS5 query (see `all_terms_query`, `any_terms_query`), best
        first. `seqs` restricts the search to those nodes. `ranked` False: the newest first,
        unscored (BM25 counts every passage holding each word of the query before it ranks
        one, which for a common word is most of the cost)."""
        con = self._open()
        params: list[object] = [fts_query]
        where = "passages MATCH ?"
        if seqs is not None:
            wanted = sorted(set(seqs))
            if not wanted:
                return []
            # Row ids of a node's passages form one range: seq * PASSAGES_PER_NODE + k.
            con.execute("CREATE TEMP TABLE IF NOT EXISTS wanted (seq INTEGER PRIMARY KEY)")
            con.execute("DELETE FROM wanted")
            con.executemany("INSERT INTO wanted VALUES (?)", ((s,) for s in wanted))
            where += f" AND (rowid / {PASSAGES_PER_NODE}) IN (SELECT seq FROM wanted)"
        params.append(limit)
        score, order = ("bm25(passages)", "rank") if ranked else ("0.0", "rowid DESC")
        rows = con.execute(
            f"SELECT rowid, {score} FROM passages WHERE {where} ORDER BY {order} LIMIT ?",
            params,
        ).fetchall()
        return self.passages_of([(int(r[0]), float(r[1])) for r in rows])

    def search_words(self, query: str, *, seqs: Iterable[int], limit: int = 50,
                     per_word: int = 5000) -> list[Passage]:
        """Passages of the nodes `seqs` ranked by which of the question's content words they
        hold, each word weighted by its rarity among those passages (a coordination match
        weighted by inverse document frequency), BM25 breaking ties. BM25 alone lets a
        passage that repeats one common word ("kind" a dozen times in code) outrank the one
        holding the question's rare word ("dog") once; this does not."""
        con = self._open()
        wanted = sorted(set(seqs))
        terms = content_terms(query)
        if not wanted or not terms:
            return []
        con.execute("CREATE TEMP TABLE IF NOT EXISTS wanted (seq INTEGER PRIMARY KEY)")
        con.execute("DELETE FROM wanted")
        con.executemany("INSERT INTO wanted VALUES (?)", ((q,) for q in wanted))
        where = f"(rowid / {PASSAGES_PER_NODE}) IN (SELECT seq FROM wanted)"
        row = con.execute(f"SELECT count(*) FROM passages WHERE {where}").fetchone()
        total = max(1, int(row[0]) if row else 1)
        weight: dict[int, float] = {}
        tie: dict[int, float] = {}
        for term in terms:
            rows = con.execute(
                f"SELECT rowid, bm25(passages) FROM passages WHERE passages MATCH ? AND {where} "
                "LIMIT ?", (_quote(term), per_word)).fetchall()
            if not rows:
                continue
            idf = math.log((total + 1) / len(rows))
            for rowid, score in rows:
                r = int(rowid)
                weight[r] = weight.get(r, 0.0) + idf
                tie[r] = tie.get(r, 0.0) + float(score)
        ranked = sorted(weight, key=lambda r: (-weight[r], tie[r], -r))[:limit]
        return self.passages_of([(r, tie[r]) for r in ranked])

    def search_question(self, query: str, *, limit: int,
                        seqs: Iterable[int] | None = None) -> list[Passage]:
        """Passages for a question by its words, best first, at a cost that does not grow
        with the index: the query is shaped by how many passages hold each word
        (`question_query`), ranked by BM25 when its words are rare, the newest first when
        all are common."""
        found = question_query(self._open(), "passages", query)
        if found is None:
            return []
        return self.search(found.fts, limit=limit, seqs=seqs, ranked=found.ranked)

    def newest(self, fts_query: str, *, scan: int) -> list[tuple[int, float]]:
        """(row id, BM25 score) of the `scan` newest passages matching, best first: FTS5
        walks its doclist newest first and stops there, so a word found in every other
        message costs no more than a rare one. No text is read."""
        rows = self._open().execute(
            "SELECT rowid, bm25(passages) FROM passages WHERE passages MATCH ? "
            "ORDER BY rowid DESC LIMIT ?",
            (fts_query, scan),
        ).fetchall()
        return sorted(((int(r[0]), float(r[1])) for r in rows), key=lambda x: (x[1], -x[0]))

    def owners(self, seqs: Iterable[int]) -> dict[int, tuple[str, str, str]]:
        """seq -> (node id, session id, role) for indexed nodes."""
        wanted = json.dumps(sorted(set(seqs)))
        rows = self._open().execute(
            "SELECT seq, node_id, session_id, role FROM docs "
            "WHERE seq IN (SELECT value FROM json_each(?))", (wanted,)).fetchall()
        return {int(r[0]): (str(r[1]), str(r[2]), str(r[3])) for r in rows}

    def passages_of(self, scored: Sequence[tuple[int, float]],
                    owners: Mapping[int, tuple[str, str, str]] | None = None) -> list[Passage]:
        """The passages behind (row id, score) pairs, in the order given (`owners`: what
        `owners()` already said about their nodes)."""
        con = self._open()
        if owners is None:
            owners = self.owners(r // PASSAGES_PER_NODE for r, _ in scored)
        texts = {int(r[0]): (r[1], r[2]) for r in con.execute(
            "SELECT rowid, body, start FROM passages "
            "WHERE rowid IN (SELECT value FROM json_each(?))",
            (json.dumps([r for r, _ in scored]),)).fetchall()}
        out: list[Passage] = []
        for rowid, score in scored:
            owner = owners.get(rowid // PASSAGES_PER_NODE)
            row = texts.get(rowid)
            if owner is None or row is None:
                continue
            out.append(Passage(node_id=owner[0], session_id=owner[1], role=owner[2],
                               seq=rowid // PASSAGES_PER_NODE, offset=int(row[1] or 0),
                               text=str(row[0]), score=score, rowid=rowid))
        return out

    @property
    def generation(self) -> str:
        """An id of this build of the index, new whenever it is built from scratch."""
        row = self._open().execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        return str(row[0]) if row else ""

    def passages_after(self, rowid: int, limit: int) -> list[tuple[int, str]]:
        """(row id, text) of the next `limit` passages after `rowid`, in row order."""
        rows = self._open().execute(
            "SELECT rowid, body FROM passages WHERE rowid > ? ORDER BY rowid LIMIT ?",
            (rowid, limit)).fetchall()
        return [(int(r[0]), str(r[1])) for r in rows]

    def count_between(self, low: int, high: int) -> int:
        """How many passages have a row id in (low, high]."""
        row = self._open().execute("SELECT count(*) FROM passages WHERE rowid > ? AND rowid <= ?",
                                   (low, high)).fetchone()
        return int(row[0]) if row else 0

    def rowids_of(self, seqs: Iterable[int]) -> list[int]:
        """Row ids of every passage of these nodes."""
        con = self._open()
        out: list[int] = []
        for q in sorted(set(seqs)):
            out.extend(int(r[0]) for r in con.execute(
                "SELECT rowid FROM passages WHERE rowid >= ? AND rowid < ?",
                (q * PASSAGES_PER_NODE, (q + 1) * PASSAGES_PER_NODE)))
        return out

    def seqs_of_session(self, session_id: str) -> list[int]:
        """The indexed nodes written in a session."""
        return [int(r[0]) for r in self._open().execute(
            "SELECT seq FROM docs WHERE session_id = ?", (session_id,))]

    def count(self) -> int:
        row = self._open().execute("SELECT count(*) FROM passages").fetchone()
        return int(row[0]) if row else 0

    # --- attachments -------------------------------------------------------------------

    def files_indexed(self, shas: Iterable[str]) -> set[str]:
        """Which of these attachments' texts the index holds."""
        wanted = json.dumps(sorted(set(shas)))
        rows = self._open().execute(
            "SELECT sha256 FROM file_docs WHERE sha256 IN (SELECT value FROM json_each(?))",
            (wanted,)).fetchall()
        return {str(r[0]) for r in rows}

    def add_files(self, texts: Mapping[str, str]) -> None:
        """Index attachments' texts by hash (one already there is left as it is: the same
        bytes give the same text)."""
        con = self._open()
        fresh = {k: v for k, v in texts.items() if k not in self.files_indexed(texts)}
        if not fresh:
            return
        con.execute("BEGIN")
        try:
            row = con.execute("SELECT coalesce(max(fileno), 0) FROM file_docs").fetchone()
            fileno = int(row[0]) if row else 0
            for sha, text in sorted(fresh.items()):
                fileno += 1
                con.execute("INSERT INTO file_docs VALUES (?, ?, ?)", (fileno, sha, len(text)))
                con.executemany(
                    "INSERT INTO files(rowid, body, start) VALUES (?, ?, ?)",
                    ((fileno * PASSAGES_PER_NODE + k, piece, start)
                     for k, (start, piece) in enumerate(passages(text))
                     if k < PASSAGES_PER_NODE))
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def search_files(self, fts_query: str, *, shas: Iterable[str],
                     limit: int = 50) -> list[FilePassage]:
        """Passages of these attachments' texts matching an FTS5 query, best first."""
        con = self._open()
        wanted = json.dumps(sorted(set(shas)))
        rows = con.execute(
            "SELECT f.rowid, bm25(files), f.body, f.start, d.sha256, d.chars "
            "FROM files f JOIN file_docs d ON d.fileno = f.rowid / ? "
            "WHERE files MATCH ? AND d.sha256 IN (SELECT value FROM json_each(?)) "
            "ORDER BY rank LIMIT ?",
            (PASSAGES_PER_NODE, fts_query, wanted, limit)).fetchall()
        return [FilePassage(sha256=str(r[4]), offset=int(r[3] or 0), text=str(r[2]),
                            length=int(r[5]), score=float(r[1])) for r in rows]


@dataclass(frozen=True, slots=True)
class FilePassage:
    """One matching passage of an attachment's text: where it starts, the text, the whole
    text's length, BM25's score (lower is better)."""

    sha256: str
    offset: int
    text: str
    length: int
    score: float


def _rows(rows: Sequence[Sequence[Any]],
          docs: list[tuple[int, str, str, str]]) -> Iterator[tuple[int, str, int]]:
    """(row id, passage, start) for FTS5, noting each indexed node in `docs`."""
    for seq, node_id, session_id, role, body in rows:
        if role not in INDEXED_ROLES or body is None:
            continue
        text = str(body)
        if not text.strip():
            continue
        q = int(seq)
        docs.append((q, str(node_id), str(session_id), str(role)))
        for k, (start, piece) in enumerate(passages(text)):
            if k >= PASSAGES_PER_NODE:
                break
            yield (q * PASSAGES_PER_NODE + k, piece, start)


# --- one index per store --------------------------------------------------------------------

_INDEXES: weakref.WeakKeyDictionary[Store, FullTextIndex] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def index_path(store_path: Path) -> Path:
    """Where a store's index lives: beside it, named after it."""
    return store_path.with_name(store_path.name + ".search.sqlite")


def index_for(store: Store) -> FullTextIndex:
    """The store's index (opened on first use, on the store's worker)."""
    with _LOCK:
        found = _INDEXES.get(store)
        if found is None:
            found = FullTextIndex(index_path(Path(store.path)))
            _INDEXES[store] = found
        return found
