"""Session search over a store of one million messages in 20,000 chats: the ranked full-text
index (`store.search.search_ranked` over SQLite FTS5) against the substring scan it replaces
(`store.search.search_sessions`), side by side, for a rare and a common word.

The messages are real prose: sentences and paragraphs of the running interpreter's standard
library docstrings (`context_sim.stdlib_corpus`), a few words of which are made rare by
planting one in a handful of messages. Building the index the first time is measured too."""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.support.context_sim import stdlib_corpus

from treechat.core.model import Session
from treechat.store.database import Store
from treechat.store.fulltext import FullTextIndex, index_path
from treechat.store.repository import NODE_COLUMNS, bulk_insert
from treechat.store.search import search_ranked, search_sessions

pytestmark = pytest.mark.bench

CHATS = 20_000
MESSAGES = 1_000_000
RARE = "quillwort"  # planted in RARE_COUNT messages
RARE_COUNT = 25
COMMON = "value"  # found in several per cent of the standard library's docstrings
RUNS = 7
TARGET_MS = 50.0


def build_store(path: Path) -> int:
    """The store, written in bulk (the same rows `append_nodes` writes). Returns how many
    messages hold the common word."""
    corpus = stdlib_corpus()
    texts = corpus.sentences + corpus.paragraphs
    rng = random.Random(5)
    rare_at = set(rng.sample(range(MESSAGES), RARE_COUNT))
    with Store.open(path) as store:
        sessions = [Session(f"c{k:05d}", f"Chat {k}", None, "m", 1_700_000_000.0 + k,
                            updated_at=1_700_000_000.0 + k) for k in range(CHATS)]
        store.call(lambda r: r.create_sessions(sessions))
        per_chat = MESSAGES // CHATS
        common = 0
        batch: list[tuple[object, ...]] = []
        seq = 0
        for k in range(CHATS):
            parent: str | None = None
            for j in range(per_chat):
                seq += 1
                text = rng.choice(texts)
                if seq - 1 in rare_at:
                    text = f"{text} The {RARE} grows by the lake."
                common += COMMON in text.lower()
                nid = f"n{seq:07d}"
                batch.append((nid, seq, 1_700_000_000.0 + seq, f"c{k:05d}",
                              "user" if j % 2 == 0 else "assistant", "", None,
                              json.dumps(text), parent, None, [], "{}"))
                parent = nid
            if len(batch) >= 50_000:
                rows = batch
                store.call(lambda r, rows=rows: bulk_insert(r.con, "nodes", NODE_COLUMNS, rows))
                batch = []
        if batch:
            store.call(lambda r, rows=batch: bulk_insert(r.con, "nodes", NODE_COLUMNS, rows))
    return common


def timed(fn: Callable[[], object], runs: int = RUNS) -> tuple[float, object]:
    times: list[float] = []
    out: object = None
    for _ in range(runs):
        started = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), out


@pytest.mark.timeout(3600)
def test_search_1m(tmp_path: Path, bench_report: Callable[..., Path]) -> None:
    path = tmp_path / "million.duckdb"
    t0 = time.perf_counter()
    with_common = build_store(path)
    build_store_s = time.perf_counter() - t0
    with Store.open(path) as store:  # reopened: the repository reads the newest seq
        index = FullTextIndex(index_path(path))
        t0 = time.perf_counter()
        indexed = store.call(index.rebuild)
        build_index_s = time.perf_counter() - t0
        assert indexed == MESSAGES
        figures: dict[str, float] = {}
        rows: list[list[object]] = []
        ranked_ms: list[float] = []
        for word in (RARE, COMMON):
            fts_ms, hits = timed(lambda w=word: store.call(
                lambda r: search_ranked(r, index, w)))
            scan_ms, scanned = timed(lambda w=word: store.call(
                lambda r: search_sessions(r, w)), runs=3)
            assert isinstance(hits, tuple) and isinstance(scanned, tuple)
            assert hits, f"no hit for {word}"
            if word == RARE:
                # every chat that holds the rare word is found
                assert {h.session.id for h in hits} == {h.session.id for h in scanned}
            kind = "rare" if word == RARE else "common"
            figures[f"search_1m_{kind}_ms"] = fts_ms
            figures[f"search_1m_{kind}_scan_ms"] = scan_ms
            figures[f"search_1m_{kind}_hits"] = len(hits)
            ranked_ms.append(fts_ms)
            rows.append([f"{kind} word ({word!r})", f"{fts_ms:.1f} ms", f"{scan_ms:.1f} ms",
                         f"{scan_ms / fts_ms:.0f}x", len(hits), len(scanned)])
        index.close()
    figures["search_1m_ms"] = statistics.median(ranked_ms)
    figures["search_1m_scan_ms"] = statistics.median(
        [figures["search_1m_rare_scan_ms"], figures["search_1m_common_scan_ms"]])
    figures["search_1m_vs_scan"] = figures["search_1m_ms"] / figures["search_1m_scan_ms"]
    figures["search_index_build_s"] = build_index_s
    figures["search_index_bytes"] = index_path(path).stat().st_size
    figures["search_store_build_s"] = build_store_s
    figures["search_common_word_messages"] = with_common
    rows.append(["index built from the store", f"{build_index_s:.0f} s", "", "", "", ""])
    bench_report("search", figures, rows,
                 ["query", "ranked (FTS5)", "substring scan", "scan / ranked", "chats found",
                  "scan found"])
    assert figures["search_1m_ms"] < figures["search_1m_scan_ms"]
