"""The retrieval engine over the conversations: every passage of every message on every branch,
found by its words (the full-text index, BM25) and by its meaning (embeddings in the vector
indexes), the rankings fused (reciprocal rank fusion) with recency and the current branch as
further signals.

Meaning comes in two stages (`semantic.Meaning`): the quick embedder (WordLlama) embeds every
passage as it is indexed, the fine one (the MiniLM sentence encoder) in the background
(`refine`), and ranks what it has reached. Both indexes are derived data beside the store,
keyed by the same passage numbers. Keeping them current is incremental: the full-text index
reads the nodes appended since its mark on the store's worker; the passages a stage has not
embedded yet are read there too, embedded in the indexing child process (`offload`; a model
never runs on the event loop or the store's worker) and added to that stage's vector index,
which is saved every few thousand passages and when a catch-up ends.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.fusion import Ranking, boost_list, fuse
from ...providers.embeddings import Embedder, WordLlamaEmbedder
from ...store.database import Store
from ...store.fulltext import (
    PASSAGES_PER_NODE,
    FullTextIndex,
    Passage,
    QueryError,
    content_terms,
    index_for,
    terms_of,
)
from ...store.repository import Repository

if TYPE_CHECKING:  # numpy, usearch and onnxruntime load with the vector index, off start-up
    from ...providers.embeddings_minilm import MiniLMEmbedder
    from ...store.knowledge import KnowledgePassage
    from ...store.vectors import VectorIndex
    from .semantic import Meaning

EMBED_SLICE = 512  # passages embedded per step
REFINE_SLICE = 64  # passages the fine model embeds per step in the background
SAVE_EVERY = 8192  # passages embedded between saves of the vector file
CANDIDATES = 100  # how deep each ranking is read before fusing
SEMANTIC_WEIGHT = 1.0
LEXICAL_WEIGHT = 1.0
# Recency ranks every candidate, so its weight spreads over their whole list: at 0.1 the
# newest and the hundredth differ by what the semantic list's first and fifth do (k = 60), a
# tie-breaker among near equals; at 0.25 the age of a passage outweighed a question's best
# match by meaning against its fifth.
RECENCY_WEIGHT = 0.1
BRANCH_WEIGHT = 0.5
# A passage found by meaning alone must be closer to the question than to its opposite; for
# recall (every passage of the hidden nodes scored) it must also stand this many deviations
# above their mean: recall of something that was never said says so, rather than returning
# the least unrelated passage.
MIN_SIMILARITY = 0.0
MIN_DEVIATIONS = 2.5
_MARK = "passages"
_GENERATION = "generation"

Progress = Callable[[int, int], None]  # (passages embedded so far, passages known to remain)


@dataclass(frozen=True, slots=True)
class RetrievalHit:
    """One passage found: its node and session, where it starts in the node's text, the
    text, the fused score (higher is better) and its rank in each list (0: not in it)."""

    node_id: str
    session_id: str
    role: str
    seq: int
    offset: int
    text: str
    score: float
    lexical_rank: int = 0
    semantic_rank: int = 0


def vectors_path(store_path: Path) -> Path:
    """Where a store's passage embeddings live: beside it, named after it."""
    return store_path.with_name(store_path.name + ".vectors.usearch")


_DEFAULT_EMBEDDER: WordLlamaEmbedder | None = None
_FINE_EMBEDDER: MiniLMEmbedder | None = None
_EMBEDDER_LOCK = threading.Lock()


def default_embedder() -> WordLlamaEmbedder:
    """The process's offline embedder (loaded once, on first use)."""
    global _DEFAULT_EMBEDDER
    with _EMBEDDER_LOCK:
        if _DEFAULT_EMBEDDER is None:
            _DEFAULT_EMBEDDER = WordLlamaEmbedder()
        return _DEFAULT_EMBEDDER


def fine_embedder() -> MiniLMEmbedder:
    """The process's offline sentence encoder, the fine stage (loaded on first use)."""
    global _FINE_EMBEDDER
    with _EMBEDDER_LOCK:
        if _FINE_EMBEDDER is None:
            from ...providers.embeddings_minilm import MiniLMEmbedder

            _FINE_EMBEDDER = MiniLMEmbedder()
        return _FINE_EMBEDDER


def _fine_of(fine: Embedder | bool) -> Embedder | None:
    if fine is True:
        return fine_embedder()
    return fine or None


