"""Reliability figures: the crash loop run long (SIGKILL at random points of `treechat send`
against a slow loopback provider, the store released across the provider's wait), a probe
set of hostile inputs, and what a backup costs on a 1 GB store.

Figures (build/bench/reliability.json): kills (at least 200), lost_acknowledged (must be 0),
recovered_partial_ratio, tail_chars_lost_p95 (characters the provider had sent that the
recovered reply lacks: the draft is flushed about once a second), backup_1gb_s (a consistent
DuckDB copy with `COPY FROM DATABASE`), beside its baseline file_copy_1gb_s (a byte copy of the
same checkpointed file, which is not safe on a live store), restore_1gb_s and
integrity_check_1gb_s (every block of every table read back). From the probe set (each probe
one `treechat` process bounded at 60 s): max_rss_mb_bad_inputs (the largest peak resident
memory of any probe, at most 300), tracebacks_bad_inputs (a traceback or an abort, must be
0), hangs_bad_inputs (still running at 60 s, must be 0), probes_bad_inputs, and
baseline_rss_mb (the same command with ordinary input, for scale).
"""

from __future__ import annotations

import functools
import os
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.support.big_store import fill_store
from tests.support.crash_loop import run_crash_loop
from tests.support.hostile_probes import ProbeReport
from tests.support.hostile_set import hostile_probe_set

from treechat.store import backup as backups
from treechat.store import integrity
from treechat.store.database import Store

pytestmark = pytest.mark.bench

KILLS = int(os.environ.get("TREECHAT_BENCH_KILLS", "200"))
STORE_BYTES = 1_000_000_000


def p95(values: list[int]) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))])


def build_gigabyte_store(path: Path) -> int:
    """A store of about 1 GB of messages whose text does not compress away (hex digests)."""
    return fill_store(path, STORE_BYTES)


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


@pytest.mark.timeout(7200)  # 200 kills take most of an hour on a loaded 2-core machine
def test_reliability(tmp_path: Path, bench_report: Callable[..., Path]) -> None:
    probes: ProbeReport
    baseline_rss: float
    probes, baseline_rss = hostile_probe_set(tmp_path / "probes")
    report = run_crash_loop(tmp_path / "crash", kills=KILLS, seed=21)
    lost_tail = report.tail_chars_lost()

    big = tmp_path / "big" / "treechat.duckdb"
    rows = build_gigabyte_store(big)
    size = os.path.getsize(big)
    scale = STORE_BYTES / size  # figures are per gigabyte

    copies: list[float] = []
    backup_times: list[float] = []
    for _ in range(2):  # side by side, alternating, after one warm read of the file
        target = tmp_path / "copy.duckdb"
        copies.append(timed(functools.partial(shutil.copyfile, big, target)) * scale)
        target.unlink()
        with Store.open(big) as store:
            assert store.integrity(timeout=600) is not None
            backup_times.append(timed(functools.partial(store.backup, "bench")) * scale)
    latest = backups.list_backups(big)[0]
    restore_s = timed(lambda: backups.restore_backup(latest.path, big)) * scale

    import duckdb

    con = duckdb.connect(str(big), read_only=True)
    try:
        check_s = timed(lambda: integrity.full_check(con, big)) * scale
    finally:
        con.close()

    figures = {
        "kills": len(report.kills),
        "lost_acknowledged": report.lost_acknowledged,
        "recovered_partial_ratio": report.recovered_partial_ratio,
        "tail_chars_lost_p95": p95(lost_tail),
        "duplicates": report.duplicates,
        "orphan_edges": report.orphan_edges,
        "kills_while_streaming": len(report.started),
        "backup_1gb_s": statistics.median(backup_times),
        "file_copy_1gb_s": statistics.median(copies),
        "backup_vs_file_copy": statistics.median(backup_times) / statistics.median(copies),
        "restore_1gb_s": restore_s,
        "integrity_check_1gb_s": check_s,
        "store_rows": rows,
        "store_mb": size / 1e6,
        "max_rss_mb_bad_inputs": probes.max_rss_mb,
        "tracebacks_bad_inputs": probes.tracebacks,
        "hangs_bad_inputs": probes.hangs,
        "probes_bad_inputs": len(probes.results),
        "baseline_rss_mb": baseline_rss,
    }
    bench_report(
        "reliability",
        figures,
        rows=[(k, f"{v:.3f}" if isinstance(v, float) else v) for k, v in figures.items()]
        + [(f"probe {r.name}", f"rc {r.returncode}, {r.seconds:.1f} s, {r.peak_rss_mb:.0f} MB"
            + (", TRACEBACK" if r.traceback else "") + (", HANG" if r.hang else ""))
           for r in probes.results],
        header=("figure", "value"),
    )
    shutil.rmtree(tmp_path / "big", ignore_errors=True)
    assert report.lost_acknowledged == 0
    assert report.duplicates == 0 and report.orphan_edges == 0
    assert report.store_failures == 0
    assert len(report.kills) >= 200 or KILLS < 200
    assert probes.tracebacks == 0, [r.stderr for r in probes.results if r.traceback]
    assert probes.hangs == 0, [r.name for r in probes.results if r.hang]
    assert probes.max_rss_mb <= 300
    assert not probes.unanswered, probes.unanswered


def test_send_memory_by_stage(tmp_path: Path, bench_report: Callable[..., Path]) -> None:
    """What each stage of a send adds to resident memory (tests/support/send_stages.py), the
    stages one after another in a child process, beside the command's own peak
    (`baseline_rss_mb` above runs the real command, its stages overlapping on threads).
    Figures (build/bench/send_memory.json): stage_<n>_mb per stage and send_stages_peak_mb."""
    import json
    import subprocess
    import sys

    from tests.support.hostile_probes import cli_env
    from tests.support.loopback_server import LoopbackProvider, Reply

    server = LoopbackProvider()
    server.queue(*(Reply(text=" ".join(f"w{i}" for i in range(120))) for _ in range(2)))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tests.support.send_stages", server.openai_base,
             str(tmp_path / "data")],
            env=cli_env(tmp_path / "data"), capture_output=True, text=True, timeout=600,
            check=False, cwd=Path(__file__).resolve().parents[2],
        )
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr[-3000:]
    stages = json.loads(done.stdout.strip().splitlines()[-1])
    figures = {f"stage_{i}_mb": added for i, (_, added, _, _) in enumerate(stages)}
    figures["send_stages_peak_mb"] = max(peak for *_, peak in stages)
    bench_report(
        "send_memory",
        figures,
        rows=[(i, name, added, rss, peak) for i, (name, added, rss, peak) in enumerate(stages)],
        header=("n", "stage", "added MB", "resident MB", "peak MB"),
    )
    assert [name for name, *_ in stages][-1] == "second streamed reply"
