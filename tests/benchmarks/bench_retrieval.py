"""Retrieval, asked in other words than the text: the hybrid engine (FTS5 + meaning in two
stages: WordLlama at once, the MiniLM sentence encoder in the background, fused) against the
lexical index alone (FTS5 BM25 over the same passages), side by side, on the same data.

- Facts from `tests/data/retrieval/paraphrases.json` and the held-out `heldout.json` (written
  for this purpose, checked to share no content word between fact and question) are planted in
  a folder of 1,000 mixed files (Markdown, text, HTML, Python) and in chats among filler turns,
  and inside long tool results. Filler is the running interpreter's standard library: its
  docstrings and sources. The headline figures are the held-out set's; the first set's beside.
- A hit is the fact's own passage (chats: its node) among the first five results.
- Indexing the folder is timed (files/s: the quick stage, after which every file is found by
  its words and by WordLlama's meaning) while a ticker on the same event loop measures the
  longest stall the window would see (and the 99th percentile), split into the loop thread's
  own work, its wait for a core and the time it was blocked (`tests/support/loop_gaps.py`);
  the same ticker idle right after, as long, is the baseline (the machine's own load, shared
  with other work). The part "indexing" stops there. The fine stage
  that follows in the background is timed too (passages/s), under the same ticker, and the
  folder is asked the held-out questions before it runs as well as after.
- Search at one million passages is `bench_retrieval_million.py`.
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from tests.support.context_sim import stdlib_corpus
from tests.support.loop_gaps import gap_figures, idle_gaps, ticking

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.services.retrieval.engine import RetrievalEngine, default_embedder, fine_embedder
from treechat.services.retrieval.knowledge import IndexProgress, KnowledgeService
from treechat.store.database import Store
from treechat.store.fulltext import any_terms_query
from treechat.store.knowledge import KnowledgeIndex

pytestmark = pytest.mark.bench
T = TypeVar("T")

DATA = Path(__file__).resolve().parents[1] / "data" / "retrieval" / "paraphrases.json"
HELDOUT = DATA.with_name("heldout.json")
RESULTS = Path(__file__).resolve().parents[2] / "build" / "bench" / "retrieval.json"
FILES = 1000
CHATS = 120
TOP = 5


def facts() -> list[dict[str, str]]:
    """Both sets: the first (48 facts) and the held-out one (40), each fact tagged."""
    out: list[dict[str, str]] = []
    for name, path in (("first", DATA), ("heldout", HELDOUT)):
        out += [{**f, "set": name} for f in json.loads(path.read_text(encoding="utf-8"))]
    return out


def merge_report(bench_report: Callable[..., Path], figures: dict[str, float],
                 rows: list[list[object]], header: list[str]) -> None:
    """Both tests write retrieval.json: each keeps the other's figures."""
    old: dict[str, float] = {}
    if RESULTS.exists():
        old = json.loads(RESULTS.read_text())
    bench_report("retrieval", {**old, **figures}, rows, header)


# --- the folder of notes ---------------------------------------------------------------------


