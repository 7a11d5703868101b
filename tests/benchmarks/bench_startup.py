"""Start-up and opening benchmark for the window.

1. Start-up to the first painted window, in a fresh process started the way the `treechat`
   command starts (cli.main), against a store of 1,000 sessions; run side by side
   (interleaved) with a bare PySide6 window that imports nothing else. The first frame is the
   window's outline in its colours; also measured: when its real widgets have painted, and
   when the 1,000 sessions are listed.
2. Opening a 2,000-message session in the running window (store read, chat view filled and
   painted; median over four sessions opened for the first time), going back to one opened
   before, and the memory of the process afterwards.
3. The session list with 5,000 sessions: reading them, filling and painting the list, and a
   search over their 10,000 messages.

Writes build/bench/startup.json: startup_vs_bare, open_2000_messages_ms, rss_mb_after_open
(+ the raw figures behind them)."""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import psutil
import pytest
import qasync
from PySide6.QtWidgets import QApplication

from treechat.app import connect_services, create_window
from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.providers.keys import KeyStore
from treechat.services.bootstrap import build_services
from treechat.services.models import ModelChoice
from treechat.store.database import Store, default_store_path
from treechat.store.search import search_sessions
from treechat.ui.sessions.list import SessionList

pytestmark = pytest.mark.bench

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
RUNS = 7
SESSIONS = 1000
MESSAGES = 2000
COLD_OPENS = 4
LIST_SESSIONS = 5000
# Bytecode is cached as on a user's machine (the warm-up launch writes it), even where the
# shell says not to write any: otherwise every launch would compile our modules again.
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
       "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen"),
       "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

BARE = """
import sys
from PySide6.QtCore import QEvent, QTimer
from PySide6.QtWidgets import QApplication, QMainWindow

class Window(QMainWindow):
    painted = False
    def event(self, event):
        handled = super().event(event)
        if event.type() == QEvent.Type.Paint and not self.painted:
            self.painted = True
            print("painted", flush=True)
            QTimer.singleShot(0, QApplication.instance().quit)
        return handled

app = QApplication(sys.argv[:1])
window = Window()
window.resize(1180, 760)
window.show()
app.exec()
"""

# Through the `treechat` command's own entry point (cli.main), with a hook on the first paint.
OURS = """
import sys
from PySide6.QtCore import QEvent, QObject, QTimer
from treechat import app, cli

class Ready(QObject):
    # the first paint of the window's real widgets (the first paint is its outline)
    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Paint and watched.built:
            print("ready", flush=True)
            watched.removeEventFilter(self)
        return False

def painted(window):
    print("painted", flush=True)
    window.installEventFilter(Ready(window))
    timer = QTimer(window)
    def poll():
        if window.built and window.sessions.model.session_count() >= int(sys.argv[2]):
            print("listed", flush=True)
            timer.stop()
            window.close()
    timer.timeout.connect(poll)
    timer.start(5)

run = app.run
app.run = lambda args, qt_args=(): run(args, qt_args, on_first_paint=painted)
raise SystemExit(cli.main(["--data-dir", sys.argv[1]]))
"""


