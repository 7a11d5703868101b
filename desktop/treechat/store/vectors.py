"""The semantic half of the retrieval index: embeddings of passages' units (sentences) in a
usearch HNSW graph, in a file beside the store. Derived data like the full-text index: a unit's
key is `passage row id * UNITS + its place`, the file records which embedder wrote it and how
far it has read, and a damaged, foreign or other-model file is dropped and rebuilt.

Similarities are centred: the mean of every vector added is kept with the file and taken off
both sides before the cosine, which removes the direction every text shares (large for a
static embedding like WordLlama's) and ranks by what a passage says in particular. The graph
holds the plain vectors; its nearest units are re-scored centred.

An index of up to `EXACT_UNITS` vectors is searched exactly, every vector compared (usearch's
own SIMD kernel, a millisecond for twenty thousand): the graph's approximate search missed one
in twenty of the true ten nearest of a store of chats, the question's own fact among them.
Beyond that the graph answers.

Why usearch: at one million passages an exact scan of 256-dimensional vectors takes 250-350 ms
on this class of machine (numpy, usearch's own exact kernel); its HNSW graph answers in a few
milliseconds with 8-bit vectors (a quarter of the memory of float32), saves and loads a file,
and removes keys in place.

A set of passages that is only ever scored exactly (a knowledge base: every passage of the
chosen bases is scored) asks for no graph worth searching (`graph=False`): its vectors still
live in a usearch index, for the same file, keys and removal, but one built with the cheapest
links, which takes a sixth of the time to add to.

Thread-safe: one lock around the graph; searches and additions come from worker threads.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

# usearch's extension loaded before onnxruntime's makes onnxruntime's import crash the process
# (a segfault; usearch 2.26, onnxruntime 1.32 on Linux) unless tokenizers' extension is loaded
# before usearch's: the sentence encoder loads after this index in a fresh process.
import tokenizers  # noqa: F401  # isort: skip
from usearch.index import Index  # isort: skip

VECTORS_VERSION = 2
CONNECTIVITY = 16
EXPANSION_ADD = 64
EXPANSION_SEARCH = 96
# The links of an index that is scored exactly, never searched as a graph (`graph=False`).
SCAN_CONNECTIVITY = 4
SCAN_EXPANSION_ADD = 8
EXACT_UNITS = 100_000  # about 10 ms of exact search on this class of machine
CENTRE_PRIOR = 256  # vectors' worth of weight the zero vector keeps in the mean


def _private(path: Path) -> None:
    if os.name != "nt" and path.exists():
        os.chmod(path, 0o600)


class VectorIndex:
    """Passage key -> embedding, searched by cosine similarity. `path` None keeps it in
    memory. `model` names the embedder; a file written by another is started afresh.
    `centred` False: plain cosine (for a model whose vectors share little direction, a
    sentence encoder's). `graph` False: see the module's docstring."""

    def __init__(self, path: Path | None, *, ndim: int, model: str,
                 centred: bool = True, graph: bool = True) -> None:
        self.path = path
        self.graph = graph
        self.ndim = ndim
        self.model = model
        self.centred = centred
        self._lock = threading.Lock()
        self._meta: dict[str, Any] = {}
        self._index = self._load()
        self._dirty = False

    # --- the file ------------------------------------------------------------------------

    @property
    def _meta_path(self) -> Path | None:
        return None if self.path is None else self.path.with_name(self.path.name + ".json")

    def _fresh(self) -> Index:
        self._meta = {"version": VECTORS_VERSION, "model": self.model, "ndim": self.ndim,
                      "marks": {}, "sum": [0.0] * self.ndim, "n": 0}
        return Index(ndim=self.ndim, metric="cos", dtype="i8",
                     connectivity=CONNECTIVITY if self.graph else SCAN_CONNECTIVITY,
                     expansion_add=EXPANSION_ADD if self.graph else SCAN_EXPANSION_ADD,
                     expansion_search=EXPANSION_SEARCH)

    def _load(self) -> Index:
        meta_path = self._meta_path
        if self.path is None or meta_path is None or not self.path.exists():
            return self._fresh()
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if (not isinstance(meta, dict) or meta.get("version") != VECTORS_VERSION
                    or meta.get("model") != self.model or meta.get("ndim") != self.ndim):
                return self._fresh()
            index = Index.restore(str(self.path), view=False)
        except (OSError, ValueError, RuntimeError):
            index = None  # derived data: a damaged file is rebuilt from the store
        if index is None or index.ndim != self.ndim:
            return self._fresh()
        self._meta = meta
        return index

    def save(self) -> None:
        """Write the graph and its record if anything changed (atomically: a crash leaves the
        old file or the new one)."""
        meta_path = self._meta_path
        with self._lock:
            if self.path is None or meta_path is None or not self._dirty:
                return
            tmp = self.path.with_name(self.path.name + ".tmp")
            self._index.save(str(tmp))
            _private(tmp)
            os.replace(tmp, self.path)
            meta_tmp = meta_path.with_name(meta_path.name + ".tmp")
            meta_tmp.write_text(json.dumps(self._meta), encoding="utf-8")
            _private(meta_tmp)
            os.replace(meta_tmp, meta_path)
            self._dirty = False

    def clear(self) -> None:
        with self._lock:
            self._index = self._fresh()
            self._dirty = True

    # --- bookkeeping -------------------------------------------------------------------

    def mark(self, name: str) -> str:
        """A named high-water mark the caller keeps with the vectors (how far it has read)."""
        with self._lock:
            return str(self._meta.get("marks", {}).get(name, ""))

    def set_mark(self, name: str, value: str) -> None:
        with self._lock:
            self._meta.setdefault("marks", {})[name] = value
            self._dirty = True

    def __len__(self) -> int:
        with self._lock:
            return len(self._index)

    # --- vectors -----------------------------------------------------------------------

    def add(self, keys: Sequence[int], vectors: np.ndarray[Any, Any], *,
            threads: int = 1) -> None:
        """Add (or replace) the embeddings of these passage keys (on `threads` threads: one
        by default, so a background catch-up leaves the other core to the window)."""
        if not len(keys):
            return
        k = np.asarray(keys, dtype=np.uint64)
        v = np.ascontiguousarray(vectors, dtype=np.float32)
        with self._lock:
            present = np.asarray(self._index.contains(k), dtype=bool).reshape(-1)
            if present.any():
                self._index.remove(k[present])
            self._index.add(k, v, threads=threads)
            total = np.asarray(self._meta.get("sum") or [0.0] * self.ndim, dtype=np.float64)
            self._meta["sum"] = (total + v.sum(axis=0, dtype=np.float64)).tolist()
            self._meta["n"] = int(self._meta.get("n") or 0) + len(k)
            self._dirty = True

    def remove(self, keys: Iterable[int]) -> None:
        k = np.asarray(list(keys), dtype=np.uint64)
        if not len(k):
            return
        with self._lock:
            present = np.asarray(self._index.contains(k), dtype=bool).reshape(-1)
            if present.any():
                self._index.remove(k[present])
                self._dirty = True

    def present(self, keys: Sequence[int]) -> list[int]:
        """Which of these keys have a vector."""
        if not len(keys):
            return []
        k = np.asarray(keys, dtype=np.uint64)
        with self._lock:
            found = np.asarray(self._index.contains(k), dtype=bool).reshape(-1)
        return [int(x) for x in k[found]]

    def keys_in(self, low: int, high: int) -> list[int]:
        """Every stored key in [low, high)."""
        with self._lock:
            keys = np.asarray(self._index.keys, dtype=np.uint64)
        return [int(x) for x in keys[(keys >= low) & (keys < high)]]

    def mean(self) -> np.ndarray[Any, Any]:
        """The mean of every vector added, shrunk towards zero while there are few (the mean
        of a handful of passages is mostly what they say, not what all text shares)."""
        with self._lock:
            n = int(self._meta.get("n") or 0)
            total = np.asarray(self._meta.get("sum") or [0.0] * self.ndim, dtype=np.float32)
        if not self.centred or not n:
            return np.zeros(self.ndim, dtype=np.float32)
        return total / (n + CENTRE_PRIOR)

    def search(self, vector: np.ndarray[Any, Any], limit: int) -> list[tuple[int, float]]:
        """(key, centred cosine similarity) of about the `limit` nearest units, best first:
        the nearest `2 * limit` by plain cosine, re-scored centred (uncentred: the `limit`
        nearest and their cosines, read from the same 8-bit vectors); exactly up to
        `EXACT_UNITS`, by the graph beyond."""
        with self._lock:
            if not len(self._index):
                return []
            query = np.asarray(vector, dtype=np.float32)
            exact = len(self._index) <= EXACT_UNITS
            if not self.centred:
                found = self._index.search(query, limit, exact=exact)
                return [(int(k), 1.0 - float(d))
                        for k, d in zip(found.keys, found.distances, strict=True)]
            found = self._index.search(query, limit * 2, exact=exact)
        return self.score(vector, [int(k) for k in found.keys])[:limit]

    def score(self, vector: np.ndarray[Any, Any],
              keys: Sequence[int]) -> list[tuple[int, float]]:
        """(key, centred cosine similarity) for exactly these keys (those that have a vector),
        best first: exact, for a search confined to a few thousand passages (one branch)."""
        if not len(keys):
            return []
        k = np.asarray(keys, dtype=np.uint64)
        with self._lock:
            present = np.asarray(self._index.contains(k), dtype=bool).reshape(-1)
            k = k[present]
            if not len(k):
                return []
            got: Any = self._index.get(k, dtype="f32")
        matrix = np.asarray(got, dtype=np.float32).reshape(len(k), self.ndim)
        mu = self.mean()
        centred = matrix - mu
        norms = np.linalg.norm(centred, axis=1)
        norms[norms == 0] = 1.0
        q = np.asarray(vector, dtype=np.float32) - mu
        qn = float(np.linalg.norm(q)) or 1.0
        sims = (centred @ q) / (norms * qn)
        order = np.argsort(-sims, kind="stable")
        return [(int(k[i]), float(sims[i])) for i in order]
