"""Store benchmark: the cost of appending one node (with HEAD moving) and of loading a
10,000-node session and computing its active path (baseline: a bare DuckDB INSERT); then a
10,000-message chat in the running window: opened from the store (read, rows built, first
screen painted; median over three chats opened for the first time), and scrolled up from
the bottom a wheel step per frame (each frame: scroll, events handled, painted),
side by side with a bare QListView over the same 10,000 texts in a QStringListModel.
The chat's end is read and shown first; the whole path follows off the GUI thread: the
time until it is in place and the longest the GUI thread was held meanwhile are reported.

Writes build/bench/store.json: open_10k_messages_ms, whole_10k_messages_ms,
gui_longest_stall_ms_opening_10k, scroll_10k_frame_p95_ms (+ the bare list's, and the store
figures)."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from PySide6.QtCore import QEvent, QStringListModel, QTimer
from PySide6.QtWidgets import QAbstractItemView, QApplication, QListView, QWidget

from treechat.core.dag import Change, Graph, active_path
from treechat.core.model import Node, Session
from treechat.services.models.catalog import ModelChoice
from treechat.store.database import Store, default_store_path

from .bench_window import SIZE, close_window, open_window

LONG = 10_000
COLD_OPENS = 3
WHEEL_PX = 120  # one notch of a mouse wheel, scrolled per frame
FRAMES = 300
TEXTS = (
    "Could you explain how the cache works when the prefix changes halfway through?",
    "Sure. The provider caches the longest prefix it has seen before; everything after the "
    "first changed byte is paid for again. That is why the stable parts go first:\n\n"
    "```python\nmessages = [system, *summaries, *history, volatile]\n```\n\n"
    "Keeping the system prompt and tool list constant is what makes the hits possible.",
)

pytestmark = [pytest.mark.bench, pytest.mark.timeout(3600),
              pytest.mark.qt_log_ignore("This plugin does not support")]


def chain(n: int, session: str) -> list[Node]:
    out: list[Node] = []
    prev = None
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        nid = f"{session}-{i}"
        out.append(
            Node(
                id=nid,
                seq=0,
                created_at=float(i),
                session_id=session,
                role=role,  # type: ignore[arg-type]
                output=f"message {i} " * 20,
                predecessor=prev,
            )
        )
        prev = nid
    return out


def test_store_benchmark(tmp_path: Path, qapp: QApplication, bench_report) -> None:  # type: ignore[no-untyped-def]
    store = Store.open(tmp_path / "bench.duckdb")
    store.call(lambda r: r.create_session(Session("big", "Big", None, "m", 0.0)))
    store.call(lambda r: r.create_session(Session("small", "Small", None, "m", 0.0)))

    nodes = chain(10_000, "big")
    t0 = time.perf_counter()
    store.call(lambda r: r.apply_change("big", Change(tuple(nodes), nodes[-1].id), 1.0))
    bulk_10k_ms = (time.perf_counter() - t0) * 1000

    append_times = []
    prev: str | None = None
    for i in range(200):
        node = Node(
            id=f"s{i}",
            seq=0,
            created_at=0.0,
            session_id="small",
            role="user",
            output="hello there",
            predecessor=prev,
        )
        t0 = time.perf_counter()
        store.call(lambda r, n=node: r.apply_change("small", Change((n,), n.id), 1.0))
        append_times.append((time.perf_counter() - t0) * 1000)
        prev = node.id

    load_times = []
    for _ in range(5):
        t0 = time.perf_counter()
        loaded = store.call(lambda r: r.session_nodes("big"))
        head = store.call(lambda r: r.get_session("big")).head  # type: ignore[union-attr]
        path = active_path(Graph(loaded), head)
        load_times.append((time.perf_counter() - t0) * 1000)
        assert len(path) == 10_000
    store.close()

    raw = duckdb.connect(str(tmp_path / "raw.duckdb"))
    raw.execute("CREATE TABLE t (id VARCHAR PRIMARY KEY, v VARCHAR)")
    raw_times = []
    for i in range(200):
        t0 = time.perf_counter()
        raw.execute("INSERT INTO t VALUES (?, ?)", [str(i), "hello there"])
        raw_times.append((time.perf_counter() - t0) * 1000)
    raw.close()

    append_ms = statistics.median(append_times)
    load_ms = statistics.median(load_times)
    raw_ms = statistics.median(raw_times)
    window_figures, window_rows = long_chat_in_the_window(tmp_path, qapp)
    bench_report(
        "store",
        {
            **window_figures,
            "append_node_ms": append_ms,
            "load_10k_session_ms": load_ms,
            "bulk_append_10k_ms": bulk_10k_ms,
            "append_vs_bare_insert": append_ms / raw_ms,
        },
        rows=[
            *window_rows,
            ("append one node + move HEAD (median of 200)", append_ms, ""),
            ("bare DuckDB INSERT, same machine (median of 200)", raw_ms, ""),
            ("load 10,000-node session + active path (median of 5)", load_ms, ""),
            ("append 10,000 nodes in one transaction", bulk_10k_ms, ""),
        ],
        header=("figure", "ms", "beside it"),
    )


def conversation(session: str, n: int) -> list[Node]:
    out: list[Node] = []
    prev = None
    for i in range(n):
        node = Node(f"{session}-{i}", 0, float(i), session,
                    "user" if i % 2 == 0 else "assistant",  # type: ignore[arg-type]
                    output=f"{i}. {TEXTS[i % 2]}", predecessor=prev)
        out.append(node)
        prev = node.id
    return out


async def until(predicate: Callable[[], object], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.001)


class Heartbeat:
    """The longest the GUI thread went without handling a 1 ms timer: how long it was held."""

    def __init__(self) -> None:
        self._last = time.perf_counter()
        self._longest = 0.0
        self._timer = QTimer()
        self._timer.setInterval(1)
        self._timer.timeout.connect(self._beat)
        self._timer.start()

    def _beat(self) -> None:
        now = time.perf_counter()
        self._longest = max(self._longest, now - self._last)
        self._last = now

    def stop(self) -> float:
        """Stop; the longest gap in milliseconds."""
        self._beat()
        self._timer.stop()
        return self._longest * 1000


def scroll_frames(view: QAbstractItemView, frames: int,
                  cpu: list[float] | None = None) -> list[float]:
    """Milliseconds per frame, scrolling up a wheel step per frame from the bottom; the GUI
    thread's own CPU time per frame into `cpu` (what a loaded machine's scheduler adds to
    the wall clock is not in it)."""
    bar = view.verticalScrollBar()
    bar.setValue(bar.maximum())
    QApplication.processEvents()
    out = []
    for _ in range(frames):
        started, used = time.perf_counter(), time.thread_time()
        bar.setValue(bar.value() - WHEEL_PX)
        QApplication.processEvents()
        view.viewport().repaint()
        out.append((time.perf_counter() - started) * 1000)
        if cpu is not None:
            cpu.append((time.thread_time() - used) * 1000)
    return out


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


def long_chat_in_the_window(
    tmp_path: Path, qapp: QApplication
) -> tuple[dict[str, float], list[tuple[str, float, str]]]:
    """The window's figures for 10,000-message chats, and their table rows."""
    data_dir = tmp_path / "window"
    store = Store.open(default_store_path(data_dir))
    ids = [f"long-{k}" for k in range(COLD_OPENS)]
    for session_id in ["other", *ids]:
        nodes = conversation(session_id, LONG if session_id != "other" else 2)
        store.call(lambda r, s=session_id: r.create_session(
            Session(s, s, None, "openai/bench", 0.0, updated_at=0.0)))
        store.call(lambda r, s=session_id, n=nodes: r.apply_change(
            s, Change(tuple(n), n[-1].id), 1.0))
    store.close()

    bench = open_window(qapp, data_dir, ModelChoice("openai/bench", "Bench", "openai",
                                                    api_base="http://127.0.0.1:9"))
    loop, window, controller = bench.loop, bench.window, bench.controller
    opens: list[float] = []
    wholes: list[float] = []
    stalls: list[float] = []
    frames: list[float] = []
    frames_cpu: list[float] = []

    def whole(target: str) -> bool:
        view = window.chat.model.view if window.chat is not None else None
        return view is not None and view.session.id == target and not view.is_tail

    async def scenario() -> None:
        await controller.start("other")
        for target in ids:
            await asyncio.sleep(0.5)  # the previous open's background work finishes,
            await bench.services.store.run(lambda _r: None)  # the store's queue too
            beats = Heartbeat()
            started = time.perf_counter()
            controller.open_session(target)
            await until(lambda t=target: window.chat is not None
                        and window.chat.model.view is not None
                        and window.chat.model.view.session.id == t)
            window.chat.repaint()  # the end of the chat on screen, usable
            opens.append((time.perf_counter() - started) * 1000)
            await until(lambda t=target: whole(t))
            wholes.append((time.perf_counter() - started) * 1000)
            await controller.tasks.idle()
            stalls.append(beats.stop())
        await asyncio.sleep(0.5)
        await bench.services.store.run(lambda _r: None)  # scrolled with nothing else running

    try:
        loop.run_until_complete(asyncio.wait_for(scenario(), 600))
        assert window.chat is not None
        # Scrolled between the loop's runs, not from a task: a frame handles Qt's events,
        # and handling them inside a running task would step other tasks within it.
        frames.extend(scroll_frames(window.chat.list, FRAMES, frames_cpu))
        chat = window.chat.model.view
        held = len(chat.path) if chat is not None else 0
        in_list = window.chat.model.rowCount()
    finally:
        close_window(bench)
    assert held == LONG  # the whole chat is there to scroll to, a slice at a time

    bare = QListView()
    bare.setWordWrap(True)
    bare.setUniformItemSizes(False)
    bare.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
    bare.setModel(QStringListModel([f"{i}. {TEXTS[i % 2]}" for i in range(LONG)], bare))
    holder = QWidget()
    bare.setParent(holder)
    bare.resize(*SIZE)
    holder.resize(*SIZE)
    holder.show()
    QApplication.processEvents()
    bare_cpu: list[float] = []
    bare_frames = scroll_frames(bare, FRAMES, bare_cpu)
    holder.close()
    holder.deleteLater()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)

    open_ms = statistics.median(opens)
    ours_p95, bare_p95 = p95(frames), p95(bare_frames)
    figures = {
        "open_10k_messages_ms": open_ms,
        "first_open_10k_messages_ms": opens[0],
        "whole_10k_messages_ms": statistics.median(wholes),
        "gui_longest_stall_ms_opening_10k": max(stalls),
        "rows_in_list_after_scroll": float(in_list),
        "scroll_10k_frame_p95_ms": ours_p95,
        "scroll_10k_frame_median_ms": statistics.median(frames),
        "bare_list_scroll_10k_frame_p95_ms": bare_p95,
        "scroll_10k_p95_vs_bare_list": ours_p95 / bare_p95,
        "scroll_10k_frame_cpu_p95_ms": p95(frames_cpu),
        "bare_list_scroll_10k_frame_cpu_p95_ms": p95(bare_cpu),
        "scroll_10k_cpu_p95_vs_bare_list": p95(frames_cpu) / p95(bare_cpu),
    }
    return figures, [
            ("open a 10,000-message chat: its end read, rows, painted (median of 3)",
             open_ms, ""),
            ("  ... until the whole path is read and in place (median of 3)",
             statistics.median(wholes), ""),
            ("  longest the GUI thread was held while opening (worst of 3)", max(stalls),
             ""),
            ("scroll it bottom to top, a wheel step a frame: p95 frame", ours_p95,
             f"bare QListView {bare_p95:.2f}"),
            ("  median frame", statistics.median(frames),
             f"bare QListView {statistics.median(bare_frames):.2f}"),
            ("  p95 of the GUI thread's CPU time a frame", p95(frames_cpu),
             f"bare QListView {p95(bare_cpu):.2f}"),
    ]
