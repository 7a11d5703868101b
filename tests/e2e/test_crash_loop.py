"""The crash loop, short: `treechat send` killed with SIGKILL at random points from spawn to
the end of the reply; after each kill nothing acknowledged is lost, a started reply is
recovered, and the graph has no duplicates or dangling edges. `bench_reliability` runs it long.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.crash_loop import run_crash_loop


def test_sigkill_at_random_points_loses_nothing_acknowledged(tmp_path: Path) -> None:
    report = run_crash_loop(tmp_path / "data", kills=4, seed=2101)
    assert report.store_failures == 0
    assert report.lost_acknowledged == 0
    assert report.duplicates == 0
    assert report.orphan_edges == 0
    assert report.recovered_partial_ratio == 1.0
    assert len(report.kills) == 4