def write_folder(root: Path, rng: random.Random) -> dict[int, Path]:
    """1,000 mixed files; fact i is a paragraph of one note among filler paragraphs."""
    corpus = stdlib_corpus()
    paras = corpus.paragraphs
    where: dict[int, Path] = {}
    planted = facts()
    slots = rng.sample(range(FILES), len(planted))
    for n in range(FILES):
        kind = n % 4
        body = rng.sample(paras, 6)
        fact_no = slots.index(n) if n in slots else None
        if fact_no is not None:
            body.insert(rng.randrange(len(body) + 1), planted[fact_no]["fact"])
        if kind == 0:
            path = root / f"notes/n{n:04d}.md"
            text = f"# Note {n}\n\n" + "\n\n".join(body) + "\n"
        elif kind == 1:
            path = root / f"text/t{n:04d}.txt"
            text = "\n\n".join(body) + "\n"
        elif kind == 2:
            path = root / f"web/p{n:04d}.html"
            text = ("<html><head><style>p{}</style></head><body>"
                    + "".join(f"<p>{b}</p>" for b in body) + "</body></html>")
        else:
            name, source = corpus.files[n % len(corpus.files)]
            path = root / f"code/c{n:04d}_{name}"
            lines = source.splitlines()[:300]
            if fact_no is not None:
                lines.insert(len(lines) // 2, "")
                lines.insert(len(lines) // 2, "# " + planted[fact_no]["fact"])
                lines.insert(len(lines) // 2, "")
            text = "\n".join(lines) + "\n"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        if fact_no is not None:
            where[fact_no] = path
    return where


def lexical_files_per_s(root: Path, tmp: Path) -> float:
    """The baseline: the same files read, cut and put in the full-text index, no embedding."""
    from treechat.services.retrieval.extract import file_passages
    from treechat.services.retrieval.knowledge import walk

    index = KnowledgeIndex(tmp / "lexical.sqlite")
    started = time.perf_counter()
    files = list(walk([str(root)]))
    for path in files:
        st = path.stat()
        index.put_file("lex", str(path), st.st_mtime, st.st_size, file_passages(path))
    seconds = time.perf_counter() - started
    index.close()
    return len(files) / seconds


# --- chats -----------------------------------------------------------------------------------


def build_chats(store: Store, rng: random.Random) -> tuple[dict[int, str], dict[int, str]]:
    """Chats of filler turns; fact i said once by the user in one chat (node id returned) and
    once inside a long tool result in another (node id returned)."""
    corpus = stdlib_corpus()
    planted = facts()
    said = dict(zip(range(len(planted)), rng.sample(range(CHATS * 10), len(planted)),
                    strict=True))
    in_tool = dict(zip(range(len(planted)), rng.sample(range(CHATS * 10), len(planted)),
                       strict=True))
    said_at = {v: k for k, v in said.items()}
    tool_at = {v: k for k, v in in_tool.items()}
    store.call(lambda r: r.create_sessions(
        [Session(f"c{k:03d}", f"Chat {k}", None, "m", 1.0) for k in range(CHATS)]))
    user_nodes: dict[int, str] = {}
    tool_nodes: dict[int, str] = {}
    slot = 0
    for k in range(CHATS):
        sid = f"c{k:03d}"
        parent: str | None = None
        nodes: list[Node] = []
        for j in range(10):
            text = " ".join(rng.sample(corpus.sentences, 2))
            if slot in said_at:
                text = planted[said_at[slot]]["fact"] + " " + text
                user_nodes[said_at[slot]] = f"{sid}u{j}"
            nodes.append(Node(f"{sid}u{j}", 0, 1.0, sid, "user", output=text,
                              predecessor=parent))
            reply = rng.choice(corpus.paragraphs)
            nodes.append(Node(f"{sid}a{j}", 0, 1.0, sid, "assistant", output=reply,
                              predecessor=f"{sid}u{j}"))
            parent = f"{sid}a{j}"
            if slot in tool_at:
                _, source = corpus.files[slot % len(corpus.files)]
                lines = source.splitlines()[:600]
                lines.insert(len(lines) // 2, "")
                lines.insert(len(lines) // 2, "# " + planted[tool_at[slot]]["fact"])
                lines.insert(len(lines) // 2, "")
                nodes.append(Node(f"{sid}t{j}", 0, 1.0, sid, "tool", name="read_file",
                                  output="\n".join(lines), predecessor=parent))
                tool_nodes[tool_at[slot]] = f"{sid}t{j}"
                parent = f"{sid}t{j}"
            slot += 1
        head = parent or ""
        store.call(lambda r, ns=tuple(nodes), s=sid, h=head: r.apply_change(
            s, Change(ns, h), 1.0))
    return user_nodes, tool_nodes


def rss_mb(code: str) -> float:
    """Resident memory a snippet adds to a fresh interpreter, in MB."""
    script = ("import psutil, os; p = psutil.Process(); before = p.memory_info().rss\n"
              + code + "\nprint((p.memory_info().rss - before) / 1e6)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, env=None)
    return float(out.stdout.strip().splitlines()[-1])


SETS = ("heldout", "first")
FIGURE = {("question", "chats"): "paraphrase_recall_at_5_chats",
          ("exact", "chats"): "exact_recall_at_5_chats",
          ("question", "tool"): "tool_fact_paraphrase_recall_at_5",
          ("exact", "tool"): "tool_fact_recall_at_5"}


def suffix(name: str) -> str:
    return "" if name == "heldout" else "_first"


@pytest.mark.timeout(5400)
# apart: they can run side by side; "indexing" is the folder indexed and nothing asked
@pytest.mark.parametrize("part", ["indexing", "notes", "chats"])
def test_retrieval_quality_and_indexing(part: str, tmp_path: Path,
                                        bench_report: Callable[..., Path]) -> None:
    rng = random.Random(28 if part == "chats" else 27)
    planted = facts()
    root = tmp_path / "folder"
    where = write_folder(root, rng) if part != "chats" else {}
    default_embedder().load()
    fine_embedder().load()
    figures: dict[str, float] = {}
    with Store.open(tmp_path / "chats.duckdb") as store:
        service = KnowledgeService(store)

        async def note_hits(kind: str, which: str) -> tuple[float, float]:
            index, _ = await asyncio.to_thread(service._open)
            chosen = [(n, f) for n, f in enumerate(planted) if f["set"] == which]
            hybrid = lexical = 0
            for n, f in chosen:
                hits = await service.search(["bench"], f[kind], limit=TOP)
                hybrid += any(h.path == str(where[n]) and f["fact"] in h.text for h in hits)
                words = index.search(any_terms_query(f[kind]), ["bench"], TOP)
                lexical += any(h.path == str(where[n]) and f["fact"] in h.text for h in words)
            return hybrid / len(chosen), lexical / len(chosen)

        async def notes() -> dict[str, float]:
            await service.add("bench", [str(root)])
            shown: list[str] = []  # what the window's Knowledge panel would show

            def progress(p: IndexProgress) -> None:
                shown.append(f"{p.done}/{p.total} files, {p.files_per_s:.1f} files/s, "
                             f"{p.seconds_left:.0f} s left")

            report, seconds, gaps = await ticking(lambda: service.reindex("bench", progress))
            assert report.read == FILES and not report.skipped
            # the idle baseline right after, as long: the machine's load changes by the minute
            idle = await idle_gaps(min(seconds, 30.0))
            out = {"index_files_per_s": FILES / seconds, "index_progress_updates": len(shown),
                   **gap_figures(gaps), **gap_figures(idle, "_idle")}
            if part == "indexing":
                return out
            before, _ = await note_hits("question", "heldout")
            out["paraphrase_recall_at_5_notes_before_refine"] = before
            refined, seconds, gaps = await ticking(lambda: service.refine(["bench"], pause=0))
            out["refine_passages_per_s"] = refined / seconds
            out["refine_folder_s"] = seconds
            out.update(gap_figures(gaps, "_refine"))
            for which in SETS:
                for kind in ("question", "exact"):
                    hybrid, lexical = await note_hits(kind, which)
                    name = "paraphrase" if kind == "question" else "exact"
                    out[f"{name}_recall_at_5_notes{suffix(which)}"] = hybrid
                    out[f"{name}_recall_at_5_notes{suffix(which)}_lexical"] = lexical
            return out

        if part != "chats":
            figures.update(asyncio.run(notes()))
            figures["index_files_per_s_lexical"] = lexical_files_per_s(root, tmp_path)

        user_nodes, tool_nodes = build_chats(store, rng) if part == "chats" else ({}, {})
        engine = RetrievalEngine(store)
        quick_only = RetrievalEngine(store, fine=False)

        async def chat_hits(e: RetrievalEngine, kind: str, nodes: dict[int, str],
                            which: str) -> tuple[float, float]:
            index = e.fulltext
            chosen = [(n, f) for n, f in enumerate(planted) if f["set"] == which]
            hybrid = lexical = 0
            for n, f in chosen:
                hits = await e.search(f[kind], limit=TOP, catch_up=False)
                hybrid += any(h.node_id == nodes[n] and f["fact"] in h.text for h in hits)
                words = await store.run(
                    lambda r, q=f[kind]: index.search(any_terms_query(q), limit=TOP))
                lexical += any(p.node_id == nodes[n] and f["fact"] in p.text for p in words)
            return hybrid / len(chosen), lexical / len(chosen)

        async def chats() -> dict[str, float]:
            await engine.catch_up()
            out: dict[str, float] = {}
            out["paraphrase_recall_at_5_chats_wordllama"] = (
                await chat_hits(quick_only, "question", user_nodes, "heldout"))[0]
            refined, seconds, _ = await ticking(engine.refine)
            out["refine_chats_passages_per_s"] = refined / seconds
            for which in SETS:
                for kind in ("question", "exact"):
                    for what, nodes in (("chats", user_nodes), ("tool", tool_nodes)):
                        hybrid, lexical = await chat_hits(engine, kind, nodes, which)
                        name = FIGURE[kind, what] + suffix(which)
                        out[name] = hybrid
                        out[name + "_lexical"] = lexical
            return out

        if part == "chats":
            figures.update(asyncio.run(chats()))
    old: dict[str, float] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    figures = {**old, **figures}
    for which in SETS:
        for lx in ("", "_lexical"):
            sx = suffix(which) + lx
            for name in ("paraphrase", "exact"):
                both = [figures.get(f"{name}_recall_at_5_{w}{sx}") for w in ("notes", "chats")]
                if None not in both:
                    figures[f"{name}_recall_at_5{sx}"] = min(x for x in both if x is not None)
    figures["rss_embedder_mb"] = rss_mb(
        "from treechat.providers.embeddings import WordLlamaEmbedder\n"
        "from treechat.providers.embeddings_minilm import MiniLMEmbedder\n"
        "WordLlamaEmbedder().embed(['a question in other words'])\n"
        "MiniLMEmbedder().embed(['a question in other words'] * 8)")
    figures["rss_embedder_mb_wordllama"] = rss_mb(
        "from treechat.providers.embeddings import WordLlamaEmbedder\n"
        "WordLlamaEmbedder().embed(['a question in other words'])")
    figures["rss_embedder_mb_lexical"] = rss_mb(
        "import sqlite3\ncon = sqlite3.connect(':memory:')\n"
        "con.execute(\"create virtual table t using fts5(body)\")\n"
        "con.execute(\"select * from t where t match 'question'\").fetchall()")

    def row(k: str) -> list[object]:
        if k not in figures:
            return [k, "(not run yet)", "", ""]
        base = figures.get(k + "_lexical", figures.get(k + "_idle", 0.0))
        first = figures.get(k + "_first")
        return [k, f"{figures[k]:.3f}", f"{base:.3f}", "" if first is None else f"{first:.3f}"]

    rows: list[list[object]] = [row(k) for k in (
        "paraphrase_recall_at_5", "paraphrase_recall_at_5_notes", "paraphrase_recall_at_5_chats",
        "exact_recall_at_5", "exact_recall_at_5_notes", "exact_recall_at_5_chats",
        "tool_fact_recall_at_5", "tool_fact_paraphrase_recall_at_5", "index_files_per_s",
        "rss_embedder_mb")]
    def fig(k: str, digits: int = 3) -> str:
        return f"{figures[k]:.{digits}f}" if k in figures else "(not run yet)"

    def gui_row(k: str) -> list[object]:
        return [f"{k} indexing / refining (vs idle)", f"{fig(k, 1)} / {fig(k + '_refine', 1)}",
                fig(k + "_idle", 1), ""]

    rows += [["paraphrase_recall_at_5_notes_before_refine",
              fig("paraphrase_recall_at_5_notes_before_refine"), "", ""],
             ["paraphrase_recall_at_5_chats_wordllama (quick stage alone)",
              fig("paraphrase_recall_at_5_chats_wordllama"), "", ""],
             ["refine_passages_per_s (folder / chats)", fig("refine_passages_per_s", 1),
              fig("refine_chats_passages_per_s", 1), ""],
             *(gui_row(k) for k in ("gui_stall_max_ms", "gui_busy_max_ms", "gui_waiting_max_ms",
                                    "gui_blocked_max_ms", "gui_stall_p99_ms",
                                    "gui_busy_tick_max_ms", "gui_blocked_tick_max_ms"))]
    merge_report(bench_report, figures, rows,
                 ["figure", "hybrid (held-out set)", "lexical only", "hybrid (first set)"])
    if part == "indexing":
        assert figures["gui_busy_tick_max_ms"] < 50
    else:
        key = f"paraphrase_recall_at_5_{part}"
        assert figures[key] > figures[key + "_lexical"]
