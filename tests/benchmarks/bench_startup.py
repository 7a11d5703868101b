"""Start-up and opening benchmark for the window.

1. Start-up, in a fresh process started the way the `treechat` command starts (cli.main),
   against a store of 1,000 sessions whose last chat (the one the window reopens) holds 2,000
   messages; run side by side (interleaved) with a bare PySide6 window that imports nothing
   else. Marks: the first painted frame (the window's outline in its colours), the first
   paint of its real widgets, and the first paint at which it is usable: the chat list filled,
   the last chat shown, the message box holding the keyboard and the model picker naming a
   model. The window keeps that first frame beside the store when it closes (the warm-up
   launch closes it too, as a user's last session would), and believes it only while the
   store is unchanged; a few more launches without it (as after a `treechat send` while the
   window was closed) are run too. From the first paint until a few seconds after that, the
   longest time the GUI thread did not get to run a 5 ms timer (the bare window's alongside),
   and the resident memory of the process at the end of it, measured from outside.
2. What each heavy library costs when imported (resident and tracemalloc deltas, each in a
   fresh process that has already made its QApplication), and whether the started window
   loaded it.
3. Opening a 2,000-message session in the running window (store read, chat view filled and
   painted; median over four sessions opened for the first time), going back to one opened
   before, and the memory of the process afterwards.
4. The session list with 5,000 sessions: reading them, filling and painting the list, and a
   search over their 10,000 messages.
5. The command line, cold: spawn to exit of `treechat --help` beside a bare interpreter, and
   of `treechat sessions` on the store of 1. beside a script that only opens that store and
   reads its sessions (the least any listing must do), interleaved.

Writes build/bench/startup.json: ready_vs_bare, rss_after_open_mb, gui_longest_stall_ms_at_start,
ready_vs_bare_without_kept_frame, startup_vs_bare, open_2000_messages_ms, cli_help_vs_bare_python,
cli_sessions_vs_direct_store (+ the raw figures behind them)."""

from __future__ import annotations

import asyncio
import json
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
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.services.models.catalog import ModelChoice
from treechat.services.store_life.first_frame import frame_path
from treechat.store.database import Store, default_store_path
from treechat.store.search import search_sessions
from treechat.ui.sessions.list import SessionList

from .bench_window import close_window, open_window

pytestmark = [pytest.mark.bench, pytest.mark.timeout(3600),
              pytest.mark.qt_log_ignore("This plugin does not support")]

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
RUNS = 5
RUNS_WITHOUT_FRAME = 3  # launches whose kept first frame is gone (the store is read first)
SESSIONS = 1000
LAST_CHAT = "last-chat"  # the chat the window reopens: 2,000 messages
SETTLE_S = 3.0  # how long after it is usable the window is watched (stalls, then memory)
MESSAGES = 2000
COLD_OPENS = 4
LIST_SESSIONS = 5000
# Bytecode is cached as on a user's machine (the warm-up launch writes it), even where the
# shell says not to write any: otherwise every launch would compile our modules again.
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
       "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen"),
       "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

# Both drivers watch the GUI thread from the first paint on: a 5 ms timer, and the longest
# gap between two of its ticks beyond those 5 ms is the longest stall.
WATCH = """
import time
from PySide6.QtCore import QTimer

class Watch:
    def __init__(self, parent):
        self.last = time.perf_counter()
        self.longest = 0.0
        self.timer = QTimer(parent)
        self.timer.timeout.connect(self.tick)
        self.timer.start(5)
    def tick(self):
        now = time.perf_counter()
        self.longest = max(self.longest, now - self.last - 0.005)
        self.last = now
    def report(self):
        self.tick()
        print(f"stall {self.longest * 1000:.1f}", flush=True)
"""

BARE = WATCH + """
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
            watch = Watch(self)
            def settled():
                watch.report()
                print("settled", flush=True)
                QTimer.singleShot(500, QApplication.instance().quit)
            QTimer.singleShot(int(float(sys.argv[1]) * 1000), settled)
        return handled

app = QApplication(sys.argv[:1])
window = Window()
window.resize(1180, 760)
window.show()
app.exec()
"""

