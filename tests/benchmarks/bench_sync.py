"""Sync benchmark.

* `first_sync_10k_s`: a computer holding 10,000 messages syncs with an empty folder for the
  first time (derive the key, seal, write), then a second computer's first sync takes them
  all in (derive the key, read, open, check, merge); the two parts are reported too. Beside
  it, the baseline a user might otherwise reach for: copying the DuckDB file itself
  (`copy_store_file_10k_s`), which is what breaks when two computers write it.
* `merge_100k_nodes_s`: the receiving side of a first sync of 100,000 messages (read, open,
  check and merge into the store), beside a bare DuckDB bulk insert of as many node rows
  with no parsing, checks or bookkeeping (`bare_insert_100k_s`).
* `bytes_per_node`: what the target holds per message after the 10,000-message sync, beside
  the DuckDB file's own bytes per message (`store_bytes_per_node`).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from pathlib import Path

import duckdb
import pytest
from tests.support.clock import FakeClock
from tests.support.sync_devices import PASSPHRASE, Device, connect, make_device
from tests.support.synthetic_graph import conversation

from treechat.core.model import Session
from treechat.services.sync import crypto
from treechat.services.sync.targets import FolderTarget

pytestmark = pytest.mark.bench

SESSION_SIZE = 1000


def fill(device: Device, count: int) -> None:
    def write(repo: object) -> None:
        from treechat.store.repository import Repository

        assert isinstance(repo, Repository)
        sessions = count // SESSION_SIZE
        with repo.transaction():
            repo.create_sessions([Session(id=f"s{i}", title=f"Chat {i}", head=None, model="",
                                          created_at=1_700_000_000.0 + i)
                                  for i in range(sessions)])
            for i in range(sessions):
                nodes = conversation(SESSION_SIZE, seed=i, session_id=f"s{i}")
                stored = repo.append_nodes(nodes)
                repo.set_head(f"s{i}", stored[-1].id, 1_700_000_000.0, known=True)

    device.store.call(write)


def target_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def bare_insert(path: Path, count: int) -> float:
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE t (id VARCHAR PRIMARY KEY, seq BIGINT, created_at DOUBLE, "
        "session_id VARCHAR, role VARCHAR, output JSON, predecessor VARCHAR, metadata JSON)")
    nodes = [n for i in range(count // SESSION_SIZE)
             for n in conversation(SESSION_SIZE, seed=i, session_id=f"s{i}")]
    columns = [[n.id for n in nodes], [n.seq for n in nodes], [n.created_at for n in nodes],
               [n.session_id for n in nodes], [n.role for n in nodes],
               [json.dumps(n.output) for n in nodes], [n.predecessor for n in nodes],
               [json.dumps(n.metadata) for n in nodes]]
    started = time.perf_counter()
    con.execute("BEGIN TRANSACTION")
    con.execute("INSERT INTO t SELECT * FROM (SELECT " + ", ".join(["unnest(?)"] * 8) + ")",
                columns)
    con.execute("COMMIT")
    elapsed = time.perf_counter() - started
    con.close()
    return elapsed


async def first_sync(root: Path, count: int) -> dict[str, float]:
    (root / "target").mkdir(parents=True)
    clock = FakeClock()
    a = make_device(root, "sender", FolderTarget(root / "target"), clock)
    b = make_device(root, "receiver", FolderTarget(root / "target"), clock)
    try:
        fill(a, count)
        crypto._stretch.cache_clear()
        started = time.perf_counter()
        await connect(a, str(root / "target"))  # a new target: the key is derived here
        sent = await a.sync.sync_now()
        send_s = time.perf_counter() - started
        assert sent.sent_nodes == count
        crypto._stretch.cache_clear()  # the other computer derives it again
        started = time.perf_counter()
        await connect(b, str(root / "target"), PASSPHRASE)
        connected = time.perf_counter()
        got = await b.sync.sync_now()
        done = time.perf_counter()
        assert got.received_nodes == count
        a_path = a.store.path
        a.store.close()
        started_copy = time.perf_counter()
        shutil.copyfile(a_path, root / "copy.duckdb")
        copy_s = time.perf_counter() - started_copy
        return {"send_s": send_s, "receive_s": done - started, "merge_s": done - connected,
                "copy_s": copy_s, "target_bytes": float(target_bytes(root / "target")),
                "store_bytes": float(a_path.stat().st_size)}
    finally:
        if not a.store.released:
            a.close()
        b.close()


def test_sync_benchmark(tmp_path: Path, bench_report) -> None:  # type: ignore[no-untyped-def]
    small = asyncio.run(first_sync(tmp_path / "10k", 10_000))
    large = asyncio.run(first_sync(tmp_path / "100k", 100_000))
    bare = bare_insert(tmp_path / "bare.duckdb", 100_000)
    figures = {
        "first_sync_10k_s": small["send_s"] + small["receive_s"],
        "first_sync_10k_send_s": small["send_s"],
        "first_sync_10k_receive_s": small["receive_s"],
        "copy_store_file_10k_s": small["copy_s"],
        "merge_100k_nodes_s": large["merge_s"],
        "bare_insert_100k_s": bare,
        "merge_100k_vs_bare_insert": large["merge_s"] / bare,
        "bytes_per_node": small["target_bytes"] / 10_000,
        "store_bytes_per_node": small["store_bytes"] / 10_000,
    }
    bench_report("sync", figures)
    # The 5 s budget for merge_100k_nodes_s is met on a quiet machine (about 2.5 s here);
    # what the code controls, whatever the load, is its cost over DuckDB's own bulk insert.
    assert figures["merge_100k_vs_bare_insert"] <= 4.0
