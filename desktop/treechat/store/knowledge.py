"""The lexical index of the user's knowledge folders: every indexed file's passages in SQLite
FTS5, in a file beside the store (private, 0600). Derived data: which folders make a knowledge
base is kept in the store's settings; this file is rebuilt from the files themselves when it
is missing, damaged or of another version.

A passage's row id is `fileno * PASSAGES_PER_FILE + k`; the same number keys its embedding
in the knowledge vector index. Each passage keeps the page (PDF) and line it starts at, so a
citation can name them.

Thread-safe: one lock around the connection (indexing and searching run on worker threads).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

KNOWLEDGE_VERSION = "treechat-knowledge-2"
PASSAGES_PER_FILE = 1 << 20


@dataclass(frozen=True, slots=True)
class FileRecord:
    fileno: int
    base: str
    path: str
    mtime: float
    size: int
    passages: int


@dataclass(frozen=True, slots=True)
class KnowledgePassage:
    rowid: int
    base: str
    path: str
    page: int  # 1-based PDF page; 0 for a file without pages
    line: int  # 1-based line the passage starts at (in its page, for a PDF)
    text: str
    score: float


class KnowledgeIndex:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._con = self._open()

    def _open(self) -> sqlite3.Connection:
        target = str(self.path) if self.path is not None else ":memory:"
        try:
            return self._connect(target)
        except sqlite3.DatabaseError:
            if self.path is None:
                raise
            for suffix in ("", "-wal", "-shm"):  # derived data: rebuilt from the files
                Path(str(self.path) + suffix).unlink(missing_ok=True)
            return self._connect(target)

    def _connect(self, target: str) -> sqlite3.Connection:
        if target != ":memory:" and os.name != "nt":
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o600))
            os.chmod(target, 0o600)
        con = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            row = con.execute("SELECT value FROM meta WHERE key='version'").fetchone()
            if row is None or row[0] != KNOWLEDGE_VERSION:
                con.execute("DROP TABLE IF EXISTS passages")
                con.execute("DROP TABLE IF EXISTS files")
                con.execute("DELETE FROM meta")
                con.execute("INSERT INTO meta VALUES ('version', ?)", (KNOWLEDGE_VERSION,))
            con.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS passages USING fts5(body, page UNINDEXED, "
                "line UNINDEXED, tokenize='porter unicode61 remove_diacritics 2')")
            con.execute("CREATE TABLE IF NOT EXISTS files (fileno INTEGER PRIMARY KEY, "
                        "base TEXT NOT NULL, path TEXT NOT NULL, mtime REAL NOT NULL, "
                        "size INTEGER NOT NULL, chunks INTEGER NOT NULL, UNIQUE (base, path))")
        except sqlite3.DatabaseError:
            con.close()
            raise
        return con

    def close(self) -> None:
        with self._lock:
            self._con.close()

    # --- files -------------------------------------------------------------------------

    def files(self, base: str) -> dict[str, FileRecord]:
        with self._lock:
            rows = self._con.execute(
                "SELECT fileno, base, path, mtime, size, chunks FROM files WHERE base = ?",
                (base,)).fetchall()
        return {str(r[2]): FileRecord(int(r[0]), str(r[1]), str(r[2]), float(r[3]), int(r[4]),
                                      int(r[5])) for r in rows}

    def bases(self) -> dict[str, tuple[int, int]]:
        """base -> (files, passages) indexed."""
        with self._lock:
            rows = self._con.execute(
                "SELECT base, count(*), sum(chunks) FROM files GROUP BY base").fetchall()
        return {str(r[0]): (int(r[1]), int(r[2] or 0)) for r in rows}

    def put_file(self, base: str, path: str, mtime: float, size: int,
                 passages: Sequence[tuple[int, int, str]]) -> tuple[list[int], list[int]]:
        """Index (or re-index) one file's passages, each (page, line, text). Returns the row
        ids dropped (the file's old passages) and the new ones, in order."""
        return self.put_files(base, [(path, mtime, size, passages)])[0]

    def put_files(self, base: str, files: Sequence[tuple[str, float, int,
                                                         Sequence[tuple[int, int, str]]]],
                  ) -> list[tuple[list[int], list[int]]]:
        """`put_file` for several files (path, mtime, size, passages) in one transaction (one
        commit to the disk for them all)."""
        out: list[tuple[list[int], list[int]]] = []
        with self._lock:
            con = self._con
            con.execute("BEGIN")
            try:
                for path, mtime, size, passages in files:
                    old = self._drop(base, path)
                    row = con.execute("SELECT coalesce(max(fileno), 0) + 1 FROM files").fetchone()
                    fileno = int(row[0])
                    con.execute("INSERT INTO files VALUES (?, ?, ?, ?, ?, ?)",
                                (fileno, base, path, mtime, size, len(passages)))
                    ids = [fileno * PASSAGES_PER_FILE + k for k in range(len(passages))]
                    con.executemany(
                        "INSERT INTO passages(rowid, body, page, line) VALUES (?,?,?,?)",
                        ((i, t, p, ln) for i, (p, ln, t) in zip(ids, passages, strict=True)))
                    out.append((old, ids))
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        return out

    def drop_file(self, base: str, path: str) -> list[int]:
        with self._lock:
            return self._drop(base, path)

    def drop_base(self, base: str) -> list[int]:
        out: list[int] = []
        for path in self.files(base):
            out.extend(self.drop_file(base, path))
        return out

    def _drop(self, base: str, path: str) -> list[int]:
        row = self._con.execute("SELECT fileno, chunks FROM files WHERE base = ? AND path = ?",
                                (base, path)).fetchone()
        if row is None:
            return []
        fileno, count = int(row[0]), int(row[1])
        low = fileno * PASSAGES_PER_FILE
        self._con.execute("DELETE FROM passages WHERE rowid >= ? AND rowid < ?",
                          (low, low + PASSAGES_PER_FILE))
        self._con.execute("DELETE FROM files WHERE fileno = ?", (fileno,))
        return [low + k for k in range(count)]

    def rowids(self, bases: Iterable[str]) -> list[int]:
        out: list[int] = []
        for base in bases:
            for rec in self.files(base).values():
                low = rec.fileno * PASSAGES_PER_FILE
                out.extend(range(low, low + rec.passages))
        return out

    # --- searching ---------------------------------------------------------------------

    def search(self, fts_query: str, bases: Sequence[str], limit: int) -> list[KnowledgePassage]:
        """Passages of these bases matching an FTS5 query, best BM25 first."""
        marks = ",".join("?" for _ in bases)
        with self._lock:
            rows = self._con.execute(
                f"SELECT p.rowid, bm25(passages) FROM passages p JOIN files f "
                f"ON f.fileno = p.rowid / {PASSAGES_PER_FILE} "
                f"WHERE passages MATCH ? AND f.base IN ({marks}) ORDER BY rank LIMIT ?",
                (fts_query, *bases, limit)).fetchall()
        return self.passages_of([(int(r[0]), float(r[1])) for r in rows])

    def passages_of(self, scored: Sequence[tuple[int, float]]) -> list[KnowledgePassage]:
        out: list[KnowledgePassage] = []
        with self._lock:
            for rowid, score in scored:
                row = self._con.execute(
                    "SELECT p.body, p.page, p.line, f.base, f.path FROM passages p JOIN files f "
                    f"ON f.fileno = p.rowid / {PASSAGES_PER_FILE} WHERE p.rowid = ?",
                    (rowid,)).fetchone()
                if row is not None:
                    out.append(KnowledgePassage(rowid, str(row[3]), str(row[4]), int(row[1]),
                                                int(row[2]), str(row[0]), score))
        return out


def knowledge_path(store_path: Path) -> Path:
    return store_path.with_name(store_path.name + ".knowledge.sqlite")
