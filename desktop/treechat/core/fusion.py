"""Reciprocal rank fusion: several rankings of the same candidates (lexical, semantic,
recency, "on this branch") made into one, each candidate scoring sum(weight / (k + rank)).
Ranks, not scores, are added, because BM25 and cosine similarity are on scales that do not
compare; a candidate near the top of either list rises. Pure and deterministic: ties keep
the order of first appearance."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)

# The constant from Cormack, Clarke and Buettcher (2009): large enough that the first few
# ranks of one list do not swamp agreement between lists.
RRF_K = 60


@dataclass(frozen=True, slots=True)
class Ranking(Generic[K]):
    """One ranked list of candidate keys, best first, and how much it counts (`each`: a
    weight of its own for some keys, times `weight`; a key not in it counts 1)."""

    keys: Sequence[K]
    weight: float = 1.0
    each: Mapping[K, float] | None = None


def fuse(rankings: Sequence[Ranking[K]], *, k: int = RRF_K) -> list[tuple[K, float]]:
    """(key, fused score) for every key in any ranking, best first."""
    score: dict[K, float] = {}
    first: dict[K, int] = {}
    order = 0
    for ranking in rankings:
        seen: set[K] = set()
        for rank, key in enumerate(ranking.keys, start=1):
            if key in seen:
                continue
            seen.add(key)
            if key not in first:
                first[key] = order
                order += 1
            own = ranking.each.get(key, 1.0) if ranking.each is not None else 1.0
            score[key] = score.get(key, 0.0) + ranking.weight * own / (k + rank)
    return sorted(score.items(), key=lambda kv: (-kv[1], first[kv[0]]))


def boost_list(candidates: Sequence[K], *, keep: set[K]) -> list[K]:
    """The candidates in `keep`, in their order: a ranking that favours them (the current
    branch, say) without inventing an order among them."""
    return [c for c in candidates if c in keep]
