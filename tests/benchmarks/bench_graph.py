"""History graph benchmark: build, lay out and first-paint graphs of 1,000 and 10,000 nodes, and
the time per frame while zooming and panning, side by side with a bare QGraphicsScene that only
adds the same number of plain ellipse items. Targets: first paint of 10,000 nodes within 2x of
the bare scene; frames under 16 ms zoomed all the way out."""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QGraphicsScene, QGraphicsView
from tests.support.synthetic_graph import conversation

from treechat.core.dag import Graph, active_path
from treechat.core.layout import layout_graph
from treechat.core.model import Node, Session
from treechat.services.turns.sessions import SessionView
from treechat.ui.graph.items import DX, DY, R
from treechat.ui.graph.view import HistoryGraphView

pytestmark = [pytest.mark.bench, pytest.mark.qt_log_ignore("This plugin does not support")]

SIZE = (420, 760)
FRAMES = 40
REPEATS = 3


def session_view(nodes: list[Node]) -> SessionView:
    graph = Graph(nodes)
    head = nodes[-1].id if nodes[-1].role != "tool" else nodes[-1].caller
    return SessionView(Session("s", "bench", head, "m", 0.0), graph, active_path(graph, head),
                       frozenset(), frozenset())


def bare_view(points: list[tuple[float, float]]) -> QGraphicsView:
    view = QGraphicsView()
    scene = QGraphicsScene(view)  # owned by the view, or Python would collect it
    for x, y in points:
        scene.addEllipse(x - R, y - R, 2 * R, 2 * R)
    view.setScene(scene)
    view.resize(*SIZE)
    view.fitInView(scene.itemsBoundingRect(), Qt.AspectRatioMode.KeepAspectRatio)
    return view


def ours(view_model: SessionView) -> HistoryGraphView:
    view = HistoryGraphView()
    view.resize(*SIZE)
    view.show_view(view_model)
    view.fit_all()
    return view


def first_paint(build: Callable[[], QGraphicsView]) -> tuple[float, QGraphicsView]:
    """Milliseconds from nothing to the first rendered frame of the whole graph."""
    start = time.perf_counter()
    view = build()
    view.viewport().grab()
    return (time.perf_counter() - start) * 1000, view


def frame_ms(view: QGraphicsView, zoom_in: bool) -> tuple[float, float]:
    """(median, best) time to repaint the viewport while zooming and panning a little each
    frame. The best frame says what the code costs when the shared machine lets it run."""
    view.show()
    QApplication.processEvents()
    times = []
    for i in range(FRAMES):
        if i % 2:
            factor = 1.03 if (i // 2) % 2 else 1 / 1.03
            view.scale(factor, factor)
        else:
            bar = view.verticalScrollBar() if zoom_in else view.horizontalScrollBar()
            bar.setValue(bar.value() + (12 if (i // 2) % 2 else -12))
        start = time.perf_counter()
        view.viewport().grab()
        times.append((time.perf_counter() - start) * 1000)
    view.hide()
    return statistics.median(times), min(times)


def test_graph_benchmark(qapp: QApplication, bench_report) -> None:  # type: ignore[no-untyped-def]
    figures: dict[str, float] = {}
    rows: list[list[object]] = []
    for count in (1_000, 10_000):
        nodes = conversation(count)
        model = session_view(nodes)
        start = time.perf_counter()
        layout = layout_graph(nodes)
        layout_ms = (time.perf_counter() - start) * 1000
        points = [(p.column * DX, p.row * DY) for p in layout.placements.values()]

        ours_ms, bare_ms = [], []
        view = bare = None
        for _ in range(REPEATS):
            t, bare = first_paint(functools.partial(bare_view, points))
            bare_ms.append(t)
            t, view = first_paint(functools.partial(ours, model))
            ours_ms.append(t)
        assert view is not None and bare is not None
        ours_paint, bare_paint = statistics.median(ours_ms), statistics.median(bare_ms)

        start = time.perf_counter()
        view.graph_scene.ensure_items()
        rest_ms = (time.perf_counter() - start) * 1000
        assert len(view.graph_scene.items_by_id) == count

        (out_ours, out_best), (out_bare, _) = frame_ms(view, False), frame_ms(bare, False)
        view.center_on_node(model.head or "", 1.0)
        in_ours, in_best = frame_ms(view, True)

        tag = "1k" if count == 1_000 else "10k"
        figures[f"layout_{tag}_ms"] = layout_ms
        figures[f"first_paint_{tag}_ms"] = ours_paint
        figures[f"bare_first_paint_{tag}_ms"] = bare_paint
        figures[f"paint_{tag}_vs_bare"] = ours_paint / bare_paint
        figures[f"remaining_items_{tag}_ms"] = rest_ms
        figures[f"frame_ms_zoomed_out_{tag}"] = out_ours
        figures[f"bare_frame_ms_zoomed_out_{tag}"] = out_bare
        figures[f"frame_out_{tag}_vs_bare"] = out_ours / out_bare
        figures[f"frame_ms_zoomed_out_best_{tag}"] = out_best
        figures[f"frame_ms_zoomed_in_{tag}"] = in_ours
        figures[f"frame_ms_zoomed_in_best_{tag}"] = in_best
        rows.append([f"{count:,}", layout_ms, ours_paint, bare_paint, ours_paint / bare_paint,
                     rest_ms, out_ours, out_best, out_bare, in_ours, in_best])
        view.deleteLater()
        bare.deleteLater()
        QApplication.processEvents()

    figures["frame_ms_zoomed_out"] = figures["frame_ms_zoomed_out_10k"]
    bench_report(
        "graph",
        figures,
        rows,
        ["nodes", "layout ms", "first paint ms", "bare ms", "vs bare", "rest of items ms",
         "frame out ms", "best", "bare out ms", "frame in ms", "best"],
    )
