"""Knowledge bases: named sets of folders and files whose text is searched like the chats, by
words and by meaning, each passage cited by file, page and line. Which paths make a base is
kept in the store's settings (and which bases a chat uses); the passages are derived data in
the knowledge index and vectors beside the store, brought up to date incrementally: a file
whose size and modification time are unchanged is not read again, a removed file's passages
go, a changed file's are replaced.

Files are read, cut and embedded a few at a time in the indexing child process (`offload`),
the next few while this process writes the last into the indexes; the event loop only hands
work out and reports progress (files done, files/s, time left).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.chunking import UNITS_PER_PASSAGE
from ...core.citations import Passage, citation, written
from ...core.fusion import Ranking, fuse
from ...providers.embeddings import Embedder
from ...store.database import Store
from ...store.fulltext import QueryError, any_terms_query, terms_of
from ...store.knowledge import KnowledgeIndex, KnowledgePassage, knowledge_path
from .engine import CANDIDATES, covering, default_embedder, fine_embedder
from .offload import FileRead, Offload, read_files, shared_offload

if TYPE_CHECKING:
    # numpy comes with the vectors: a turn that only asks which bases a chat uses (every
    # send does) must not load it
    from .semantic import Meaning

BASES_SETTING = "knowledge.bases"
SESSION_SETTING = "knowledge.session."
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv"})
TEXT_SUFFIXES = frozenset({
    ".txt", ".md", ".markdown", ".rst", ".org", ".tex", ".csv", ".tsv", ".json", ".yaml",
    ".yml", ".toml", ".ini", ".cfg", ".conf", ".log", ".xml", ".html", ".htm", ".xhtml", ".pdf",
    ".py", ".js", ".ts", ".tsx", ".jsx", ".c", ".h", ".cc", ".cpp", ".hpp", ".rs", ".go",
    ".java", ".kt", ".swift", ".rb", ".php", ".cs", ".sh", ".bash", ".zsh", ".sql", ".lua",
    ".r", ".m", ".scala", ".hs", ".ex", ".exs", ".erl", ".clj", ".css", ".scss", ".vue",
})
READ_BATCH = 8  # files read and embedded per job of the child process


@dataclass(frozen=True, slots=True)
class IndexProgress:
    done: int
    total: int
    elapsed: float
    path: str

    @property
    def files_per_s(self) -> float:
        return self.done / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def seconds_left(self) -> float:
        rate = self.files_per_s
        return (self.total - self.done) / rate if rate > 0 else 0.0


@dataclass(frozen=True, slots=True)
class IndexReport:
    name: str
    files: int  # files the base holds now
    read: int  # files read this time (new or changed)
    removed: int
    skipped: tuple[str, ...]  # files that could not be read, with why
    seconds: float


@dataclass(frozen=True, slots=True)
class KnowledgeHit:
    base: str
    path: str
    page: int
    line: int
    text: str
    score: float
    shown: str = ""  # the path as the model sees it (`shown_path`)

    @property
    def citation(self) -> str:
        return citation(self.path, self.page, self.line)

    @property
    def passage(self) -> Passage:
        return Passage("knowledge", self.text.strip(), path=self.path, page=self.page,
                       line=self.line, shown=self.shown)


def shown_path(path: str, roots: Sequence[str]) -> str:
    """A knowledge file's path as the model is shown it: from the folder the user added (its
    name, then the path inside it), or the file's name when the file itself was added. The
    full local path would tell the provider the user's name and folders."""
    file = Path(path)
    for root in sorted(roots, key=len, reverse=True):  # the innermost folder added
        folder = Path(root)
        if file == folder:
            return file.name
        with contextlib.suppress(ValueError):
            return (Path(folder.name) / file.relative_to(folder)).as_posix()
    return file.name


