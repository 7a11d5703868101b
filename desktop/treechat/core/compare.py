"""Where replies to the same message differ: each paragraph or line of one reply that no other
reply says in about the same words, so a side-by-side view can mark what only one model said.

Word sets and their overlap (Jaccard) rather than difflib: replies say the same thing in a
different order and wording, and an edit script between them marks nearly everything."""

from __future__ import annotations

import re
from collections.abc import Sequence

SHARED_OVERLAP = 0.5  # at least half the words in common: the same point, said again
_WORD = re.compile(r"\w+", re.UNICODE)


def words_of(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text))


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def only_here(columns: Sequence[Sequence[str]], *, shared: float = SHARED_OVERLAP
              ) -> tuple[tuple[bool, ...], ...]:
    """For each column (a reply's blocks, in order), which blocks no other column shares: a
    block is shared when some block of another column has at least `shared` of its words in
    common. A block without words (a rule, an empty line) is never marked; with one column,
    nothing is."""
    sets = [[words_of(block) for block in column] for column in columns]
    out: list[tuple[bool, ...]] = []
    for i, column in enumerate(sets):
        others = [s for j, col in enumerate(sets) if j != i for s in col if s]
        marks = []
        for block in column:
            if not block or len(sets) < 2:
                marks.append(False)
                continue
            marks.append(all(overlap(block, other) < shared for other in others))
        out.append(tuple(marks))
    return tuple(out)
