"""A working day in minutes: 2,000 turns through the window against a loopback server (in a
process of its own, so its record of requests is not ours), a hundred in each of twenty chats,
with a look at the chat before every tenth turn, a file attached every tenth message, a retry
and a switch back to the first version every twenty-fifth, and a search of every chat every
fiftieth. Resident memory and the count of live Qt objects are read after the first 200 turns
(everything has been loaded and used once by then) and again at the end; then the window sits
idle and its CPU use is read, side by side with a bare PySide6 window idling in a process of
its own.

Writes build/bench/soak.json: rss_growth_mb, qt_objects_growth, idle_cpu_percent (+ the bare
window's idle CPU, the turns per second and the resident memory at both points)."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from PySide6.QtCore import QObject
from PySide6.QtWidgets import QApplication

from treechat.services.models.catalog import ModelChoice

from .bench_window import close_window, open_window

pytestmark = [pytest.mark.bench, pytest.mark.timeout(3600),
              pytest.mark.qt_log_ignore("This plugin does not support")]

ROOT = Path(__file__).resolve().parents[2]
TURNS = int(os.environ.get("TREECHAT_SOAK_TURNS", "2000"))
WARM_UP = TURNS // 10
CHATS = 20
IDLE_S = 10.0
MODEL = "openai/soak-model"
ENV = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen"),
       "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

# The loopback provider in its own process; it forgets what it was sent as it goes.
SERVER = """
import sys, threading, time
from tests.support.loopback_server import LoopbackProvider
server = LoopbackProvider()
print(server.openai_base, flush=True)
def forget():
    while True:
        time.sleep(1.0)
        del server.requests[:]
threading.Thread(target=forget, daemon=True).start()
sys.stdin.read()  # until the benchmark closes our stdin
server.stop()
"""

BARE_IDLE = """
import sys, time, psutil
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMainWindow
app = QApplication(sys.argv[:1])
window = QMainWindow()
window.resize(1180, 760)
window.show()
def measure():
    process = psutil.Process()
    before, started = sum(process.cpu_times()[:2]), time.monotonic()
    def done():
        used = sum(process.cpu_times()[:2]) - before
        print(100 * used / (time.monotonic() - started), flush=True)
        app.quit()
    QTimer.singleShot(int(float(sys.argv[1]) * 1000), done)