class RetrievalEngine:
    """One store's hybrid search. `embedder` None: the offline quick embedder; `fine` True:
    the offline sentence encoder as the fine stage, False: none, or the one given."""

    def __init__(self, store: Store, embedder: Embedder | None = None, *,
                 fine: Embedder | bool = True, in_memory: bool = False) -> None:
        self.store = store
        self.embedder: Embedder = embedder if embedder is not None else default_embedder()
        self.fine_embedder: Embedder | None = _fine_of(fine)
        self.fulltext: FullTextIndex = index_for(store)
        self._in_memory = in_memory
        self._meaning: Meaning | None = None
        self._open_lock = threading.Lock()
        self._catching = asyncio.Lock()
        self._refining = asyncio.Lock()
        # replaced by an engine of another search model: its work stops and is not saved
        # over the file that model's vectors now go to
        self.retired = False

    # --- the vector indexes --------------------------------------------------------------

    def meaning(self) -> Meaning:
        """Both stages' vector indexes, opened on first use (call it off the event loop: it
        reads files that may be large)."""
        with self._open_lock:
            if self._meaning is None:
                from .offload import shared_offload
                from .semantic import Meaning

                path = None if self._in_memory else vectors_path(Path(self.store.path))
                self._meaning = Meaning(path, self.embedder, self.fine_embedder,
                                        offload=shared_offload())
            return self._meaning

    def vectors(self) -> VectorIndex:
        """The quick stage's vector index (every indexed passage is in it)."""
        return self.meaning().quick

    async def _open_meaning(self) -> Meaning:
        if self._meaning is not None:
            return self._meaning
        return await asyncio.to_thread(self.meaning)

    def _texts(self, rowids: Sequence[int]) -> list[tuple[int, str]]:
        """(row id, text) of these passages, read on the store's worker (called from a
        worker thread of the semantic stage)."""
        if not rowids:
            return []
        index = self.fulltext
        wanted = [(k, 0.0) for k in rowids]
        return [(p.rowid, p.text) for p in self.store.call(lambda r: index.passages_of(wanted))]

    # --- keeping current ---------------------------------------------------------------

    async def catch_up(self, *, limit: int | None = None,
                       progress: Progress | None = None) -> int:
        """Index the nodes written since the last call and embed their passages with the
        quick model (at most `limit` passages; all when None). Returns how many passages were
        embedded. The fine model follows in `refine`."""
        async with self._catching:
            meaning = await self._open_meaning()
            vectors = meaning.quick
            index = self.fulltext

            def read(repo: Repository, mark: int, generation: str,
                     n: int) -> tuple[str, list[tuple[int, str]]]:
                index.sync(repo)
                now = index.generation
                start = mark if now == generation else 0
                return now, index.passages_after(start, n)

            done = since_save = 0
            while (limit is None or done < limit) and not self.retired:
                mark_text = vectors.mark(_MARK)
                mark = int(mark_text) if mark_text else 0
                generation = vectors.mark(_GENERATION)
                want = EMBED_SLICE if limit is None else min(EMBED_SLICE, limit - done)
                def step(repo: Repository, m: int = mark, g: str = generation,
                         w: int = want) -> tuple[str, list[tuple[int, str]]]:
                    return read(repo, m, g, w)

                now, rows = await self.store.run(step)
                if now != generation:
                    # The full-text index was rebuilt: its passage numbers are new.
                    await asyncio.to_thread(meaning.clear)
                    vectors.set_mark(_GENERATION, now)
                    vectors.set_mark(_MARK, "0")
                if not rows:
                    break
                await asyncio.to_thread(meaning.add, rows)
                vectors.set_mark(_MARK, str(rows[-1][0]))
                done += len(rows)
                since_save += len(rows)
                if progress is not None:
                    progress(done, len(rows))
                if since_save >= SAVE_EVERY and not self.retired:
                    await asyncio.to_thread(vectors.save)
                    since_save = 0
                if len(rows) < want:
                    break
            if not self.retired:
                await asyncio.to_thread(vectors.save)
            return done

    def refined(self) -> tuple[int, int]:
        """(passages the fine model has embedded, passages indexed), from the marks: how far
        the background stage has come (call off the event loop)."""
        meaning = self.meaning()
        fine = meaning.fine
        quick_mark = int(meaning.quick.mark(_MARK) or 0)
        if fine is None:
            return 0, 0
        fine_mark = (int(fine.mark(_MARK) or 0)
                     if fine.mark(_GENERATION) == meaning.quick.mark(_GENERATION) else 0)
        index = self.fulltext
        return self.store.call(lambda r: (index.count_between(0, fine_mark),
                                          index.count_between(0, quick_mark)))

    def _complete(self, meaning: Meaning) -> bool:
        fine = meaning.fine
        if fine is None:
            return True
        quick = meaning.quick
        return (fine.mark(_GENERATION) == quick.mark(_GENERATION)
                and int(fine.mark(_MARK) or 0) >= int(quick.mark(_MARK) or 0))

    async def refine(self, *, limit: int | None = None, progress: Progress | None = None,
                     pause: float = 0.0) -> int:
        """Embed with the fine model the passages the quick one has and it has not, oldest
        first, a slice at a time (at most `limit`; all when None). `pause`: seconds idle
        after a slice per second it took (1.0 leaves half of a core to everything else).
        Returns how many passages it embedded; `progress(done, left)` after each slice."""
        meaning = await self._open_meaning()
        fine = meaning.fine
        if fine is None:
            return 0
        index = self.fulltext
        async with self._refining:
            done = since_save = 0
            while (limit is None or done < limit) and not self.retired:
                generation = meaning.quick.mark(_GENERATION)
                if fine.mark(_GENERATION) != generation:
                    await asyncio.to_thread(fine.clear)
                    fine.set_mark(_GENERATION, generation)
                    fine.set_mark(_MARK, "0")
                start = int(fine.mark(_MARK) or 0)
                end = int(meaning.quick.mark(_MARK) or 0)
                if start >= end:
                    break
                want = REFINE_SLICE if limit is None else min(REFINE_SLICE, limit - done)

                def read(repo: Repository, s: int = start, e: int = end,
                         w: int = want) -> tuple[list[tuple[int, str]], int]:
                    rows = [r for r in index.passages_after(s, w) if r[0] <= e]
                    left = index.count_between(rows[-1][0] if rows else s, e)
                    return rows, left

                rows, left = await self.store.run(read)
                if not rows:
                    break
                started = time.perf_counter()
                await asyncio.to_thread(meaning.refine, rows)
                if fine.mark(_GENERATION) == generation:
                    fine.set_mark(_MARK, str(rows[-1][0]))
                done += len(rows)
                since_save += len(rows)
                if progress is not None:
                    progress(done, left)
                if since_save >= SAVE_EVERY:
                    await asyncio.to_thread(fine.save)
                    since_save = 0
                if pause > 0:
                    await asyncio.sleep((time.perf_counter() - started) * pause)
            await asyncio.to_thread(fine.save)
            return done

    async def rebuild(self) -> int:
        """Throw both indexes away and build them again from the store (the fine stage
        follows in `refine`)."""
        await self.store.run(self.fulltext.rebuild)
        return await self.catch_up()

    # --- searching ---------------------------------------------------------------------

    async def search(self, query: str, *, limit: int = 10, session_id: str | None = None,
                     branch: Iterable[int] = (), catch_up: bool = True) -> list[RetrievalHit]:
        """The best `limit` passages for `query` over every chat and branch (or one
        session's), best first. `branch`: seqs of the current branch, ranked up. Raises
        `QueryError` (a ValueError) for a query without words."""
        if not terms_of(query):
            raise QueryError("nothing to search for")
        if catch_up:
            await self.catch_up()
        meaning = await self._open_meaning()
        index = self.fulltext

        def lexical(repo: Repository) -> tuple[list[Passage], list[int] | None]:
            index.sync(repo)
            seqs = index.seqs_of_session(session_id) if session_id is not None else None
            found = index.search_question(query, seqs=seqs, limit=CANDIDATES)
            keys = index.rowids_of(seqs) if seqs is not None else None
            return found, keys

        # The question's embedding and its words' search run at once, on two threads.
        q, (words, confined) = await asyncio.gather(asyncio.to_thread(meaning.query, query),
                                                    self.store.run(lexical))
        if confined is not None:
            semantic = (await asyncio.to_thread(
                meaning.rank_within, q, confined, self._texts))[:CANDIDATES]
        else:
            semantic = await asyncio.to_thread(meaning.nearest, q, CANDIDATES, self._texts,
                                               complete=self._complete(meaning))
        return await self._fuse(query, words, semantic, limit=limit, branch=set(branch))

    async def search_within(self, query: str, seqs: Sequence[int], *,
                            lexical: Sequence[Passage], limit: int) -> list[RetrievalHit]:
        """Fuse a caller's lexical ranking of passages of the nodes `seqs` (recall's several
        lexical passes, best first) with the exact semantic ranking of the same nodes. Their
        passages not embedded yet are embedded now (a first catch-up of years of history
        need not finish before a recall can use meaning)."""
        from .units import best_per_passage, first_keys, unit_keys

        meaning = await self._open_meaning()
        index = self.fulltext

        def keys_of(repo: Repository) -> list[int]:
            index.sync(repo)
            return index.rowids_of(seqs)

        keys = await self.store.run(keys_of)
        have = set(await asyncio.to_thread(meaning.quick.present, first_keys(keys)))
        missing = [k for k, f in zip(keys, first_keys(keys), strict=True) if f not in have]
        if missing:
            rows = await self.store.run(
                lambda repo: index.passages_of([(k, 0.0) for k in missing]))
            if rows:
                await asyncio.to_thread(meaning.add, [(p.rowid, p.text) for p in rows])
        q = await asyncio.to_thread(meaning.query, query)
        # Every hidden passage is scored here, exactly, by the quick model, which has read
        # all of them: only those that stand out from the rest count as found by meaning. The
        # fine model has read only some of them yet, and its floor alone let the nearest of
        # many unrelated passages outrank the one holding the question's words.
        semantic = _standouts(await asyncio.to_thread(
            lambda: best_per_passage(meaning.quick.score(q.quick, unit_keys(keys)))))
        return await self._fuse(query, list(lexical), semantic, limit=limit, branch=set())

    async def _fuse(self, query: str, words: list[Passage], semantic: list[tuple[int, float]],
                    *, limit: int, branch: set[int]) -> list[RetrievalHit]:
        by_key: dict[int, Passage] = {}
        for p in words:
            by_key.setdefault(_key_of(p), p)
        lexical_keys, share = covering(query, list(by_key.values()))
        semantic_keys = [k for k, sim in semantic if sim > MIN_SIMILARITY]
        candidates = list(dict.fromkeys(lexical_keys + semantic_keys))
        rankings = [Ranking(lexical_keys, LEXICAL_WEIGHT, share),
                    Ranking(semantic_keys, SEMANTIC_WEIGHT),
                    Ranking(sorted(candidates, reverse=True), RECENCY_WEIGHT)]
        if branch:
            rankings.append(Ranking(boost_list(candidates, keep={
                k for k in candidates if k // PASSAGES_PER_NODE in branch}), BRANCH_WEIGHT))
        fused = fuse(rankings)
        missing = [(k, 0.0) for k, _ in fused[:limit * 2] if k not in by_key]
        if missing:
            index = self.fulltext
            for p in await self.store.run(lambda repo: index.passages_of(missing)):
                by_key[_key_of(p)] = p
        lex_rank = {k: i + 1 for i, k in enumerate(lexical_keys)}
        sem_rank = {k: i + 1 for i, k in enumerate(semantic_keys)}
        out: list[RetrievalHit] = []
        for key, score in fused:
            found = by_key.get(key)
            if found is None:
                continue  # a vector of a passage purged since
            out.append(RetrievalHit(node_id=found.node_id, session_id=found.session_id,
                                    role=found.role, seq=found.seq, offset=found.offset,
                                    text=found.text, score=score,
                                    lexical_rank=lex_rank.get(key, 0),
                                    semantic_rank=sem_rank.get(key, 0)))
            if len(out) >= limit:
                break
        return out


def _standouts(scored: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """The best of an exactly scored set that stand out from the rest of it."""
    if len(scored) >= 8:
        sims = [v for _, v in scored]
        mean = sum(sims) / len(sims)
        spread = (sum((v - mean) ** 2 for v in sims) / len(sims)) ** 0.5
        floor = mean + MIN_DEVIATIONS * spread
        scored = [(k, v) for k, v in scored if v >= floor]
    return scored[:CANDIDATES]


def covering(query: str,
             found: Sequence[Passage | KnowledgePassage]) -> tuple[list[int], dict[int, float]]:
    """Row ids of the lexical matches that hold at least half of the question's content
    words (their first five letters), most words first, the given order among equals, and
    how much each counts: the square of the share of the words it holds. A passage sharing
    one common word with a question is little evidence for it, and ranked beside the
    semantic list at full weight it would push the passage that means the question down."""
    stems = {t[:5] for t in content_terms(query)}
    if not stems:
        return [], {}
    need = max(1, (len(stems) + 1) // 2)
    held: list[tuple[int, int, int]] = []
    share: dict[int, float] = {}
    for n, p in enumerate(found):
        low = p.text.lower()
        count = sum(1 for s in stems if s in low)
        if count >= need:
            held.append((-count, n, p.rowid))
            share[p.rowid] = (count / len(stems)) ** 2
    return [key for _, _, key in sorted(held)], share


def _key_of(p: Passage) -> int:
    return p.rowid


_ENGINES: weakref.WeakKeyDictionary[Store, RetrievalEngine] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def engine_for(store: Store) -> RetrievalEngine:
    """The store's retrieval engine (one per open store), embedding with the search model the
    settings name: the offline default's two stages, or the chosen model alone."""
    with _LOCK:
        found = _ENGINES.get(store)
    if found is not None:
        return found
    from .search_model import configured_embedder

    embedder = configured_embedder(store)
    with _LOCK:
        found = _ENGINES.get(store)
        if found is None:
            found = RetrievalEngine(store, embedder, fine=embedder is None)
            _ENGINES[store] = found
        return found


def replace_engine(store: Store, embedder: Embedder | None) -> RetrievalEngine:
    """A new engine for the store with another search model (None: the offline default),
    used from now on. Its vector indexes are that model's: empty until its catch-up."""
    engine = RetrievalEngine(store, embedder, fine=embedder is None)
    with _LOCK:
        old = _ENGINES.get(store)
        _ENGINES[store] = engine
    if old is not None:
        old.retired = True
    return engine
