"""A few of the benchmark's hostile inputs, run as a user would meet them: each `treechat`
process ends within its bound with one line saying what was refused, never a traceback.
(`bench_reliability` runs the whole set and measures each one's peak memory.)"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from tests.support.hostile_probes import (
    Probe,
    cli_env,
    deep_claude_export,
    run_probes,
    sparse_file,
    treechat,
)
from tests.support.loopback_server import LoopbackProvider, Reply

pytestmark = pytest.mark.slow


def test_hostile_inputs_end_in_one_line_within_their_bounds(
    tmp_path: Path, loopback: LoopbackProvider
) -> None:
    loopback.queue(*(Reply(text="a reply " * 40, tokens_per_second=40) for _ in range(8)))
    base = ["--model", "openai/gpt-4o-mini", "--api-base", loopback.openai_base]
    sparse = sparse_file(tmp_path / "sparse.txt", 5 * 1024**3)
    deep = deep_claude_export(tmp_path / "deep.json", 200_000)
    probes = [
        Probe("sparse 5 GB file", treechat("send", "--new", "--file", str(sparse), *base),
              expect="larger than 64 MB, the most that is read from it; nothing was sent"),
        Probe("an endless pipe", treechat("send", "--new", "-", *base), stdin="yes",
              expect="standard input is larger than 64 MB"),
        Probe("deep JSON", treechat("import", str(deep)),
              expect="a message holds a value nested deeper than 200 levels"),
        Probe("empty backup name", treechat("backup", "restore", ""),
              expect="give the name of a backup"),
        *(Probe(f"Ctrl+C at {at} s", treechat("send", "--new", f"stop {at}", *base),
                sigint_after=at) for at in (0.15, 0.6, 1.2, 2.0)),
    ]
    if os.path.exists("/dev/zero"):
        probes.append(Probe("/dev/zero", treechat("send", "--new", "--file", "/dev/zero", *base),
                            expect="/dev/zero is larger than 64 MB"))
    report = run_probes(probes, cli_env(tmp_path / "data"))
    for result in report.results:
        assert not result.traceback, (result.name, result.stderr)
        assert not result.hang, result.name
        assert result.answered, (result.name, result.stderr)
        if result.name.startswith("Ctrl+C"):
            assert result.returncode == 130, (result.name, result.stderr)
            assert result.stderr.strip().splitlines()[-1].startswith("treechat: ")


def test_a_probes_peak_memory_is_its_own_not_the_runners(tmp_path: Path) -> None:
    """A child started from a large process reports its own peak (the kernel carries the
    forking process's high-water mark into `wait4`'s figure across exec)."""
    ballast = bytearray(300 * 1024 * 1024)
    ballast[:: 4096] = b"\1" * len(ballast[:: 4096])  # resident, not only reserved
    small = Probe("a small process", (sys.executable, "-c", "import time; time.sleep(0.5)"))
    (result,) = run_probes([small], dict(os.environ)).results
    assert result.returncode == 0
    assert 1 < result.peak_rss_mb < 100
    del ballast
