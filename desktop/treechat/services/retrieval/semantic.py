"""Passages' meaning in two stages: a quick embedder (WordLlama, thousands of sentences a
second) embeds every passage as it is indexed, so a folder or an import is searchable at
once; a fine one (the MiniLM sentence encoder, about fifty times slower and far better at a
question in other words) embeds them again in the background, and its vectors take over as
they land. Each stage has a vector index of its own beside the other (`store.vectors`), under
the same keys (a passage's units, `units.unit_keys`).

A search ranks by the fine model only: the passages it has not reached yet are ranked by the
quick model, and the best few of those are embedded by the fine one there and then
(`REFINE_NOW`), so a question asked before the background work ends still gets the fine
model's judgement on the likeliest candidates. Scores of two models never meet in one list.

Embedding many passages at once (indexing, the background stage) runs in the indexing child
process (`offload`) when the models are the process's offline ones; a few, for a question
being asked, run on the caller's thread (no child need start for them).

Synchronous and thread-safe (the vector indexes lock themselves): callers run these methods on
worker threads, never on the event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...core.chunking import UNITS_PER_PASSAGE
from ...providers.embeddings import Embedder
from ...store.vectors import VectorIndex
from .offload import Offload, Stage, embed_rows
from .units import best_per_passage, embed_passages, first_keys, unit_keys

# Passages the quick model ranks highest among those the fine one has not embedded yet, which
# a search embeds with the fine model before it ranks (bounded work while a backlog lasts).
REFINE_NOW = 24
# How far each stage's nearest-neighbour search reads (units, before they become passages):
# the fine stage's cosines need no re-scoring, so its graph is read only as deep as it is used.
NEAREST_UNITS = 400
FINE_NEAREST_UNITS = 200
# The fine model's cosine below which a passage is no evidence for a question: unrelated
# sentences score 0.0-0.15 with it, a paraphrase of the question 0.3 and more.
FINE_FLOOR = 0.15
# Passages embedded on the caller's thread at most; more go to the indexing child process.
OFFLOAD_MIN = 32

Texts = Callable[[Sequence[int]], Sequence[tuple[int, str]]]
"""Passage row ids -> (row id, text): how the caller reads passages it has not embedded."""


@dataclass(frozen=True, slots=True)
class QueryVectors:
    quick: np.ndarray[Any, Any]
    fine: np.ndarray[Any, Any] | None


def fine_path(quick_path: Path) -> Path:
    """Where the fine stage's vectors live: beside the quick stage's."""
    return quick_path.with_name(quick_path.stem + ".fine" + quick_path.suffix)


class Meaning:
    """One set of passages' vectors, both stages. `path` None keeps them in memory; `fine`
    None is the quick stage alone."""

    def __init__(self, path: Path | None, quick: Embedder, fine: Embedder | None, *,
                 offload: Offload | None = None, graph: bool = True) -> None:
        self.quick_model = quick
        self.fine_model = fine
        self.offload = offload
        self.quick = VectorIndex(path, ndim=quick.ndim, model=quick.name, graph=graph)
        self.fine: VectorIndex | None = None
        if fine is not None:
            self.fine = VectorIndex(None if path is None else fine_path(path),
                                    ndim=fine.ndim, model=fine.name, centred=False,
                                    graph=graph)

    def _embed(self, stage: Stage, rows: Sequence[tuple[int, str]]) -> tuple[list[int], Any]:
        from .engine import default_embedder, fine_embedder

        model = self.quick_model if stage == "quick" else self.fine_model
        assert model is not None
        offline = default_embedder() if stage == "quick" else fine_embedder()
        if self.offload is not None and model is offline and len(rows) > OFFLOAD_MIN:
            return self.offload.run(embed_rows, stage, list(rows))
        return embed_passages(model, rows)

    @property
    def floor(self) -> float:
        """The similarity a passage must pass to count as found by meaning (the quick model's
        centred cosine must be positive: closer to the question than to its opposite)."""
        return FINE_FLOOR if self.fine is not None else 0.0

    # --- writing -------------------------------------------------------------------------

    def add(self, rows: Sequence[tuple[int, str]]) -> None:
        """Embed these passages with the quick model (the fine one follows in `refine`)."""
        keys, vectors = self._embed("quick", rows)
        self.quick.add(keys, vectors)

    def refine(self, rows: Sequence[tuple[int, str]]) -> None:
        """Embed these passages with the fine model."""
        if self.fine is None or self.fine_model is None or not rows:
            return
        keys, vectors = self._embed("fine", rows)
        self.fine.remove(unit_keys(r for r, _ in rows))  # a passage may have fewer units now
        self.fine.add(keys, vectors)

    def remove(self, rowids: Sequence[int]) -> None:
        keys = unit_keys(rowids)
        self.quick.remove(keys)
        if self.fine is not None:
            self.fine.remove(keys)

    def save(self) -> None:
        self.quick.save()
        if self.fine is not None:
            self.fine.save()

    def clear(self) -> None:
        self.quick.clear()
        if self.fine is not None:
            self.fine.clear()

    def unrefined(self, rowids: Sequence[int]) -> list[int]:
        """Which of these passages the fine model has not embedded yet."""
        if self.fine is None:
            return []
        have = {k // UNITS_PER_PASSAGE for k in self.fine.present(first_keys(rowids))}
        return [r for r in rowids if r not in have]

    # --- asking --------------------------------------------------------------------------

    def query(self, text: str) -> QueryVectors:
        fine = None
        if self.fine_model is not None:
            fine = self.fine_model.embed([text])[0]
        return QueryVectors(self.quick_model.embed([text])[0], fine)

    def rank_within(self, q: QueryVectors, rowids: Sequence[int],
                    texts: Texts) -> list[tuple[int, float]]:
        """(row id, similarity) of these passages above the floor, best first, by the fine
        model (the quick one alone, unfloored, when there is none). Passages the fine model
        has not reached are ranked by the quick one; the best `REFINE_NOW` of them are
        embedded finely now and join in."""
        if self.fine is None or q.fine is None:
            return best_per_passage(self.quick.score(q.quick, unit_keys(rowids)))
        missing = self.unrefined(rowids)
        if missing:
            ranked = best_per_passage(self.quick.score(q.quick, unit_keys(missing)))
            self.refine(texts([r for r, _ in ranked[:REFINE_NOW]]))
        return self._above(best_per_passage(self.fine.score(q.fine, unit_keys(rowids))))

    def _above(self, ranked: list[tuple[int, float]]) -> list[tuple[int, float]]:
        floor = self.floor
        return [(r, s) for r, s in ranked if s > floor]

    def nearest(self, q: QueryVectors, limit: int, texts: Texts, *,
                complete: bool) -> list[tuple[int, float]]:
        """(row id, similarity) of about the `limit` nearest passages of all, best first.
        `complete`: the fine model has embedded every passage (the quick index is not read)."""
        if self.fine is None or q.fine is None:
            nearest = best_per_passage(self.quick.search(q.quick, NEAREST_UNITS))
            return self._above(nearest)[:limit]
        found = best_per_passage(self.fine.search(q.fine, FINE_NEAREST_UNITS))
        if not complete:
            quick = [r for r, _ in best_per_passage(self.quick.search(q.quick, NEAREST_UNITS))]
            missing = self.unrefined(quick)[:REFINE_NOW]
            if missing:
                self.refine(texts(missing))
                fresh = best_per_passage(self.fine.score(q.fine, unit_keys(missing)))
                found = sorted({**dict(found), **dict(fresh)}.items(), key=lambda kv: -kv[1])
        return self._above(found)[:limit]


async def refine_backlog(meaning: Meaning, rowids: Sequence[int], texts: Texts, *,
                         pause: float = 0.0, slice_size: int = 64,
                         progress: Callable[[int, int], None] | None = None) -> int:
    """Embed with the fine model those of these passages it has not reached, a slice at a
    time on a worker thread, saving at the end. `pause`: seconds idle after a slice per second
    it took (1.0 leaves half of a core to everything else). Returns how many it embedded;
    `progress(done, total)` after each slice."""
    import asyncio
    import time

    missing = await asyncio.to_thread(meaning.unrefined, list(rowids))
    done = 0
    for start in range(0, len(missing), slice_size):
        began = time.perf_counter()
        part = missing[start:start + slice_size]
        rows = await asyncio.to_thread(texts, part)
        await asyncio.to_thread(meaning.refine, rows)
        done += len(part)
        if progress is not None:
            progress(done, len(missing))
        if pause > 0:
            await asyncio.sleep((time.perf_counter() - began) * pause)
    if done:
        await asyncio.to_thread(meaning.save)
    return done
