"""Packaging benchmark: the size of the frozen onedir and of the .deb, and the frozen app's
start-up to first paint against the same start-up from source, run side by side.

Uses build/dist/treechat and build/installers/*.deb from `make package` when they are newer
than the packaging recipe, else builds them first (run `make package` after changing the app
for figures of the current code)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "build" / "dist" / "treechat"
INSTALLERS = ROOT / "build" / "installers"
ROUNDS = 7
MB = 1024 * 1024


def newest_recipe() -> float:
    trees = [ROOT / "packaging", ROOT / "resources", ROOT / "installers" / "linux"]
    files = [p for t in trees for p in t.rglob("*") if p.is_file()]
    return max(p.stat().st_mtime for p in [*files, ROOT / "pyproject.toml"])


def ensure_bundle() -> Path:
    from treechat import __version__

    debs = list(INSTALLERS.glob(f"treechat_{__version__}_*.deb"))
    exe = DIST / "treechat"
    fresh = exe.exists() and debs and min(exe.stat().st_mtime,
                                          debs[0].stat().st_mtime) > newest_recipe()
    if not fresh:
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        subprocess.run([sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN",
                        "--distpath", str(DIST.parent), "--workpath",
                        str(ROOT / "build" / "pyinstaller"),
                        str(ROOT / "packaging" / "treechat.spec")], check=True, env=env)
        subprocess.run([str(ROOT / "installers" / "linux" / "build-deb.sh"), "deb"], check=True)
        debs = list(INSTALLERS.glob(f"treechat_{__version__}_*.deb"))
    return debs[0]


def tree_bytes(tree: Path) -> int:
    return sum(p.lstat().st_size for p in tree.rglob("*") if p.is_file() or p.is_symlink())


def seconds_to_first_paint(command: list[str], env: dict[str, str]) -> float:
    """From spawning the process to the smoke mode reporting the window's first paint."""
    from treechat.smoke import PAINTED_MARKER

    painted = None
    started = time.perf_counter()
    with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True) as process:
        assert process.stderr is not None
        for line in process.stderr:
            if PAINTED_MARKER in line and painted is None:
                painted = time.perf_counter() - started
        process.wait(timeout=60)
    assert process.returncode == 0 and painted is not None, f"{command} failed"
    return painted


def test_package_benchmark(bench_report: Callable[..., Path], tmp_path: Path) -> None:
    deb = ensure_bundle()
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "LANG": "C.UTF-8", "QT_QPA_PLATFORM": "offscreen",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    source_cli = Path(sys.executable).with_name("treechat")
    frozen = [str(DIST / "treechat"), "--smoke", "--startup-only"]
    source = [str(source_cli), "--smoke", "--startup-only"]
    # one untimed start of each, so both read their files from a warm page cache
    seconds_to_first_paint(frozen, env)
    seconds_to_first_paint(source, env)
    frozen_s, source_s = [], []
    for _ in range(ROUNDS):
        frozen_s.append(seconds_to_first_paint(frozen, env))
        source_s.append(seconds_to_first_paint(source, env))
    frozen_median, source_median = statistics.median(frozen_s), statistics.median(source_s)
    onedir_mb = tree_bytes(DIST) / MB
    deb_mb = deb.stat().st_size / MB
    figures = {
        "onedir_mb": onedir_mb,
        "deb_mb": deb_mb,
        "frozen_startup_vs_source": frozen_median / source_median,
        "frozen_first_paint_s": frozen_median,
        "source_first_paint_s": source_median,
    }
    bench_report(
        "package",
        figures,
        rows=[
            ("onedir (MB)", onedir_mb, ""),
            (".deb (MB, target < 200)", deb_mb, ""),
            ("first paint, frozen (s, median)", frozen_median, f"{ROUNDS} rounds"),
            ("first paint, source (s, median)", source_median, f"{ROUNDS} rounds"),
            ("frozen / source (target <= 1.2)", frozen_median / source_median, ""),
        ],
        header=("figure", "value", "note"),
    )
