"""The history graph in the window: one item of the right shape per node, and a click that
moves HEAD without sending anything."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QPoint, QPointF, QRectF, Qt
from PySide6.QtGui import QFontMetricsF
from PySide6.QtTest import QTest
from tests.support.loopback_server import Reply

from treechat.core import dag
from treechat.core.model import Node
from treechat.ui.controllers.history import HistoryPanels
from treechat.ui.graph.items import (
    HEAD,
    HIDDEN,
    LABEL_LOD,
    MERGED,
    ON_PATH,
    PINNED,
    NodeItem,
    R,
    node_kind,
    shape_path,
)

from ..conftest import Aio, Desk


def panels(desk: Desk) -> HistoryPanels:
    found = desk.controller.history
    assert isinstance(found, HistoryPanels)
    return found


def node_items(desk: Desk) -> list[NodeItem]:
    scene = panels(desk).graph.view.graph_scene
    scene.ensure_items()
    return [i for i in scene.items() if isinstance(i, NodeItem)]


def click_node(desk: Desk, node_id: str,
               modifier: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier) -> None:
    view = panels(desk).graph.view
    view.center_on_node(node_id, 1.0)
    point: QPoint = view.mapFromScene(view.graph_scene.point_of(node_id))
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, modifier, point)


def write(desk: Desk, session_id: str, nodes: list[Node], head: str) -> None:
    desk.services.store.call(
        lambda r: r.apply_change(session_id, dag.Change(tuple(nodes), head), 1.0))


def test_one_item_of_the_right_shape_per_node(desk: Desk, aio: Aio) -> None:
    store = desk.services.store
    session = aio.run(desk.services.chat.sessions.create("Shapes"))
    sid = session.id

    def n(i: str, role: str, **kw: object) -> Node:
        return Node(id=i, seq=0, created_at=1.0, session_id=sid, role=role,  # type: ignore[arg-type]
                    output=f"text of {i}", **kw)  # type: ignore[arg-type]

    nodes = [
        n("u1", "user"),
        n("a1", "assistant", predecessor="u1"),
        n("t1", "tool", caller="a1", name="read_file"),
        n("a2", "assistant", predecessor="a1"),
        n("a1b", "assistant", predecessor="u1"),  # a retry
        n("at", "runtime", name="attach", predecessor="a2",
          metadata={"source_session": sid, "source_head": "a1b"}),
        n("m", "runtime", name="merge", predecessor="at",
          metadata={"peers": [{"source_session": sid, "source_head": "a1b"}]}),
        n("a3", "assistant", predecessor="m"),
    ]
    write(desk, sid, nodes, "a3")
    assert store.call(lambda r: r.get_session(sid)) is not None

    async def scenario() -> None:
        desk.window.dock.hide()
        await desk.controller.session_list.reload()
        desk.controller.open_session(sid)
        await aio.until(lambda: desk.controller.current_session_id == sid, what="open")
        await desk.controller.tasks.idle()
        # a closed dock draws nothing; opening it catches up
        assert panels(desk).graph.view.graph_scene.nodes == {}
        desk.window.dock.show()
        await aio.until(lambda: len(panels(desk).graph.view.graph_scene.nodes) == len(nodes))

    aio.run(scenario())
    items = node_items(desk)
    assert sorted(i.node_id for i in items) == sorted(x.id for x in nodes)
    kinds = {i.node_id: i.kind for i in items}
    assert kinds == {x.id: node_kind(x) for x in nodes}
    assert {kinds[k] for k in ("u1", "a1", "t1", "at", "m")} == {
        "user", "assistant", "tool", "attach", "merge"}
    # each kind has its own outline: circle, square, triangle, diamond, hexagon
    corners = {k: shape_path(k).toFillPolygon().count() for k in ("tool", "attach", "merge")}
    assert corners == {"tool": 4, "attach": 5, "merge": 7}
    corner = QPointF(R * 0.75, R * 0.75)  # inside a square, outside a circle
    assert shape_path("assistant").contains(corner)
    assert not shape_path("user").contains(corner)
    by_id = {i.node_id: i for i in items}
    assert by_id["a3"].state & HEAD and by_id["m"].state & ON_PATH
    assert not by_id["a1b"].state & ON_PATH and by_id["a1b"].state & MERGED
    # the retry sits beside the first reply, the tool call beside the continuation
    scene = panels(desk).graph.view.graph_scene
    assert scene.layout.cell("a1b")[1] == scene.layout.cell("a1")[1]
    assert scene.layout.cell("a1b")[0] > scene.layout.cell("a1")[0]

    # hide and pin from the graph's menu: marks change, HEAD and the layout do not
    cells = dict(scene.layout.cells)

    async def mark() -> None:
        panels(desk).hide("a1b")
        desk.controller.graph_ops.pin("u1", True)
        await aio.until(lambda: "a1b" in scene.hidden_ids and "u1" in scene.pinned_ids,
                        what="hidden and pinned")
        await desk.controller.tasks.idle()

    aio.run(mark())
    assert by_id["a1b"].state & HIDDEN and by_id["u1"].state & PINNED
    assert scene.head == "a3" and dict(scene.layout.cells) == cells

    # the hover preview says what a node is
    preview = panels(desk).graph.view.preview_html("a1b")
    assert "version 2/2" in preview and "merged" in preview and "text of a1b" in preview

    # the keyboard walks the graph and Enter checks out, still without a request
    view = panels(desk).graph.view
    view.setFocus()
    QTest.keyClick(view, Qt.Key.Key_Up)  # from HEAD a3 to the merge node
    assert scene.focused == "m"
    QTest.keyClick(view, Qt.Key.Key_Up)
    QTest.keyClick(view, Qt.Key.Key_Up)
    assert scene.focused == "a2"
    QTest.keyClick(view, Qt.Key.Key_Down)
    assert scene.focused == "at"  # down follows HEAD's path

    async def enter() -> None:
        QTest.keyClick(view, Qt.Key.Key_Up)
        QTest.keyClick(view, Qt.Key.Key_Return)
        await aio.until(lambda: desk.controller.current_view.head == "a2", what="checkout")
        await desk.controller.tasks.idle()

    aio.run(enter())
    assert scene.head == "a2" and desk.requests() == 0


def test_clicking_a_node_moves_head_and_sends_nothing(desk: Desk, aio: Aio) -> None:
    chat = desk.services.chat
    desk.provider.queue(Reply(text="first answer"), Reply(text="second answer"))

    async def setup() -> tuple[str, str, str]:
        session = await chat.sessions.create("Clicks")
        first = await chat.send(session.id, "question one")
        second = await chat.send(session.id, "question two")
        assert first is not None and second is not None
        desk.window.dock.show()
        await desk.controller.session_list.reload()
        desk.controller.open_session(session.id)
        await aio.until(lambda: desk.controller.current_session_id == session.id)
        await aio.until(lambda: len(panels(desk).graph.view.graph_scene.nodes) == 4)
        await desk.controller.tasks.idle()
        return session.id, first.id, second.id

    sid, first, second = aio.run(setup())
    requests = desk.requests()
    desk.window.dock.show()

    before = desk.composer.ring.occupancy
    assert before is not None and before.basis == "measured"

    async def scenario() -> None:
        click_node(desk, first)
        await aio.until(lambda: desk.controller.current_view.head == first, what="checkout")
        await desk.controller.tasks.idle()
        # the ring follows the graph: the other head's measurement is not this one's
        await aio.until(lambda: desk.composer.ring.occupancy is not before, what="ring")

    aio.run(scenario())
    assert desk.requests() == requests
    stored = desk.services.store.call(lambda r: r.get_session(sid))
    assert stored is not None and stored.head == first
    scene = panels(desk).graph.view.graph_scene
    assert scene.head == first
    assert scene.items_by_id[first].state & HEAD
    assert not scene.items_by_id[second].state & ON_PATH
    assert [r.text for r in desk.chat.model.rows][-1] == "first answer"
    after = desk.composer.ring.occupancy
    # the head checked out has a measured request of its own: that one is shown
    assert after is not None and after.head == first and after.basis == "measured"
    assert after.total_used < before.total_used

    # Ctrl+click picks heads for a merge instead of checking out
    aio.run(_ctrl_click(desk, aio, second))
    assert panels(desk).graph.view.selected_nodes() == [second]
    assert desk.controller.current_view.head == first
    menu = panels(desk).graph.view.node_menu(first)
    labels = [a.text() for a in menu.actions() if a.text()]
    assert {"Retry", "Edit…", "Branch into new chat", "Pin", "Hide branch",
            "Merge 2 branches…"} <= set(labels)
    assert desk.requests() == requests


async def _ctrl_click(desk: Desk, aio: Aio, node_id: str) -> None:
    click_node(desk, node_id, Qt.KeyboardModifier.ControlModifier)
    await aio.settle()


def test_the_timeline_shows_the_commit_and_points_at_sources(desk: Desk, aio: Aio) -> None:
    chat = desk.services.chat
    desk.provider.queue(Reply(text="An answer worth reading."))

    async def setup() -> str:
        session = await chat.sessions.create("Timeline")
        reply = await chat.send(session.id, "A question")
        assert reply is not None
        desk.window.dock.show()
        await desk.controller.session_list.reload()
        desk.controller.open_session(session.id)
        await aio.until(lambda: desk.controller.current_session_id == session.id)
        desk.window.dock.show()
        desk.window.dock_tabs.setCurrentWidget(panels(desk).timeline)
        await aio.until(lambda: panels(desk).timeline.commit is not None, what="commit")
        return reply.id

    reply_id = aio.run(setup())
    timeline = panels(desk).timeline
    commit = timeline.commit
    assert commit is not None and commit.head_node_id == reply_id
    assert timeline.model.rowCount() == len(commit.items)
    # the header names the next request's figure once its record arrives (it reads the
    # items' own total until then): wait for it instead of racing it
    aio.run(aio.until(lambda: "in the next request" in timeline.header.text(),
                      what="the next request's figure"))
    assert f"{timeline.total_text()} in the next request" in timeline.header.text()
    assert timeline.history_model.rowCount() >= 1
    assert timeline.select_source(reply_id)
    assert "An answer worth reading." in timeline.detail.toPlainText()
    assert "[full]" in timeline.detail.toPlainText()
    assert panels(desk).graph.view.graph_scene.focused == reply_id
    assert desk.requests() == 1


def test_new_nodes_are_added_without_moving_or_remaking_items(qapp: object) -> None:
    from tests.support.synthetic_graph import conversation

    from treechat.core.dag import Graph, active_path
    from treechat.core.model import Session
    from treechat.services.turns.sessions import SessionView
    from treechat.ui.graph.items import DETAIL_SCALE
    from treechat.ui.graph.view import HistoryGraphView

    def session_view(nodes: list[Node]) -> SessionView:
        graph = Graph(nodes)
        head = next(n.id for n in reversed(nodes) if n.role != "tool")
        return SessionView(Session("s", "t", head, "m", 0.0), graph,
                           active_path(graph, head), frozenset(), frozenset())

    everything = conversation(900)
    view = HistoryGraphView()
    view.resize(400, 700)
    view.show_view(session_view(everything[:800]))
    scene = view.graph_scene
    scene.ensure_items()
    before = {k: (item, item.pos()) for k, item in scene.items_by_id.items()}
    assert len(before) == 800
    view.show_view(session_view(everything))
    scene.ensure_items()
    assert len(scene.items_by_id) == 900
    for node_id, (item, pos) in before.items():
        assert scene.items_by_id[node_id] is item and item.pos() == pos
    assert scene.head == session_view(everything).head
    assert scene.items_by_id[scene.head].state & HEAD

    # zoomed out, the overview draws the graph and node items are not painted at all
    view.fit_all()
    assert view.zoom < DETAIL_SCALE
    assert scene.overview.isVisible() and not scene.node_layer.isVisible()
    view.center_on_node(scene.head, 1.0)
    assert scene.node_layer.isVisible() and not scene.overview.isVisible()
    # hit-testing goes through the layout grid, at any zoom
    assert scene.node_at(scene.point_of(scene.head)) == scene.head
    assert scene.node_at(scene.point_of(scene.head) + QPointF(R * 2, 0)) is None


def branches(desk: Desk, aio: Aio, title: str, count: int) -> str:
    """A chat whose first question was answered `count` times (one column each), every
    message long enough that its label runs far to the right."""
    session = aio.run(desk.services.chat.sessions.create(title))
    sid: str = session.id
    words = "the reply goes on about caches, hashes and the eviction order of old entries"

    def n(i: str, role: str, **kw: object) -> Node:
        return Node(id=i, seq=0, created_at=1.0, session_id=sid, role=role,  # type: ignore[arg-type]
                    output=f"{i}: {words}", **kw)  # type: ignore[arg-type]

    nodes = [n("q", "user")]
    for k in range(count):
        nodes += [n(f"a{k}", "assistant", predecessor="q"),
                  n(f"u{k}", "user", predecessor=f"a{k}")]
    write(desk, sid, nodes, f"u{count - 1}")
    return sid


def open_in_dock(desk: Desk, aio: Aio, sid: str, count: int) -> HistoryPanels:
    async def scenario() -> None:
        desk.window.dock.show()
        await desk.controller.session_list.reload()
        desk.controller.open_session(sid)
        await aio.until(lambda: len(panels(desk).graph.view.graph_scene.nodes) == count)
        await desk.controller.tasks.idle()

    aio.run(scenario())
    return panels(desk)


def labels_in_view(found: HistoryPanels) -> list[tuple[str, bool]]:
    """(node, whether its label's scene rect maps inside the viewport) for every label."""
    view = found.graph.view
    view.graph_scene.ensure_items()
    viewport = QRectF(view.viewport().rect())
    out = []
    metrics = QFontMetricsF(view.graph_scene.graph_style.font)
    for node_id, item in view.graph_scene.items_by_id.items():
        text = item.label_text()
        if not text:
            continue
        # drawn at (R + 6, 4) from the node's centre, on the baseline
        box = item.mapRectToScene(QRectF(R + 6, 4 - metrics.ascent(),
                                         metrics.horizontalAdvance(text),
                                         metrics.ascent() + metrics.descent()))
        assert box == item.mapRectToScene(item.label_rect())
        on_screen = QRectF(view.mapFromScene(box).boundingRect())
        out.append((node_id, viewport.contains(on_screen)))
    return out


def test_fit_shows_every_label_inside_the_dock(desk: Desk, aio: Aio) -> None:
    found = open_in_dock(desk, aio, branches(desk, aio, "Labels", 2), 5)
    view = found.graph.view
    view.center_on_node("q", 1.0)
    QTest.mouseClick(found.graph.fit_button, Qt.MouseButton.LeftButton)
    assert view.zoom >= LABEL_LOD  # labels are drawn at this zoom
    shown = labels_in_view(found)
    assert {node_id for node_id, _inside in shown} == {"q", "a1", "u1"}  # a0, u0: no room
    assert all(inside for _id, inside in shown), shown
    assert view.graph_scene.label_limit is None  # none was cut to fit: all of it shows


def test_fit_of_a_wide_graph_keeps_labels_drawn_and_cuts_them_at_the_edge(
    desk: Desk, aio: Aio
) -> None:
    found = open_in_dock(desk, aio, branches(desk, aio, "Wide", 6), 13)
    view = found.graph.view
    QTest.keyClick(view, Qt.Key.Key_0)  # the Fit shortcut
    assert view.zoom >= LABEL_LOD  # not zoomed out past the labels
    shown = labels_in_view(found)
    assert shown and all(inside for _id, inside in shown), shown
    assert view.graph_scene.label_limit is not None
    widths = {node_id: item.label_rect().width()
              for node_id, item in view.graph_scene.items_by_id.items()}
    # zooming in again gives the labels their whole room back
    view.zoom_by(1.5)
    assert view.graph_scene.items_by_id["u5"].label_rect().width() > widths["u5"]


def drawn_labels(found: HistoryPanels) -> dict[str, tuple[str, float]]:
    """Each painted label as it was drawn, with its right end in viewport pixels."""
    view = found.graph.view
    view.viewport().repaint()
    metrics = QFontMetricsF(view.graph_scene.graph_style.font)
    out = {}
    for node_id, item in view.graph_scene.items_by_id.items():
        text = item.drawn_label
        if not text:
            continue
        right = item.mapToScene(QPointF(R + 6 + metrics.horizontalAdvance(text), 0))
        out[node_id] = (text, float(view.mapFromScene(right).x()))
    return out


def test_labels_end_with_an_ellipsis_at_the_dock_edge_without_fit(desk: Desk, aio: Aio) -> None:
    found = open_in_dock(desk, aio, branches(desk, aio, "Narrow", 2), 5)
    view = found.graph.view
    view.center_on_node("q", 1.0)  # as on first show: no Fit pressed
    assert view.graph_scene.label_limit is None
    drawn = drawn_labels(found)
    width = view.viewport().width()
    assert drawn, "no label painted"
    assert all(right <= width for _text, right in drawn.values()), (width, drawn)
    assert any(text.endswith("…") for text, _right in drawn.values()), drawn
    if os.environ.get("TREECHAT_SCREENSHOTS") == "1":
        shots = Path(__file__).resolve().parents[3] / "docs" / "screenshots"
        desk.window.grab().save(str(shots / "first-hour-graph-labels-edge.png"))
    # scrolled sideways, the cut follows the edge
    view.horizontalScrollBar().setValue(view.horizontalScrollBar().value() + 40)
    moved = drawn_labels(found)
    assert all(right <= width for _text, right in moved.values()), (width, moved)


def test_a_label_shows_the_words_of_a_reply_not_its_markdown(desk: Desk, aio: Aio) -> None:
    session = aio.run(desk.services.chat.sessions.create("Markdown"))
    sid = session.id

    def n(i: str, role: str, text: str, **kw: object) -> Node:
        return Node(id=i, seq=0, created_at=1.0, session_id=sid, role=role,  # type: ignore[arg-type]
                    output=text, **kw)  # type: ignore[arg-type]

    write(desk, sid, [
        n("q", "user", "Say the **secret** word"),
        n("a", "assistant", "The **secret** word is pineapple.\n```", predecessor="q"),
        n("b", "assistant", "```python\nprint('hi')\n```", predecessor="q"),
    ], "a")
    found = open_in_dock(desk, aio, sid, 3)
    from treechat.ui.graph.items import label_for

    nodes = found.graph.view.graph_scene.nodes
    assert label_for(nodes["a"]) == "The secret word is pineapple."
    assert label_for(nodes["b"]) == "print('hi')"
    assert label_for(nodes["q"]) == "Say the **secret** word"  # shown as typed


def test_zooming_in_after_fit_keeps_the_nodes_in_view(desk: Desk, aio: Aio) -> None:
    """Fit centres the labels, which run to the right of their nodes; zooming in from there
    keeps HEAD where it is on screen (it zoomed around the middle of the view, and after a
    few steps every node had left the left edge)."""
    found = open_in_dock(desk, aio, branches(desk, aio, "Zoom in", 3), 7)
    view = found.graph.view
    scene = view.graph_scene
    QTest.keyClick(view, Qt.Key.Key_0)  # Fit
    assert scene.head is not None
    head = scene.point_of(scene.head)
    at = view.mapFromScene(head)
    for _ in range(4):
        view.zoom_by(1.25)
    assert view.zoom > 1.5
    shown = view.mapToScene(view.viewport().rect()).boundingRect()
    assert shown.contains(head)
    assert (view.mapFromScene(head) - at).manhattanLength() <= 2
