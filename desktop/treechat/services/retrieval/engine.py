"""The retrieval engine over the conversations: every passage of every message on every branch,
found by its words (the full-text index, BM25) and by its meaning (embeddings in the vector
index), the rankings fused (reciprocal rank fusion) with recency and the current branch as
further signals.

Both indexes are derived data beside the store, keyed by the same passage numbers. Keeping
them current is incremental: the full-text index reads the nodes appended since its mark on
the store's worker; the passages it has not embedded yet are read there too, embedded on a
thread of their own (the model never runs on the event loop or the store's worker) and added
to the vector index, which is saved every few thousand passages and when a catch-up ends.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.fusion import Ranking, boost_list, fuse
from ...providers.embeddings import Embedder, WordLlamaEmbedder
from ...store.database import Store
from ...store.fulltext import (
    PASSAGES_PER_NODE,
    FullTextIndex,
    Passage,
    QueryError,
    any_terms_query,
    content_terms,
    index_for,
    terms_of,
)
from ...store.repository import Repository

if TYPE_CHECKING:  # numpy and usearch load with the vector index, off start-up
    from ...store.knowledge import KnowledgePassage
    from ...store.vectors import VectorIndex

EMBED_SLICE = 512  # passages embedded per step
SAVE_EVERY = 8192  # passages embedded between saves of the vector file
CANDIDATES = 100  # how deep each ranking is read before fusing
SEMANTIC_WEIGHT = 1.0
LEXICAL_WEIGHT = 1.0
RECENCY_WEIGHT = 0.25
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
_EMBEDDER_LOCK = threading.Lock()


def default_embedder() -> WordLlamaEmbedder:
    """The process's offline embedder (loaded once, on first use)."""
    global _DEFAULT_EMBEDDER
    with _EMBEDDER_LOCK:
        if _DEFAULT_EMBEDDER is None:
            _DEFAULT_EMBEDDER = WordLlamaEmbedder()
        return _DEFAULT_EMBEDDER


