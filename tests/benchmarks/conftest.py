"""Shared reporting for benchmarks: each prints a table and writes build/bench/<name>.json."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).resolve().parents[2] / "build" / "bench"


def write_report(
    name: str,
    figures: Mapping[str, float],
    rows: Sequence[Sequence[object]] = (),
    header: Sequence[str] = (),
) -> Path:
    """Print a table and write the flat figure -> number object for `name`."""
    BENCH_DIR.mkdir(parents=True, exist_ok=True)
    out = BENCH_DIR / f"{name}.json"
    out.write_text(json.dumps({k: float(v) for k, v in figures.items()}, indent=2) + "\n")
    table = [list(map(str, header))] if header else []
    table += [[f"{c:.3f}" if isinstance(c, float) else str(c) for c in r] for r in rows]
    if not table:
        table = [["figure", "value"], *([k, f"{v:.3f}"] for k, v in figures.items())]
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    print(f"\n== {name} ==")
    for i, r in enumerate(table):
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)))
        if i == 0 and header:
            print("  ".join("-" * w for w in widths))
    print(f"-> {out}")
    return out


@pytest.fixture
def bench_report() -> Callable[..., Path]:
    return write_report