def timed_launch(code: str, *args: str) -> dict[str, float]:
    """Seconds from spawning the process to each marker line it prints."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code, *args], cwd=ROOT, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    marks: dict[str, float] = {}
    assert proc.stdout is not None
    with proc.stdout:
        for line in proc.stdout:
            marks.setdefault(line.strip(), time.perf_counter() - started)
    proc.wait(timeout=300)
    assert proc.returncode == 0, f"exit {proc.returncode}"
    return marks


def seed_sessions(data_dir: Path, count: int, *, with_messages: bool = False) -> None:
    store = Store.open(default_store_path(data_dir))
    now = time.time()
    sessions = [Session(f"s{i:05d}", f"Conversation {i} about something", None,
                        "openai/gpt-4o", now - i * 3600, updated_at=now - i * 3600)
                for i in range(count)]
    store.call(lambda r: r.create_sessions(sessions))
    if with_messages:
        nodes = []
        for i, s in enumerate(sessions):
            q = Node(f"{s.id}-q", 0, now, s.id, "user", output=f"question {i}: {TEXTS[0]}")
            a = Node(f"{s.id}-a", 0, now, s.id, "assistant", predecessor=q.id,
                     output=f"answer {i}: {TEXTS[1]}" + (" needle" if i % 97 == 0 else ""))
            nodes += [q, a]
        store.call(lambda r: r.append_nodes(nodes))
    store.close()


TEXTS = (
    "Could you explain how the cache works when the prefix changes halfway through?",
    "Sure. The provider caches the longest prefix it has seen before; everything after the "
    "first changed byte is paid for again. That is why the stable parts go first:\n\n"
    "```python\nmessages = [system, *summaries, *history, volatile]\n```\n\n"
    "Keeping the system prompt and tool list constant is what makes the hits possible.",
)


def seed_long_session(data_dir: Path, session_id: str, messages: int) -> None:
    store = Store.open(default_store_path(data_dir))
    now = time.time()
    store.call(lambda r: r.create_session(
        Session(session_id, f"{messages} messages", None, "openai/bench", now, updated_at=now)))
    nodes = []
    prev = None
    for i in range(messages):
        node = Node(f"{session_id}-{i}", 0, now, session_id,
                    "user" if i % 2 == 0 else "assistant",
                    output=f"{i}. {TEXTS[i % 2]}", predecessor=prev)
        nodes.append(node)
        prev = node.id
    store.call(lambda r: r.apply_change(session_id, Change(tuple(nodes), prev), now))
    store.close()


def run_on(loop: qasync.QEventLoop, coro: Coroutine[Any, Any, T]) -> T:
    return loop.run_until_complete(asyncio.wait_for(coro, 600))


async def until(predicate: Callable[[], object], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.001)


def test_startup_and_open(tmp_path: Path, qapp: QApplication, bench_report: Any) -> None:
    # --- 1. start-up, ours against a bare window, interleaved ------------------------
    data_dir = tmp_path / "startup"
    seed_sessions(data_dir, SESSIONS)
    timed_launch(BARE)  # warm the file cache for both
    timed_launch(OURS, str(data_dir), str(SESSIONS))
    bare, ours, ready, listed = [], [], [], []
    for _ in range(RUNS):
        bare.append(timed_launch(BARE)["painted"])
        marks = timed_launch(OURS, str(data_dir), str(SESSIONS))
        ours.append(marks["painted"])
        ready.append(marks["ready"])
        listed.append(marks["listed"])
    bare_s, ours_s, ready_s, listed_s = (statistics.median(x)
                                         for x in (bare, ours, ready, listed))

    # --- 2. opening 2,000 messages in the running window -----------------------------
    big = tmp_path / "open"
    seed_sessions(big, 20)
    long_ids = [f"long-{k}" for k in range(COLD_OPENS)]
    for session_id in long_ids:
        seed_long_session(big, session_id, MESSAGES)
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    services = build_services(
        big, bundled=False, detect_local_servers=False, keys=KeyStore(environ={}),
        extra_models=(ModelChoice("openai/bench", "Bench", "openai",
                                  api_base="http://127.0.0.1:9"),),
    )
    services.models.default_model = "openai/bench"
    window, prefs, theme = create_window(qapp, big)
    window.resize(1180, 760)
    controller = connect_services(window, services, prefs, theme)
    window.show()
    opens: list[float] = []
    occupancy: list[float] = []

    async def scenario() -> None:
        await controller.start()
        # each session opened twice: first from the store, then back to it from memory
        for target in [*long_ids, *long_ids]:
            await asyncio.sleep(0.5)  # let the previous open's background work finish
            started = time.perf_counter()
            controller.open_session(target)
            await until(lambda t=target: window.chat.model.view is not None
                        and window.chat.model.view.session.id == t)
            window.chat.repaint()  # the first screen of messages, painted
            opens.append(time.perf_counter() - started)
            await until(lambda t=target: window.composer.ring.occupancy is not None
                        and controller.current_session_id == t)
            occupancy.append(time.perf_counter() - started)
            await controller.tasks.idle()

    try:
        run_on(loop, scenario())
        rss_mb = psutil.Process().memory_info().rss / 2**20
        shown = len(window.chat.model.rows)
    finally:
        run_on(loop, controller.close())
        run_on(loop, services.close())
        services.close_store()
        window.close_now()
        loop.close()
        asyncio.set_event_loop(None)
    assert shown == MESSAGES
    open_ms = statistics.median(opens[:COLD_OPENS]) * 1000
    first_open_ms = opens[0] * 1000  # the first session opened after start-up
    reopen_ms = statistics.median(opens[COLD_OPENS:]) * 1000
    occupancy_ms = statistics.median(occupancy[:COLD_OPENS]) * 1000

    # --- 3. the session list with 5,000 sessions, and searching them -------------------
    many = tmp_path / "many"
    seed_sessions(many, LIST_SESSIONS, with_messages=True)
    store = Store.open(default_store_path(many))
    try:
        started = time.perf_counter()
        listed_sessions = store.call(lambda r: r.list_sessions())
        list_query_ms = (time.perf_counter() - started) * 1000
        widget = SessionList()
        widget.resize(280, 760)
        widget.show()
        fills = []
        for _ in range(5):
            started = time.perf_counter()
            widget.set_sessions(listed_sessions, time.time())
            widget.view.repaint()
            fills.append((time.perf_counter() - started) * 1000)
        searches = []
        for word in ("needle", "Conversation 4242", "nothing-matches-this"):
            started = time.perf_counter()
            store.call(lambda r, w=word: search_sessions(r, w))
            searches.append((time.perf_counter() - started) * 1000)
        widget.close()
    finally:
        store.close()
    fill_ms = statistics.median(fills)
    search_ms = statistics.median(searches)

    bench_report(
        "startup",
        {
            "startup_vs_bare": ours_s / bare_s,
            "startup_ms": ours_s * 1000,
            "bare_window_ms": bare_s * 1000,
            "startup_ready_ms": ready_s * 1000,
            "ready_vs_bare": ready_s / bare_s,
            "sessions_listed_ms": listed_s * 1000,
            "open_2000_messages_ms": open_ms,
            "reopen_2000_messages_ms": reopen_ms,
            "first_open_after_start_ms": first_open_ms,
            "ring_after_open_ms": occupancy_ms,
            "rss_mb_after_open": rss_mb,
            "list_5000_sessions_query_ms": list_query_ms,
            "list_5000_sessions_fill_ms": fill_ms,
            "search_5000_sessions_ms": search_ms,
        },
        rows=[
            ("bare PySide6 window, spawn to first paint (median of 7)", bare_s * 1000),
            ("Treechat, 1,000 sessions, spawn to first paint (median of 7)", ours_s * 1000),
            ("Treechat, spawn to its widgets painted (median of 7)", ready_s * 1000),
            ("Treechat, spawn to 1,000 sessions listed (median of 7)", listed_s * 1000),
            ("ratio first paint ours / bare (target <= 1.5)", ours_s / bare_s),
            ("ratio widgets painted ours / bare", ready_s / bare_s),
            ("open a 2,000-message session from the store, shown and painted", open_ms),
            ("back to a 2,000-message session opened before", reopen_ms),
            ("the first of those opens, right after start-up", first_open_ms),
            ("open to ring filled (occupancy computed, first open)", occupancy_ms),
            ("RSS after opening, MB", rss_mb),
            ("5,000 sessions: read from the store, ms", list_query_ms),
            ("5,000 sessions: fill the list and paint it (median of 5), ms", fill_ms),
            ("search 5,000 sessions and 10,000 messages (median of 3), ms", search_ms),
        ],
        header=("figure", "value"),
    )
