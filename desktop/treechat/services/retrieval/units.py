"""Passages in the vector index: each is embedded as its units (sentences, `core.chunking.
units`) under keys `row id * UNITS_PER_PASSAGE + k`, and scores as its best unit."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ...core.chunking import UNITS_PER_PASSAGE, units
from ...providers.embeddings import Embedder

EMBED_BATCH = 512


def unit_keys(rowids: Iterable[int]) -> list[int]:
    """Every key a passage's units may have."""
    return [r * UNITS_PER_PASSAGE + j for r in rowids for j in range(UNITS_PER_PASSAGE)]


def first_keys(rowids: Iterable[int]) -> list[int]:
    """The key every embedded passage has (its first unit's)."""
    return [r * UNITS_PER_PASSAGE for r in rowids]


def embed_passages(embedder: Embedder,
                   rows: Sequence[tuple[int, str]]) -> tuple[list[int], np.ndarray[Any, Any]]:
    """(unit keys, their vectors) for (row id, passage text) pairs."""
    keys: list[int] = []
    texts: list[str] = []
    for rowid, text in rows:
        for j, unit in enumerate(units(text)):
            keys.append(rowid * UNITS_PER_PASSAGE + j)
            texts.append(unit)
    if not texts:
        return [], np.zeros((0, embedder.ndim), dtype=np.float32)
    vectors = np.vstack([embedder.embed(texts[i:i + EMBED_BATCH])
                         for i in range(0, len(texts), EMBED_BATCH)])
    return keys, vectors


def best_per_passage(scored: Iterable[tuple[int, float]]) -> list[tuple[int, float]]:
    """(row id, best unit's similarity), best first, from (unit key, similarity)."""
    best: dict[int, float] = {}
    for key, sim in scored:
        r = key // UNITS_PER_PASSAGE
        if r not in best or sim > best[r]:
            best[r] = sim
    return sorted(best.items(), key=lambda kv: -kv[1])