QTimer.singleShot(2000, measure)
app.exec()
"""


def qt_objects(app: QApplication) -> int:
    """Live Qt objects the application can reach: its widgets and everything under them."""
    roots = [*app.topLevelWidgets(), app]
    return sum(1 + len(root.findChildren(QObject)) for root in roots)


def qt_classes(app: QApplication) -> Counter[str]:
    """The same objects counted by class: what grew is named in the table."""
    roots = [*app.topLevelWidgets(), app]
    return Counter(type(o).__name__ for root in roots for o in [root, *root.findChildren(QObject)])


def rss_mb() -> float:
    gc.collect()
    return psutil.Process().memory_info().rss / 2**20


async def until(predicate: Callable[[], object], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.002)


def test_soak(tmp_path: Path, qapp: QApplication, bench_report) -> None:  # type: ignore[no-untyped-def]
    server = subprocess.Popen([sys.executable, "-c", SERVER], cwd=ROOT, env=ENV,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    base = server.stdout.readline().strip()
    note = tmp_path / "notes.txt"
    note.write_text("Meeting notes: the cache is keyed by prefix; keep the stable parts first.\n"
                    * 40)
    bench = open_window(qapp, tmp_path / "data", ModelChoice(MODEL, "Soak", "openai",
                                                             api_base=base))
    loop, window, controller = bench.loop, bench.window, bench.controller
    finished: list[str] = []
    controller.turnFinished.connect(finished.append)
    samples: dict[str, float] = {}
    classes: dict[str, Counter[str]] = {}
    chats: list[str] = []

    async def turn(text: str) -> None:
        done = len(finished)
        window.composer.set_text(text)
        t0 = time.perf_counter()
        window.composer.submit()
        await until(lambda: len(finished) > done)
        t1 = time.perf_counter()
        await until(lambda: not controller.turns.is_running())
        if os.environ.get("SOAK_DEBUG"):
            print(f"turn {t1 - t0:.3f} then {time.perf_counter() - t1:.3f}", flush=True)

    async def scenario() -> None:
        await controller.start()
        started = time.perf_counter()
        for i in range(TURNS):
            if i == WARM_UP:
                await controller.tasks.idle()
                await asyncio.sleep(0.5)  # settled, as at the end (see there)
                samples["rss_warm"] = rss_mb()
                samples["qt_warm"] = qt_objects(qapp)
                classes["warm"] = qt_classes(qapp)
                started = time.perf_counter()
            chat = i * CHATS // TURNS  # a hundred turns in a chat, then the next
            if chat == len(chats):
                controller.new_chat()
            elif i % 10 == 0:  # back to the chat after a look at the one before it
                controller.open_session(chats[max(chat - 1, 0)])
                await until(lambda c=chat: controller.current_session_id == chats[max(c - 1, 0)])
                controller.open_session(chats[chat])
                await until(lambda c=chat: controller.current_session_id == chats[c])
            if i % 10 == 5:
                controller.attachments.add_paths([note])
                await until(controller.attachments.has_files)
            await turn(f"Turn {i}: what did we say about the cache in chat {chat}?")
            if chat == len(chats):
                assert controller.current_session_id is not None
                chats.append(controller.current_session_id)
            if i % 25 == 24:
                done = len(finished)
                controller.turns.retry()
                await until(lambda d=done: len(finished) > d
                            and not controller.turns.is_running())
                controller.graph_ops.step_version(-1)
                await until(lambda: controller.current_view is not None
                            and controller.current_view.version(
                                controller.current_view.path[-2].id)[0] == 1)
            if i % 50 == 49:
                window.sessions.search.setText(f"chat {chat}")
                controller.session_list.search(f"chat {chat}")
                await controller.tasks.idle()
                window.sessions.search.clear()
        await controller.tasks.idle()
        samples["seconds"] = time.perf_counter() - started
        samples["rss_end"] = rss_mb()
        await asyncio.sleep(2.0)  # what the last turn set going settles
        # counted once settled, as after the warm-up: the last turn ends with the search
        # field cleared, whose clear button fades out through an animation object that
        # deletes itself 160 ms later; a leak stays
        samples["qt_end"] = qt_objects(qapp)
        classes["end"] = qt_classes(qapp)
        process = psutil.Process()
        before, idle_started = sum(process.cpu_times()[:2]), time.monotonic()
        await asyncio.sleep(IDLE_S)
        used = sum(process.cpu_times()[:2]) - before
        samples["idle_cpu"] = 100 * used / (time.monotonic() - idle_started)

    try:
        loop.run_until_complete(asyncio.wait_for(scenario(), 3600))
    finally:
        close_window(bench)
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=30)
        server.stdout.close()
    bare = subprocess.run([sys.executable, "-c", BARE_IDLE, str(IDLE_S)], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=120, check=True)
    bare_idle = float(bare.stdout.strip().splitlines()[-1])
    assert len(finished) >= TURNS

    growth = samples["rss_end"] - samples["rss_warm"]
    qt_growth = samples["qt_end"] - samples["qt_warm"]
    per_second = (TURNS - WARM_UP) / samples["seconds"]
    grown = ", ".join(f"{name} {n:+d}" for name, n in sorted(
        ((name, classes["end"][name] - classes["warm"][name])
         for name in classes["end"].keys() | classes["warm"].keys()), key=lambda c: -abs(c[1]))
        if n)
    bench_report(
        "soak",
        {
            "rss_growth_mb": growth,
            "qt_objects_growth": qt_growth,
            "idle_cpu_percent": samples["idle_cpu"],
            "bare_window_idle_cpu_percent": bare_idle,
            "rss_after_warm_up_mb": samples["rss_warm"],
            "rss_at_end_mb": samples["rss_end"],
            "turns": float(TURNS),
            "turns_per_second": per_second,
        },
        rows=[
            (f"resident memory after {WARM_UP} turns, MB", samples["rss_warm"], ""),
            (f"resident memory after {TURNS} turns, MB", samples["rss_end"], ""),
            ("growth, MB (target <= 50)", growth, ""),
            ("live Qt objects after the warm-up", samples["qt_warm"], ""),
            ("live Qt objects growth (target 0)", qt_growth, grown or "none grew"),
            (f"idle CPU over {IDLE_S:.0f} s, % of a core (target <= 1)", samples["idle_cpu"],
             f"bare window {bare_idle:.2f}"),
            ("turns per second after the warm-up", per_second, ""),
        ],
        header=("figure", "value", "beside it"),
    )
