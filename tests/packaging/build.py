"""The frozen bundle, built once per test run on a background thread.

Freezing the app and packing the .deb take minutes of mostly single-core work, so the run
starts them as soon as collection is done (see `tests/conftest.py`, which also moves the tests
that need the bundle to the end of the run) and the rest of the suite runs meanwhile; the
`bundle` fixture then only waits for what is left."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT = 1800


@dataclass(frozen=True)
class Bundle:
    dist: Path
    deb: Path
    root: Path


_live: set[subprocess.Popen[str]] = set()


@atexit.register
def _stop_live() -> None:
    """A run that ends early (-x, Ctrl+C) does not leave a build running behind it."""
    for process in list(_live):
        process.kill()
    if _build is not None:
        _build.remove()


def run(command: list[object], *, env: dict[str, str] | None = None,
        timeout: float = BUILD_TIMEOUT) -> subprocess.CompletedProcess[str]:
    process = subprocess.Popen([str(c) for c in command], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env)
    _live.add(process)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
    finally:
        _live.discard(process)
    done = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    assert done.returncode == 0, (
        f"{' '.join(map(str, command))} exited {done.returncode}\n"
        f"{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    )
    return done


class BackgroundBuild:
    def __init__(self) -> None:
        self.work = Path(tempfile.mkdtemp(prefix="treechat-bundle-"))
        self._bundle: Bundle | None = None
        self._error: BaseException | None = None
        self.timings = ""
        self._thread = threading.Thread(target=self._build, name="bundle-build", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wait(self) -> Bundle:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._bundle is not None
        return self._bundle

    def remove(self) -> None:
        # Over a gigabyte of build output; nothing is read from it afterwards.
        shutil.rmtree(self.work, ignore_errors=True)

    def _build(self) -> None:
        try:
            self._bundle = self._steps()
        except BaseException as exc:  # re-raised in the test that waits for the bundle
            self._error = exc

    def _steps(self) -> Bundle:
        work = self.work
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        started = time.perf_counter()
        run([sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN",
             "--distpath", work / "dist", "--workpath", work / "pyinstaller",
             ROOT / "packaging" / "treechat.spec"], env=env)
        frozen = time.perf_counter()
        # Uncompressed: what is checked here is the package's contents; its release (xz) size
        # is measured by tests/benchmarks/bench_package.py, and compressing takes minutes.
        run([ROOT / "installers" / "linux" / "build-deb.sh", "deb"],
            env={**env, "DIST": str(work / "dist" / "treechat"),
                 "OUT": str(work / "installers"), "DEB_COMPRESSION": "none"})
        packaged = time.perf_counter()
        (deb,) = (work / "installers").glob("treechat_*.deb")
        root = work / "root"
        run(["dpkg", "-x", deb, root])
        self.timings = (f"bundle: PyInstaller {frozen - started:.0f} s, "
                        f".deb {packaged - frozen:.0f} s, {deb.stat().st_size / 1e6:.0f} MB")
        return Bundle(work / "dist" / "treechat", deb, root)


_build: BackgroundBuild | None = None


def start_background_build() -> None:
    global _build
    if _build is None:
        _build = BackgroundBuild()
        _build.start()


def background_build() -> BackgroundBuild:
    """The run's build (started here if collection did not start it)."""
    start_background_build()
    assert _build is not None
    return _build