# Through the `treechat` command's own entry point (cli.main), with a hook on the first paint.
OURS = WATCH + """
import sys
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication
from treechat import app, cli

data_dir, sessions, last_chat, settle = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
HEAVY = ("litellm", "duckdb", "tiktoken", "huggingface_hub", "mcp", "pypdfium2", "PIL",
         "llama_cpp", "pygments", "keyring", "treechat.ui.chat.view")

def usable(window):
    # the chat list, the last chat, the keyboard in the message box and a named model
    if not window.built or window.sessions.model.session_count() < sessions:
        return False
    chat = window.chat
    view = chat.model.view if chat is not None else None
    return (view is not None and view.session.id == last_chat
            and window.stack.currentWidget() is chat
            and QApplication.focusWidget() is window.composer.input
            and bool(window.composer.picker.currentText().strip()))

class Marks(QObject):
    # the first paint of the real widgets, and the first paint once the window is usable
    seen = set()
    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Paint and watched.built:
            if "ready" not in self.seen:
                self.seen.add("ready")
                print("built", flush=True)
            if "usable" not in self.seen and usable(watched):
                self.seen.add("usable")
                print("ready", flush=True)
                QTimer.singleShot(int(float(settle) * 1000), lambda: settled(watched))
        return False

def settled(window):
    watch.report()
    for name in HEAVY:
        if name in sys.modules:
            print(f"loaded {name}", flush=True)
    print("settled", flush=True)
    QTimer.singleShot(500, window.close)

def painted(window):
    global watch
    print("painted", flush=True)
    watch = Watch(window)
    window.installEventFilter(Marks(window))
    poll = QTimer(window)
    def look():
        if window.built and usable(window):
            window.update()  # the paint that shows it (it may have painted already)
            poll.stop()
    poll.timeout.connect(look)
    poll.start(5)

run = app.run
app.run = lambda args, qt_args=(): run(args, qt_args, on_first_paint=painted)
raise SystemExit(cli.main(["--data-dir", data_dir]))
"""

# The least `treechat sessions` must do: open the store and read its sessions.
DIRECT_LIST = """
import sys
from pathlib import Path
from treechat.store.database import Store, default_store_path
store = Store.open(default_store_path(Path(sys.argv[1])))
try:
    print(len(store.call(lambda r: r.list_sessions())))
finally:
    store.close()
"""
CLI_RUNS = 11


# Resident memory without tracemalloc (its own bookkeeping would be counted), then what
# tracemalloc sees allocated, each in a process of its own.
IMPORT_COST = """
import json, sys, tracemalloc
import psutil
from PySide6.QtWidgets import QApplication
app = QApplication(sys.argv[:1])
process = psutil.Process()
traced = sys.argv[2] == "traced"
before = process.memory_info().rss
if traced:
    tracemalloc.start()
exec(sys.argv[1])
if traced:
    print(json.dumps({"traced_mb": tracemalloc.get_traced_memory()[0] / 2**20}))
else:
    print(json.dumps({"rss_mb": (process.memory_info().rss - before) / 2**20}))
"""

# what the window may load, and when it should: (name, statement, module)
IMPORTS = (
    ("DuckDB (the store)", "import duckdb", "duckdb"),
    ("tiktoken + o200k_base (token counts)",
     "from treechat.providers.llm import configure_tokenizer_cache as c; c(); "
     "import tiktoken; tiktoken.get_encoding('o200k_base')", "tiktoken"),
    ("Pygments (code blocks)", "import pygments.lexers, pygments.formatters", "pygments"),
    ("keyring", "import keyring", "keyring"),
    ("litellm (requests)", "from treechat.providers import llm; llm.litellm_module()",
     "litellm"),
    ("huggingface_hub (the model library)", "import huggingface_hub", "huggingface_hub"),
    ("mcp (MCP servers)", "import mcp, mcp.client.stdio", "mcp"),
    ("pypdfium2 (PDF text)", "import pypdfium2", "pypdfium2"),
    ("Pillow (images)", "import PIL.Image", "PIL"),
    ("llama_cpp (the local model's server)", "import llama_cpp", "llama_cpp"),
    ("Treechat's window modules",
     "import treechat.ui.shell.main_window, treechat.ui.chat.view, "
     "treechat.ui.composer.composer, treechat.ui.sessions.list, "
     "treechat.ui.controllers.conversation", "treechat.ui.chat.view"),
)


def import_cost(statement: str) -> dict[str, float]:
    out = {"rss_mb": 0.0, "traced_mb": 0.0}
    for how in ("rss", "traced"):
        proc = subprocess.run([sys.executable, "-c", IMPORT_COST, statement, how], cwd=ROOT,
                              env=ENV, capture_output=True, text=True, timeout=600, check=False)
        if proc.returncode == 0:  # otherwise not installed here: nothing to load
            out.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    return out


