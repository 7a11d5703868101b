"""Import benchmark: a 10,000-message ChatGPT export into a fresh store. Baselines run in the
same process: reading the file with `json.loads`, and a bare DuckDB bulk insert of 10,000
rows shaped like nodes (what the writes cost with no parsing, checks or bookkeeping)."""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from pathlib import Path

import duckdb
import pytest
from tests.support.exports import big_chatgpt_export

from treechat.services.importing import import_file, read_export
from treechat.store.database import Store

pytestmark = pytest.mark.bench

RUNS = 3


def bare_insert(path: Path, texts: list[str]) -> float:
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE t (id VARCHAR PRIMARY KEY, seq BIGINT, session_id VARCHAR, role VARCHAR,"
        " output JSON, predecessor VARCHAR, metadata JSON)"
    )
    ids = [f"n{i}" for i in range(len(texts))]
    columns = [
        ids, list(range(1, len(ids) + 1)), ["s"] * len(ids), ["user"] * len(ids),
        [json.dumps(t) for t in texts], [None, *ids[:-1]], ["{}"] * len(ids),
    ]
    started = time.perf_counter()
    con.execute("BEGIN TRANSACTION")
    con.execute(
        "INSERT INTO t SELECT * FROM (SELECT unnest(?), unnest(?), unnest(?), unnest(?), "
        "unnest(?), unnest(?), unnest(?))",
        columns,
    )
    con.execute("COMMIT")
    elapsed = time.perf_counter() - started
    con.close()
    return elapsed


def test_import_benchmark(tmp_path: Path, bench_report) -> None:  # type: ignore[no-untyped-def]
    data = big_chatgpt_export(conversations=20, per_conversation=500)
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    texts = [
        str(e["message"]["content"].get("parts", [e["message"]["content"].get("text")])[0])
        for c in data for e in c["mapping"].values() if e.get("message")
    ]
    assert len(texts) == 10_000

    load, parse, full, bare = [], [], [], []
    for run in range(RUNS):
        started = time.perf_counter()
        json.loads(path.read_text(encoding="utf-8"))
        load.append(time.perf_counter() - started)

        started = time.perf_counter()
        read_export(path)
        parse.append(time.perf_counter() - started)

        with Store.open(tmp_path / f"run{run}.duckdb") as store:
            started = time.perf_counter()
            summary = asyncio.run(import_file(store, path))
            full.append(time.perf_counter() - started)
            assert summary.nodes == 10_000

        bare.append(bare_insert(tmp_path / f"bare{run}.duckdb", texts))

    import_s = statistics.median(full)
    bare_s = statistics.median(bare)
    load_s = statistics.median(load)
    parse_s = statistics.median(parse)
    bench_report(
        "import",
        {
            "import_10k_s": import_s,
            "read_and_parse_10k_s": parse_s,
            "json_load_10k_s": load_s,
            "bare_bulk_insert_10k_s": bare_s,
            "import_vs_bare_insert": import_s / bare_s,
            "import_vs_json_load": import_s / load_s,
        },
        rows=[
            ("import 10,000 messages (20 conversations), median of 3", import_s),
            ("  of which reading + parsing the export", parse_s),
            ("json.loads of the same file (baseline)", load_s),
            ("bare DuckDB bulk insert of 10,000 rows (baseline)", bare_s),
        ],
        header=("figure", "seconds"),
    )
