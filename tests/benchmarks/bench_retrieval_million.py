"""Search at one million passages, through `RetrievalEngine.search` end to end (the question's
embedding, the vector search, FTS5, fusion, the passages read back), beside the lexical index
alone over the same passages; writes its figures into build/bench/retrieval.json.

The store: a million two-sentence messages in 10,000 chats, the sentences drawn from the
running interpreter's standard-library docstrings (`stdlib_corpus`); its full-text index is the
engine's own, built by `FullTextIndex.sync`. Both stages' vector indexes are full, as after the
background stage has run:

- quick (WordLlama, the offline default): every passage's own text embedded by the real model
  in batches, its chunks/s reported;
- fine (the MiniLM sentence encoder, about a hundred passages a second here: three hours for a
  million): every corpus sentence embedded by the real model once, a passage's vector the
  normalized mean of its two sentences'.

Each passage has one vector, under its first unit's key (the engine would give a two-sentence
passage one per sentence: a graph twice as large of the same 6,000 sentences repeated, which
no real store looks like). The build takes minutes and is kept under build/bench-cache with
its timings, so a re-run only searches. Questions: the paraphrase sets' (in other words than
any passage) and their facts' own words, each asked once.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from tests.benchmarks.bench_retrieval import facts, merge_report
from tests.support.context_sim import stdlib_corpus

from treechat.core.chunking import UNITS_PER_PASSAGE
from treechat.core.model import Session
from treechat.services.retrieval.engine import (
    RetrievalEngine,
    default_embedder,
    fine_embedder,
    vectors_path,
)
from treechat.services.retrieval.semantic import fine_path
from treechat.store.database import Store
from treechat.store.fulltext import FullTextIndex, any_terms_query, index_path
from treechat.store.repository import NODE_COLUMNS, bulk_insert
from treechat.store.vectors import VectorIndex

pytestmark = pytest.mark.bench

MILLION = 1_000_000
CHATS = 10_000
CACHE = Path(__file__).resolve().parents[2] / "build" / "bench-cache"
CACHE_VERSION = "million-4"  # the store, its full-text index and both stages' vectors
EMBED_BATCH = 4096
ADD_BATCH = 50_000


def build_store(path: Path, rng: random.Random) -> list[tuple[int, int]]:
    """A store of a million two-sentence messages. Returns each one's two sentence numbers."""
    sentences = stdlib_corpus().sentences
    pairs: list[tuple[int, int]] = []
    with Store.open(path) as store:
        store.call(lambda r: r.create_sessions([Session(f"c{k:05d}", f"Chat {k}", None, "m",
                                                        1.0) for k in range(CHATS)]))
        batch: list[tuple[object, ...]] = []
        seq = 0
        for k in range(CHATS):
            parent: str | None = None
            for _ in range(MILLION // CHATS):
                seq += 1
                a, b = rng.randrange(len(sentences)), rng.randrange(len(sentences))
                pairs.append((a, b))
                nid = f"n{seq:07d}"
                batch.append((nid, seq, 1_700_000_000.0 + seq, f"c{k:05d}", "user", "", None,
                              json.dumps(sentences[a] + " " + sentences[b]), parent, None,
                              [], "{}"))
                parent = nid
            if len(batch) >= 50_000:
                store.call(lambda r, rows=batch: bulk_insert(r.con, "nodes", NODE_COLUMNS, rows))
                batch = []
        if batch:
            store.call(lambda r, rows=batch: bulk_insert(r.con, "nodes", NODE_COLUMNS, rows))
    return pairs


def million() -> tuple[Path, dict[str, float]]:
    """The million-passage store with its full-text index and both vector indexes, built once
    under build/bench-cache; with the figures of its build (seconds, chunks/s)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / "million.duckdb"
    stamp = CACHE / "million.json"
    if stamp.exists() and path.exists():
        record = json.loads(stamp.read_text())
        if record.get("version") == CACHE_VERSION:
            return path, record["figures"]
    for old in CACHE.glob("million.duckdb*"):
        old.unlink()
    built: dict[str, float] = {}
    started = time.perf_counter()
    pairs = build_store(path, random.Random(1))
    built["million_build_store_s"] = time.perf_counter() - started

    with Store.open(path) as store:
        index = FullTextIndex(index_path(path))
        t = time.perf_counter()
        store.call(index.sync)
        built["million_build_fulltext_s"] = time.perf_counter() - t
        rows = store.call(lambda r: index.passages_after(0, MILLION + 1))
        generation = store.call(lambda r: index.generation)
        index.close()
    assert len(rows) == MILLION
    keys = [rowid * UNITS_PER_PASSAGE for rowid, _ in rows]

    quick = default_embedder()
    quick.load()
    t = time.perf_counter()
    quick_vectors = np.vstack([quick.embed([text for _, text in rows[i:i + EMBED_BATCH]])
                               for i in range(0, MILLION, EMBED_BATCH)])
    built["million_embed_quick_chunks_per_s"] = MILLION / (time.perf_counter() - t)
    del rows

    encoder = fine_embedder()
    t = time.perf_counter()
    pool = encoder.embed(stdlib_corpus().sentences)
    built["million_embed_fine_sentences_s"] = time.perf_counter() - t
    ab = np.asarray(pairs)
    fine_vectors = pool[ab[:, 0]] + pool[ab[:, 1]]
    fine_vectors /= np.linalg.norm(fine_vectors, axis=1, keepdims=True)

    for stage, vectors, file, model, centred in (
            ("quick", quick_vectors, vectors_path(path), quick.name, True),
            ("fine", fine_vectors, fine_path(vectors_path(path)), encoder.name, False)):
        t = time.perf_counter()
        graph = VectorIndex(file, ndim=vectors.shape[1], model=model, centred=centred)
        for i in range(0, MILLION, ADD_BATCH):
            graph.add(keys[i:i + ADD_BATCH], vectors[i:i + ADD_BATCH], threads=2)
        graph.set_mark("generation", generation)
        graph.set_mark("passages", str(keys[-1] // UNITS_PER_PASSAGE))
        graph.save()
        built[f"million_build_{stage}_graph_s"] = time.perf_counter() - t
    built["million_build_s"] = time.perf_counter() - started
    stamp.write_text(json.dumps({"version": CACHE_VERSION, "figures": built}))
    return path, built


def pct(xs: list[float], q: float) -> float:
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@pytest.mark.timeout(7200)
def test_search_1m_chunks(bench_report: Callable[..., Path]) -> None:
    path, built = million()
    planted = facts()
    asked = [f["question"] for f in planted]  # in other words than any passage
    exact = [f["exact"] for f in planted]
    with Store.open(path) as store:
        engine = RetrievalEngine(store)
        quick_only = RetrievalEngine(store, fine=False)
        hows = ("hybrid", "quick", "lexical", "lexical_or")
        index = engine.fulltext
        meaning = engine.meaning()
        assert meaning.fine is not None and len(meaning.fine) == MILLION
        assert len(meaning.quick) == MILLION

        cpu: dict[str, list[float]] = {how: [] for how in hows}

        async def measure(questions: list[str], how: str) -> list[float]:
            out: list[float] = []
            for q in questions:
                t, c = time.perf_counter(), time.process_time()
                if how in ("hybrid", "quick"):
                    e = engine if how == "hybrid" else quick_only
                    hits = await e.search(q, limit=10, catch_up=False)
                    assert hits
                elif how == "lexical":
                    await store.run(lambda r, q=q: index.search_question(q, limit=10))
                else:  # the OR of every content word, ranked by BM25: the query it replaced
                    await store.run(lambda r, q=q: index.search(any_terms_query(q), limit=10))
                out.append((time.perf_counter() - t) * 1000)
                # every thread of this process: what the question cost, not the wait for a core
                cpu[how].append((time.process_time() - c) * 1000)
            return out

        for e in (engine, quick_only):
            asyncio.run(e.search("warm up the encoder", limit=10, catch_up=False))
        runs = {(kind, how): asyncio.run(measure(qs, how))
                for kind, qs in (("asked", asked), ("exact", exact)) for how in hows}

        # Where a question's time goes, each part alone on this thread.
        parts: dict[str, list[float]] = {"embed": [], "vectors": [], "fulltext": []}
        for q in asked + exact:
            t = time.perf_counter()
            qv = meaning.query(q)
            parts["embed"].append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            meaning.nearest(qv, 100, engine._texts, complete=True)
            parts["vectors"].append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            store.call(lambda r, q=q: index.search_question(q, limit=100))
            parts["fulltext"].append((time.perf_counter() - t) * 1000)

    both = {how: runs["asked", how] + runs["exact", how] for how in hows}
    figures = {**built,
               "search_1m_chunks_p95_ms": pct(both["hybrid"], 0.95),
               "search_1m_chunks_p95_ms_lexical": pct(both["lexical"], 0.95),
               "search_1m_chunks_p95_ms_lexical_or": pct(both["lexical_or"], 0.95),
               "search_1m_chunks_p95_ms_quick_stage": pct(both["quick"], 0.95),
               "search_1m_chunks_median_ms": statistics.median(both["hybrid"]),
               "search_1m_chunks_median_ms_lexical": statistics.median(both["lexical"]),
               "search_1m_chunks_median_ms_quick_stage": statistics.median(both["quick"]),
               "search_1m_chunks_paraphrase_p95_ms": pct(runs["asked", "hybrid"], 0.95),
               "search_1m_chunks_exact_p95_ms": pct(runs["exact", "hybrid"], 0.95),
               "search_1m_chunks_queries": float(len(both["hybrid"]))}
    figures["search_1m_chunks_cpu_p95_ms"] = pct(cpu["hybrid"], 0.95)
    figures["search_1m_chunks_cpu_median_ms"] = statistics.median(cpu["hybrid"])
    figures["search_1m_chunks_cpu_p95_ms_lexical"] = pct(cpu["lexical"], 0.95)
    figures["search_1m_chunks_cpu_p95_ms_quick_stage"] = pct(cpu["quick"], 0.95)
    for part, xs in parts.items():
        figures[f"search_1m_chunks_{part}_median_ms"] = statistics.median(xs)
        figures[f"search_1m_chunks_{part}_p95_ms"] = pct(xs, 0.95)

    def row(name: str, xs: dict[str, list[float]], q: float) -> list[object]:
        return [name, *(f"{pct(xs[h], q):.1f}" for h in hows)]

    asked_runs = {h: runs["asked", h] for h in hows}
    exact_runs = {h: runs["exact", h] for h in hows}
    rows: list[list[object]] = [
        row("search_1m_chunks_p95_ms", both, 0.95), row("median", both, 0.5),
        row("CPU time of this process per question, p95", cpu, 0.95),
        row("CPU time, median", cpu, 0.5),
        row("p95, asked in other words", asked_runs, 0.95),
        row("p95, asked in the fact's words", exact_runs, 0.95),
        *([f"  {p}: median / p95 (ms)", f"{statistics.median(xs):.1f} / {pct(xs, 0.95):.1f}",
           "", "", ""] for p, xs in parts.items()),
        ["build (s): all / store / FTS5 / quick graph / fine graph",
         " / ".join(f"{built[k]:.0f}" for k in (
             "million_build_s", "million_build_store_s", "million_build_fulltext_s",
             "million_build_quick_graph_s", "million_build_fine_graph_s")), "", "", ""],
        ["WordLlama chunks/s (batched)", f"{built['million_embed_quick_chunks_per_s']:.0f}",
         "", "", ""]]
    merge_report(bench_report, figures, rows,
                 ["figure", "hybrid (both stages)", "hybrid (quick stage alone)",
                  "lexical only", "lexical, OR of every word"])