def timed_launch(code: str, *args: str) -> dict[str, float]:
    """Seconds from spawning the process to each marker line it prints; `stall` in ms as
    the process printed it, `rss_mb` read from outside when it says it has settled, and
    `loaded <module>` (1.0) for the heavy modules it had loaded by then."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code, *args], cwd=ROOT, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    marks: dict[str, float] = {}
    assert proc.stdout is not None
    with proc.stdout:
        for line in proc.stdout:
            mark, _, value = line.strip().partition(" ")
            if mark == "stall":
                marks["stall"] = float(value)
            elif mark == "loaded":
                marks[line.strip()] = 1.0
            else:
                marks.setdefault(mark, time.perf_counter() - started)
                if mark == "settled":
                    marks["rss_mb"] = psutil.Process(proc.pid).memory_info().rss / 2**20
    proc.wait(timeout=300)
    assert proc.returncode == 0, f"exit {proc.returncode}"
    return marks


def timed_exit(argv: list[str]) -> float:
    """Seconds from spawning `argv` to its exit (which must be a success)."""
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=300, check=False)
    elapsed = time.perf_counter() - started
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return elapsed


def cli_cold_starts(data_dir: Path) -> dict[str, float]:
    """Spawn to exit, medians in ms: `treechat --help` and a bare interpreter, `treechat
    sessions` and a script that only lists the store's sessions, interleaved."""
    cli = [sys.executable, "-m", "treechat.cli"]
    runs: dict[str, Callable[[], float]] = {
        "bare_python": lambda: timed_exit([sys.executable, "-c", "pass"]),
        "cli_help": lambda: timed_exit([*cli, "--help"]),
        "direct_store_list": lambda: timed_exit([sys.executable, "-c", DIRECT_LIST,
                                                 str(data_dir)]),
        "cli_sessions": lambda: timed_exit([*cli, "--data-dir", str(data_dir), "sessions"]),
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    for run in runs.values():  # bytecode written and files cached for every one of them
        run()
    for _ in range(CLI_RUNS):
        for name, run in runs.items():
            times[name].append(run())
    return {f"{name}_ms": statistics.median(values) * 1000 for name, values in times.items()}


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


def remember_last_chat(data_dir: Path, session_id: str) -> None:
    """The chat the window reopens, as a window closed on it leaves it."""
    prefs = QSettings(str(data_dir / "window.ini"), QSettings.Format.IniFormat)
    prefs.setValue("last_session", session_id)
    prefs.sync()


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
    seed_sessions(data_dir, SESSIONS - 1)
    seed_long_session(data_dir, LAST_CHAT, MESSAGES)
    remember_last_chat(data_dir, LAST_CHAT)
    ours_args = (str(data_dir), str(SESSIONS), LAST_CHAT, str(SETTLE_S))
    timed_launch(BARE, str(SETTLE_S))  # warm the file cache for both
    timed_launch(OURS, *ours_args)
    bare_runs, our_runs = [], []
    for _ in range(RUNS):
        bare_runs.append(timed_launch(BARE, str(SETTLE_S)))
        our_runs.append(timed_launch(OURS, *ours_args))

    unkept_bare, unkept = [], []
    for _ in range(RUNS_WITHOUT_FRAME):
        frame_path(default_store_path(data_dir)).unlink(missing_ok=True)
        unkept_bare.append(timed_launch(BARE, str(SETTLE_S)))
        unkept.append(timed_launch(OURS, *ours_args))

    def median(runs: list[dict[str, float]], key: str) -> float:
        return statistics.median(run[key] for run in runs)

    bare_s, ours_s = median(bare_runs, "painted"), median(our_runs, "painted")
    built_s, ready_s = median(our_runs, "built"), median(our_runs, "ready")
    unkept_ratio = median(unkept, "ready") / median(unkept_bare, "painted")
    unkept_stall_ms = median(unkept, "stall")
    stall_ms, bare_stall_ms = median(our_runs, "stall"), median(bare_runs, "stall")
    rss_open_mb, bare_rss_mb = median(our_runs, "rss_mb"), median(bare_runs, "rss_mb")
    loaded_at_start = {name for run in our_runs for name in run if name.startswith("loaded ")}
    costs = [(label, import_cost(statement), f"loaded {module}")
             for label, statement, module in IMPORTS]
    cli = cli_cold_starts(data_dir)

    # --- 2. opening 2,000 messages in the running window -----------------------------
    big = tmp_path / "open"
    seed_sessions(big, 20)
    long_ids = [f"long-{k}" for k in range(COLD_OPENS)]
    for session_id in long_ids:
        seed_long_session(big, session_id, MESSAGES)
    bench = open_window(qapp, big, ModelChoice("openai/bench", "Bench", "openai",
                                               api_base="http://127.0.0.1:9"))
    loop, window, controller = bench.loop, bench.window, bench.controller
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
        chat = window.chat.model.view
        shown = len(chat.path) if chat is not None and not chat.is_tail else 0
    finally:
        close_window(bench)
    assert shown == MESSAGES  # the whole chat is held (the list lays out its end)
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
            "ready_vs_bare": ready_s / bare_s,
            "ready_vs_bare_without_kept_frame": unkept_ratio,
            "gui_longest_stall_ms_at_start_without_kept_frame": unkept_stall_ms,
            "rss_after_open_mb": rss_open_mb,
            "gui_longest_stall_ms_at_start": stall_ms,
            "bare_window_longest_stall_ms": bare_stall_ms,
            "bare_window_rss_mb": bare_rss_mb,
            "startup_vs_bare": ours_s / bare_s,
            "startup_ms": ours_s * 1000,
            "bare_window_ms": bare_s * 1000,
            "startup_ready_ms": ready_s * 1000,
            "widgets_painted_ms": built_s * 1000,
            "widgets_painted_vs_bare": built_s / bare_s,
            **{f"import_{module.removeprefix('loaded ').split('.')[0]}_rss_mb": cost["rss_mb"]
               for _label, cost, module in costs},
            "open_2000_messages_ms": open_ms,
            "reopen_2000_messages_ms": reopen_ms,
            "first_open_after_start_ms": first_open_ms,
            "ring_after_open_ms": occupancy_ms,
            "rss_mb_after_open": rss_mb,
            "list_5000_sessions_query_ms": list_query_ms,
            "list_5000_sessions_fill_ms": fill_ms,
            "search_5000_sessions_ms": search_ms,
            **cli,
            "cli_help_vs_bare_python": cli["cli_help_ms"] / cli["bare_python_ms"],
            "cli_sessions_vs_direct_store": cli["cli_sessions_ms"] / cli["direct_store_list_ms"],
        },
        rows=[
            ("bare PySide6 window, spawn to first paint, ms", bare_s * 1000, ""),
            ("Treechat, spawn to first paint (its outline), ms", ours_s * 1000, ""),
            ("Treechat, spawn to its widgets painted, ms", built_s * 1000, ""),
            ("Treechat, spawn to usable: list, last chat, focus, named model, ms",
             ready_s * 1000, ""),
            ("ratio first paint ours / bare", ours_s / bare_s, ""),
            ("ratio usable ours / bare first paint (ready_vs_bare, target <= 1.5)",
             ready_s / bare_s, ""),
            ("ratio usable / bare first paint, its kept first frame gone (store read first)",
             unkept_ratio, f"stall {unkept_stall_ms:.1f} ms"),
            (f"longest GUI stall, first paint to {SETTLE_S:.0f} s after usable, ms",
             stall_ms, f"bare {bare_stall_ms:.1f}"),
            (f"resident memory {SETTLE_S:.0f} s after usable, MB (target <= 300)",
             rss_open_mb, f"bare {bare_rss_mb:.1f}"),
            *((f"import cost: {label}, RSS MB / traced MB", cost["rss_mb"],
               f"{cost['traced_mb']:.1f} traced; "
               + ("loaded at start" if module in loaded_at_start else "not loaded at start"))
              for label, cost, module in costs),
            ("open a 2,000-message session from the store, shown and painted", open_ms, ""),
            ("back to a 2,000-message session opened before", reopen_ms, ""),
            ("the first of those opens, right after start-up", first_open_ms, ""),
            ("open to ring filled (occupancy computed, first open)", occupancy_ms, ""),
            ("in this test process, RSS after those opens, MB", rss_mb, ""),
            ("5,000 sessions: read from the store, ms", list_query_ms, ""),
            ("5,000 sessions: fill the list and paint it (median of 5), ms", fill_ms, ""),
            ("search 5,000 sessions and 10,000 messages (median of 3), ms", search_ms, ""),
            ("`treechat --help`, spawn to exit, ms", cli["cli_help_ms"],
             f"bare interpreter {cli['bare_python_ms']:.1f}"),
            ("ratio `treechat --help` / bare interpreter",
             cli["cli_help_ms"] / cli["bare_python_ms"], ""),
            (f"`treechat sessions` ({SESSIONS:,} sessions), spawn to exit, ms",
             cli["cli_sessions_ms"], f"open and list only {cli['direct_store_list_ms']:.1f}"),
            ("ratio `treechat sessions` / open and list only",
             cli["cli_sessions_ms"] / cli["direct_store_list_ms"], ""),
        ],
        header=("figure", "value", "beside it"),
    )
