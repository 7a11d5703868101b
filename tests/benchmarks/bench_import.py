"""Import benchmark.

* `import_10k_s` / `import_100k_s`: a 10,000- and a 100,000-message ChatGPT export into a fresh
  store. Baselines run beside them: reading the file with `json.loads`, and a bare DuckDB bulk
  insert of as many rows shaped like nodes (what the writes cost with no parsing, checks or
  bookkeeping).
* `import_1gb_peak_rss_mb`: peak RSS of a child process importing a generated 1 GB export
  (long, varied messages), beside the same child before it imports (Python, DuckDB and
  Treechat loaded) and a child that only stream-parses the file with `ijson` (the floor for
  reading it at all without holding it whole).
* `zip_bomb_1gib_peak_rss_mb`: peak RSS added while a 1 GiB zip bomb is refused.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import duckdb
import pytest
from tests.support.exports import big_chatgpt_export, write_chatgpt_export

from treechat.services.transfer.export_reading import read_export
from treechat.services.transfer.importing import import_file
from treechat.store.database import Store

pytestmark = pytest.mark.bench

RUNS = 3
ROOT = Path(__file__).resolve().parents[2]


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


def texts_of(data: list[dict[str, object]]) -> list[str]:
    return [
        str(e["message"]["content"].get("parts", [e["message"]["content"].get("text")])[0])
        for c in data for e in c["mapping"].values() if e.get("message")  # type: ignore[attr-defined]
    ]


def timed_import(tmp_path: Path, name: str, path: Path, expected: int) -> float:
    with Store.open(tmp_path / f"{name}.duckdb") as store:
        started = time.perf_counter()
        summary = asyncio.run(import_file(store, path))
        elapsed = time.perf_counter() - started
        assert summary.nodes == expected
    return elapsed


# The child processes: each prints one JSON object. RSS is the kernel's peak for the process
# (VmHWM), read before and after the work.
IMPORT_CHILD = r"""
import asyncio, json, sys, time
from pathlib import Path
from treechat.services.transfer.importing import ImportFileError, import_file
from treechat.store.database import Store
def peak():  # the kernel's high-water mark for this process (ru_maxrss survives exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"): return int(line.split()[1]) / 1024
path, db = Path(sys.argv[1]), Path(sys.argv[2])
with Store.open(db) as store:
    idle = peak()
    started = time.perf_counter()
    try:
        summary = asyncio.run(import_file(store, path))
        outcome = {"nodes": summary.nodes, "sessions": summary.sessions}
    except ImportFileError as exc:
        outcome = {"refused": str(exc)}
    outcome.update(seconds=time.perf_counter() - started, idle_mb=idle, peak_mb=peak())
print(json.dumps(outcome))
"""

PARSE_CHILD = r"""
import json, sys, ijson
def peak():  # the kernel's high-water mark for this process (ru_maxrss survives exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"): return int(line.split()[1]) / 1024
idle = peak()
with open(sys.argv[1], "rb") as f:
    n = sum(1 for _ in ijson.items(f, "item", use_float=True))
print(json.dumps({"conversations": n, "idle_mb": idle, "peak_mb": peak()}))
"""


def child(script: str, *args: Path) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", script, *map(str, args)], check=True,
                         capture_output=True, text=True, cwd=ROOT).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def write_bomb(path: Path, mib: int) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf, zf.open(
        "conversations.json", "w", force_zip64=True
    ) as member:
        member.write(b"[")
        block = b" " * (1024 * 1024)
        for _ in range(mib):
            member.write(block)
        member.write(b"]")


@pytest.mark.timeout(3600)  # the 1 GB import alone takes minutes
def test_import_benchmark(tmp_path: Path, bench_report) -> None:  # type: ignore[no-untyped-def]
    data = big_chatgpt_export(conversations=20, per_conversation=500)
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    texts = texts_of(data)
    assert len(texts) == 10_000

    load, parse, full, bare = [], [], [], []
    for run in range(RUNS):
        started = time.perf_counter()
        json.loads(path.read_text(encoding="utf-8"))
        load.append(time.perf_counter() - started)

        started = time.perf_counter()
        read_export(path)
        parse.append(time.perf_counter() - started)

        full.append(timed_import(tmp_path, f"run{run}", path, 10_000))
        bare.append(bare_insert(tmp_path / f"bare{run}.duckdb", texts))

    # 100,000 messages: the same shape, ten times over; once (it takes a while).
    data = big_chatgpt_export(conversations=200, per_conversation=500)
    big = tmp_path / "conversations-100k.json"
    big.write_text(json.dumps(data), encoding="utf-8")
    texts = texts_of(data)
    del data
    assert len(texts) == 100_000
    started = time.perf_counter()
    json.loads(big.read_text(encoding="utf-8"))
    load_100k = time.perf_counter() - started
    import_100k = timed_import(tmp_path, "run100k", big, 100_000)
    bare_100k = bare_insert(tmp_path / "bare100k.duckdb", texts)
    del texts

    # A 1 GB export, imported by a child process whose peak RSS is the figure.
    gig = tmp_path / "conversations-1gb.json"
    messages = write_chatgpt_export(gig, target_bytes=1_000_000_000)
    size_mb = gig.stat().st_size / 1e6
    parsed = child(PARSE_CHILD, gig)
    imported = child(IMPORT_CHILD, gig, tmp_path / "run1gb.duckdb")
    assert imported["nodes"] == messages
    gig.unlink()

    bomb = tmp_path / "bomb.zip"
    write_bomb(bomb, 1024)
    refused = child(IMPORT_CHILD, bomb, tmp_path / "bomb.duckdb")
    assert "refused" in refused

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
            "import_100k_s": import_100k,
            "json_load_100k_s": load_100k,
            "bare_bulk_insert_100k_s": bare_100k,
            "import_100k_vs_bare_insert": import_100k / bare_100k,
            "import_1gb_peak_rss_mb": imported["peak_mb"],
            "import_1gb_idle_rss_mb": imported["idle_mb"],
            "import_1gb_s": imported["seconds"],
            "import_1gb_messages": float(messages),
            "export_1gb_size_mb": size_mb,
            "parse_only_1gb_peak_rss_mb": parsed["peak_mb"],
            "zip_bomb_1gib_peak_rss_mb": refused["peak_mb"],
            "zip_bomb_1gib_idle_rss_mb": refused["idle_mb"],
            "zip_bomb_1gib_s": refused["seconds"],
        },
        rows=[
            ("import 10,000 messages (20 conversations), median of 3 (s)", import_s),
            ("  of which reading + parsing the export (s)", parse_s),
            ("json.loads of the same file (baseline, s)", load_s),
            ("bare DuckDB bulk insert of 10,000 rows (baseline, s)", bare_s),
            ("import 100,000 messages (200 conversations), once (s)", import_100k),
            ("json.loads of the same file (baseline, s)", load_100k),
            ("bare DuckDB bulk insert of 100,000 rows (baseline, s)", bare_100k),
            (f"import a {size_mb:,.0f} MB export ({messages:,} messages) (s)",
             imported["seconds"]),
            ("  peak RSS of the importing process (MB)", imported["peak_mb"]),
            ("  the same process before importing (MB)", imported["idle_mb"]),
            ("  a process only stream-parsing the file (baseline, MB)", parsed["peak_mb"]),
            ("refuse a 1 GiB zip bomb: peak RSS (MB)", refused["peak_mb"]),
            ("  before reading it (MB)", refused["idle_mb"]),
        ],
        header=("figure", "value"),
    )