def full_path(shown: str, roots: Sequence[str]) -> str | None:
    """The file a shown path names among the folders and files added, if it is still there."""
    for root in roots:
        folder = Path(root)
        if folder.is_file():
            if folder.name == shown:
                return str(folder)
            continue
        candidate = (folder.parent / shown).resolve()
        if candidate.is_file() and folder in candidate.parents:
            return str(candidate)
    return None


def cited(hits: Sequence[KnowledgeHit], query: str) -> str:
    """What `search_knowledge` gives the model: each passage under its citation."""
    if not hits:
        return f"No passage of the chat's knowledge matches {query[:200]!r}."
    return (f"{len(hits)} passage(s) from the chat's knowledge; cite each one you use:\n\n"
            + written([h.passage for h in hits]))


class KnowledgeError(ValueError):
    """A bad name or path (one line, for the user)."""


def walk(paths: Sequence[str]) -> Iterator[Path]:
    """The files of these paths: a file as it is, a folder's text files under it (hidden
    folders and tool folders left out), sorted."""
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            yield path
            continue
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
            for name in sorted(files):
                if Path(name).suffix.lower() in TEXT_SUFFIXES and not name.startswith("."):
                    yield Path(root) / name


class KnowledgeService:
    """`offload` None: the process's indexing child (files are read there when the embedder
    is the offline default); False: read on worker threads of this process."""

    def __init__(self, store: Store, embedder: Embedder | None = None, *,
                 offload: Offload | bool | None = None) -> None:
        self.store = store
        if embedder is None:
            from .engine import engine_for

            embedder = engine_for(store).embedder  # the search model the settings name
        self.embedder: Embedder = embedder
        offline = self.embedder is default_embedder()
        self.offload: Offload | None = (
            shared_offload() if offload is None and offline
            else offload if isinstance(offload, Offload) else None)
        self._index: KnowledgeIndex | None = None
        self._vectors: Meaning | None = None

    def _open(self) -> tuple[KnowledgeIndex, Meaning]:
        if self._index is None or self._vectors is None:
            from .semantic import Meaning

            base = knowledge_path(Path(self.store.path))
            self._index = KnowledgeIndex(base)
            # A base is always scored whole: no graph to search (`VectorIndex`'s `graph`).
            # a chosen search model works alone (`search_model`), the offline one refined
            fine = fine_embedder() if self.embedder is default_embedder() else None
            self._vectors = Meaning(base.with_name(base.name + ".usearch"), self.embedder,
                                    fine, offload=self.offload, graph=False)
            if len(self._vectors.quick) == 0 and self._index.bases():
                # vectors lost or of another model: every file is read again
                for name in list(self._index.bases()):
                    self._index.drop_base(name)
        return self._index, self._vectors

    async def _both(self) -> tuple[KnowledgeIndex, Meaning]:
        return await asyncio.to_thread(self._open)

    # --- bases -------------------------------------------------------------------------

    async def bases(self) -> dict[str, list[str]]:
        found = await self.store.run(lambda r: r.get_setting(BASES_SETTING, {}))
        return {str(k): [str(p) for p in v] for k, v in dict(found or {}).items()}

    async def locate(self, shown: str) -> str | None:
        """The file a passage shown to the model names (`shown_path`), among every base's."""
        roots = [r for paths in (await self.bases()).values() for r in paths]
        return await asyncio.to_thread(full_path, shown, roots)

    async def add(self, name: str, paths: Sequence[str]) -> list[str]:
        """Add paths to the base `name` (made if new). Returns the base's paths."""
        name = name.strip()
        if not name:
            raise KnowledgeError("a knowledge base needs a name")
        resolved: list[str] = []
        for p in paths:
            path = Path(p).expanduser()
            if not path.exists():
                raise KnowledgeError(f"no such file or folder: {p}")
            resolved.append(str(path.resolve()))
        bases = await self.bases()
        bases[name] = sorted(set(bases.get(name, [])) | set(resolved))
        await self.store.run(lambda r: r.set_setting(BASES_SETTING, bases))
        return bases[name]

    async def remove(self, name: str) -> None:
        bases = await self.bases()
        if name not in bases:
            raise KnowledgeError(f"no knowledge base named {name!r}")
        del bases[name]
        await self.store.run(lambda r: r.set_setting(BASES_SETTING, bases))
        index, vectors = await self._both()
        dropped = await asyncio.to_thread(index.drop_base, name)
        await asyncio.to_thread(vectors.remove, dropped)
        await asyncio.to_thread(vectors.save)

    async def stats(self) -> dict[str, tuple[int, int]]:
        index, _ = await self._both()
        return await asyncio.to_thread(index.bases)

    async def for_session(self, session_id: str) -> list[str]:
        found = await self.store.run(lambda r: r.get_setting(SESSION_SETTING + session_id, []))
        return [str(x) for x in found or []]

    async def sessions_using(self, name: str) -> list[str]:
        """The chats whose own knowledge includes the base `name`."""
        rows = await self.store.run(lambda r: r.con.execute(
            "SELECT key, value FROM settings WHERE starts_with(key, ?)",
            [SESSION_SETTING]).fetchall())
        out = []
        for key, value in rows:
            names = json.loads(value) if isinstance(value, str) else value
            if isinstance(names, list) and name in names:
                out.append(str(key)[len(SESSION_SETTING):])
        return out

    async def use_in_session(self, session_id: str, names: Sequence[str]) -> None:
        known = await self.bases()
        for n in names:
            if n not in known:
                raise KnowledgeError(f"no knowledge base named {n!r}")
        await self.store.run(lambda r: r.set_setting(SESSION_SETTING + session_id, list(names)))

    # --- indexing ----------------------------------------------------------------------

    async def reindex(self, name: str,
                      progress: Callable[[IndexProgress], None] | None = None) -> IndexReport:
        """Bring the base's passages up to date with its files."""
        bases = await self.bases()
        if name not in bases:
            raise KnowledgeError(f"no knowledge base named {name!r}")
        index, vectors = await self._both()
        started = time.monotonic()

        def survey() -> tuple[int, list[tuple[str, float, int]], list[str], list[str]]:
            """(files found, those new or changed with their mtime and size, files that
            could not be read, files gone)."""
            files = list(walk(bases[name]))
            known = index.files(name)
            changed: list[tuple[str, float, int]] = []
            failed: list[str] = []
            for path in files:
                try:
                    st = path.stat()
                except OSError as exc:
                    failed.append(f"{path}: {exc}")
                    continue
                rec = known.get(str(path))
                if rec is None or rec.mtime != st.st_mtime or rec.size != st.st_size:
                    changed.append((str(path), st.st_mtime, st.st_size))
            seen = {str(p) for p in files}
            return len(files), changed, failed, [p for p in known if p not in seen]

        total, changed, skipped, gone = await asyncio.to_thread(survey)
        done = total - len(changed)
        if progress is not None and done:
            # the unchanged files (and any that could not be looked at) are done already
            progress(IndexProgress(done, total, time.monotonic() - started, ""))
        batches = [changed[i:i + READ_BATCH] for i in range(0, len(changed), READ_BATCH)]
        unread: list[str] = []
        pending = (asyncio.ensure_future(self._read([p for p, _, _ in batches[0]]))
                   if batches else None)
        try:
            for n, batch in enumerate(batches):
                assert pending is not None
                reads = await pending
                # the child reads the next files while this process writes these
                pending = (asyncio.ensure_future(self._read([p for p, _, _ in batches[n + 1]]))
                           if n + 1 < len(batches) else None)
                unread += await asyncio.to_thread(self._write, index, vectors, name, batch,
                                                  reads)
                done += len(batch)
                if progress is not None:  # once a batch: a window redraws it at most that often
                    progress(IndexProgress(done, total, time.monotonic() - started,
                                           batch[-1][0]))
        finally:
            if pending is not None:  # cancelled or failed: the files read ahead are not kept
                pending.cancel()
        for p in gone:
            dropped = await asyncio.to_thread(index.drop_file, name, p)
            await asyncio.to_thread(vectors.remove, dropped)
        await asyncio.to_thread(vectors.save)
        skipped += unread
        return IndexReport(name, total - len(skipped), len(changed) - len(unread), len(gone),
                           tuple(skipped), time.monotonic() - started)

    async def _read(self, paths: list[str]) -> list[FileRead]:
        offload = self.offload
        if offload is not None:
            return await asyncio.to_thread(offload.run, read_files, paths)
        return await asyncio.to_thread(read_files, paths, self.embedder)

    @staticmethod
    def _write(index: KnowledgeIndex, vectors: Meaning, name: str,
               batch: Sequence[tuple[str, float, int]], reads: Sequence[FileRead]) -> list[str]:
        """Put these files' passages and vectors in the indexes; returns why any could not be
        read ("path: reason")."""
        ok = [(meta, r) for meta, r in zip(batch, reads, strict=True) if not r.error]
        placed = index.put_files(name, [(p, mtime, size, r.passages)
                                        for (p, mtime, size), r in ok])
        keys: list[int] = []
        for (old, ids), (_, r) in zip(placed, ok, strict=True):
            vectors.remove(old)
            keys += [ids[k // UNITS_PER_PASSAGE] * UNITS_PER_PASSAGE + k % UNITS_PER_PASSAGE
                     for k in r.keys]
        if keys:
            import numpy as np

            vectors.quick.add(keys, np.concatenate([r.vectors for _, r in ok if r.keys]))
        return [f"{r.path}: {r.error}" for r in reads if r.error]

    async def refine(self, names: Sequence[str], *, pause: float = 1.0,
                     progress: Callable[[int, int], None] | None = None) -> int:
        """Embed these bases' passages with the fine model, in the background after
        `reindex` (see `semantic.Meaning`). Returns how many passages it embedded."""
        from .semantic import refine_backlog

        index, vectors = await self._both()
        rowids = await asyncio.to_thread(index.rowids, names)
        return await refine_backlog(vectors, rowids, _texts_of(index), pause=pause,
                                    progress=progress)

    # --- searching ---------------------------------------------------------------------

    async def search(self, names: Sequence[str], query: str, *,
                     limit: int = 5) -> list[KnowledgeHit]:
        """The best passages of these bases for `query`, by words and meaning fused."""
        if not terms_of(query):
            raise QueryError("nothing to search for")
        bases = await self.bases()
        for n in names:
            if n not in bases:
                raise KnowledgeError(f"no knowledge base named {n!r}")
        index, vectors = await self._both()
        q = await asyncio.to_thread(vectors.query, query)
        try:
            fts: str | None = any_terms_query(query)
        except QueryError:
            fts = None

        def find() -> tuple[list[KnowledgePassage], list[tuple[int, float]]]:
            words = index.search(fts, list(names), CANDIDATES) if fts else []
            ranked = vectors.rank_within(q, index.rowids(names), _texts_of(index))
            return words, ranked[:CANDIDATES]

        words, semantic = await asyncio.to_thread(find)
        by_row = {p.rowid: p for p in words}
        lexical, share = covering(query, words)
        fused = fuse([Ranking(lexical, 1.0, share), Ranking([k for k, _ in semantic])])
        top = fused[:limit]
        missing = [(k, s) for k, s in top if k not in by_row]
        for p in await asyncio.to_thread(index.passages_of, missing):
            by_row[p.rowid] = p
        out = []
        for k, s in top:
            hit = by_row.get(k)
            if hit is not None:
                out.append(KnowledgeHit(hit.base, hit.path, hit.page, hit.line, hit.text, s,
                                        shown_path(hit.path, bases.get(hit.base, ()))))
        return out


def _texts_of(index: KnowledgeIndex) -> Callable[[Sequence[int]], list[tuple[int, str]]]:
    return lambda rowids: [(p.rowid, p.text) for p in index.passages_of([(r, 0.0) for r in rowids])]
