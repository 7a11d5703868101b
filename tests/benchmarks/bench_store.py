"""Store benchmark: the cost of appending one node (with HEAD moving) and of loading a
10,000-node session and computing its active path. Baseline: a bare DuckDB INSERT."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import duckdb
import pytest

from treechat.core.dag import Change, Graph, active_path
from treechat.core.model import Node, Session
from treechat.store.database import Store

pytestmark = pytest.mark.bench


def chain(n: int, session: str) -> list[Node]:
    out: list[Node] = []
    prev = None
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        nid = f"{session}-{i}"
        out.append(
            Node(
                id=nid,
                seq=0,
                created_at=float(i),
                session_id=session,
                role=role,  # type: ignore[arg-type]
                output=f"message {i} " * 20,
                predecessor=prev,
            )
        )
        prev = nid
    return out


def test_store_benchmark(tmp_path: Path, bench_report) -> None:  # type: ignore[no-untyped-def]
    store = Store.open(tmp_path / "bench.duckdb")
    store.call(lambda r: r.create_session(Session("big", "Big", None, "m", 0.0)))
    store.call(lambda r: r.create_session(Session("small", "Small", None, "m", 0.0)))

    nodes = chain(10_000, "big")
    t0 = time.perf_counter()
    store.call(lambda r: r.apply_change("big", Change(tuple(nodes), nodes[-1].id), 1.0))
    bulk_10k_ms = (time.perf_counter() - t0) * 1000

    append_times = []
    prev: str | None = None
    for i in range(200):
        node = Node(
            id=f"s{i}",
            seq=0,
            created_at=0.0,
            session_id="small",
            role="user",
            output="hello there",
            predecessor=prev,
        )
        t0 = time.perf_counter()
        store.call(lambda r, n=node: r.apply_change("small", Change((n,), n.id), 1.0))
        append_times.append((time.perf_counter() - t0) * 1000)
        prev = node.id

    load_times = []
    for _ in range(5):
        t0 = time.perf_counter()
        loaded = store.call(lambda r: r.session_nodes("big"))
        head = store.call(lambda r: r.get_session("big")).head  # type: ignore[union-attr]
        path = active_path(Graph(loaded), head)
        load_times.append((time.perf_counter() - t0) * 1000)
        assert len(path) == 10_000
    store.close()

    raw = duckdb.connect(str(tmp_path / "raw.duckdb"))
    raw.execute("CREATE TABLE t (id VARCHAR PRIMARY KEY, v VARCHAR)")
    raw_times = []
    for i in range(200):
        t0 = time.perf_counter()
        raw.execute("INSERT INTO t VALUES (?, ?)", [str(i), "hello there"])
        raw_times.append((time.perf_counter() - t0) * 1000)
    raw.close()

    append_ms = statistics.median(append_times)
    load_ms = statistics.median(load_times)
    raw_ms = statistics.median(raw_times)
    bench_report(
        "store",
        {
            "append_node_ms": append_ms,
            "load_10k_session_ms": load_ms,
            "bulk_append_10k_ms": bulk_10k_ms,
            "append_vs_bare_insert": append_ms / raw_ms,
        },
        rows=[
            ("append one node + move HEAD (median of 200)", append_ms),
            ("bare DuckDB INSERT, same machine (median of 200)", raw_ms),
            ("load 10,000-node session + active path (median of 5)", load_ms),
            ("append 10,000 nodes in one transaction", bulk_10k_ms),
        ],
        header=("figure", "ms"),
    )