class RetrievalEngine:
    """One store's hybrid search. `embedder` None: the offline default."""

    def __init__(self, store: Store, embedder: Embedder | None = None, *,
                 in_memory: bool = False) -> None:
        self.store = store
        self.embedder: Embedder = embedder if embedder is not None else default_embedder()
        self.fulltext: FullTextIndex = index_for(store)
        self._in_memory = in_memory
        self._vectors: VectorIndex | None = None
        self._catching = asyncio.Lock()

    # --- the vector index ------------------------------------------------------------------

    def vectors(self) -> VectorIndex:
        """The vector index, opened on first use (call it off the event loop: it reads a
        file that may be large)."""
        if self._vectors is None:
            from ...store.vectors import VectorIndex

            path = None if self._in_memory else vectors_path(Path(self.store.path))
            self._vectors = VectorIndex(path, ndim=self.embedder.ndim, model=self.embedder.name)
        return self._vectors

    async def _open_vectors(self) -> VectorIndex:
        if self._vectors is not None:
            return self._vectors
        return await asyncio.to_thread(self.vectors)

    # --- keeping current ---------------------------------------------------------------

    async def catch_up(self, *, limit: int | None = None,
                       progress: Progress | None = None) -> int:
        """Index the nodes written since the last call and embed their passages (at most
        `limit` passages; all when None). Returns how many passages were embedded."""
        from .units import embed_passages

        async with self._catching:
            vectors = await self._open_vectors()
            index = self.fulltext

            def read(repo: Repository, mark: int, generation: str,
                     n: int) -> tuple[str, list[tuple[int, str]]]:
                index.sync(repo)
                now = index.generation
                start = mark if now == generation else 0
                return now, index.passages_after(start, n)

            done = since_save = 0
            while limit is None or done < limit:
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
                    await asyncio.to_thread(vectors.clear)
                    vectors.set_mark(_GENERATION, now)
                    vectors.set_mark(_MARK, "0")
                if not rows:
                    break
                keys, embedded = await asyncio.to_thread(embed_passages, self.embedder, rows)
                await asyncio.to_thread(vectors.add, keys, embedded)
                vectors.set_mark(_MARK, str(rows[-1][0]))
                done += len(rows)
                since_save += len(rows)
                if progress is not None:
                    progress(done, len(rows))
                if since_save >= SAVE_EVERY:
                    await asyncio.to_thread(vectors.save)
                    since_save = 0
                if len(rows) < want:
                    break
            await asyncio.to_thread(vectors.save)
            return done

    async def rebuild(self) -> int:
        """Throw both indexes away and build them again from the store."""
        await self.store.run(self.fulltext.rebuild)
        return await self.catch_up()

    # --- searching ---------------------------------------------------------------------

    async def embed_query(self, query: str) -> Any:
        return (await asyncio.to_thread(self.embedder.embed, [query]))[0]

    async def search(self, query: str, *, limit: int = 10, session_id: str | None = None,
                     branch: Iterable[int] = (), catch_up: bool = True) -> list[RetrievalHit]:
        """The best `limit` passages for `query` over every chat and branch (or one
        session's), best first. `branch`: seqs of the current branch, ranked up. Raises
        `QueryError` (a ValueError) for a query without words."""
        from .units import best_per_passage, unit_keys

        if not terms_of(query):
            raise QueryError("nothing to search for")
        if catch_up:
            await self.catch_up()
        vectors = await self._open_vectors()
        qvec = await self.embed_query(query)
        index = self.fulltext
        try:
            fts: str | None = any_terms_query(query)
        except QueryError:
            fts = None

        def lexical(repo: Repository) -> tuple[list[Passage], list[int] | None]:
            index.sync(repo)
            seqs = index.seqs_of_session(session_id) if session_id is not None else None
            found = index.search(fts, seqs=seqs, limit=CANDIDATES) if fts else []
            keys = index.rowids_of(seqs) if seqs is not None else None
            return found, keys

        words, confined = await self.store.run(lexical)
        if confined is not None:
            semantic = best_per_passage(
                await asyncio.to_thread(vectors.score, qvec, unit_keys(confined)))[:CANDIDATES]
        else:
            semantic = best_per_passage(
                await asyncio.to_thread(vectors.search, qvec, CANDIDATES * 4))
        return await self._fuse(query, words, semantic, limit=limit, branch=set(branch))

    async def search_within(self, query: str, seqs: Sequence[int], *,
                            lexical: Sequence[Passage], limit: int) -> list[RetrievalHit]:
        """Fuse a caller's lexical ranking of passages of the nodes `seqs` (recall's several
        lexical passes, best first) with the exact semantic ranking of the same nodes. Their
        passages not embedded yet are embedded now (a first catch-up of years of history
        need not finish before a recall can use meaning)."""
        from .units import best_per_passage, embed_passages, first_keys, unit_keys

        vectors = await self._open_vectors()
        index = self.fulltext

        def keys_of(repo: Repository) -> list[int]:
            index.sync(repo)
            return index.rowids_of(seqs)

        keys = await self.store.run(keys_of)
        have = set(await asyncio.to_thread(vectors.present, first_keys(keys)))
        missing = [k for k, f in zip(keys, first_keys(keys), strict=True) if f not in have]
        if missing:
            rows = await self.store.run(
                lambda repo: index.passages_of([(k, 0.0) for k in missing]))
            if rows:
                ukeys, embedded = await asyncio.to_thread(
                    embed_passages, self.embedder, [(p.rowid, p.text) for p in rows])
                await asyncio.to_thread(vectors.add, ukeys, embedded)
        qvec = await self.embed_query(query)
        semantic = _standouts(best_per_passage(
            await asyncio.to_thread(vectors.score, qvec, unit_keys(keys))))
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
    """The store's retrieval engine (one per open store, sharing the offline embedder)."""
    with _LOCK:
        found = _ENGINES.get(store)
        if found is None:
            found = RetrievalEngine(store)
            _ENGINES[store] = found
        return found
