"""The gestures on the history graph, one object each: a click or press on a node (check it
out, or toggle it in the merge selection), panning the empty canvas, dragging a node out to
attach it, the context menus, the hover preview and the keyboard cursor. The view hands its
events here; each gesture reports through the view's signals."""

from __future__ import annotations

import html
import json
import time
from typing import TYPE_CHECKING

from PySide6.QtCore import QMimeData, QPoint, QPointF, QRectF, Qt
from PySide6.QtGui import QContextMenuEvent, QDrag, QHelpEvent, QMouseEvent, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QApplication, QMenu, QToolTip

from ...core import dag
from ...core.model import Node
from .items import label_for, node_kind
from .mime import node_mime

if TYPE_CHECKING:
    from .scene import HistoryScene
    from .view import HistoryGraphView

ROLE_NAMES = {
    "user": "You", "assistant": "Assistant", "tool": "Tool call", "attach": "Attached context",
    "merge": "Merge", "system": "System", "runtime": "Runtime",
}


class Pan:
    """Dragging the canvas (left button on empty space, or the middle button anywhere)."""

    def __init__(self, view: HistoryGraphView, at: QPoint) -> None:
        self._view = view
        self._last = at
        self.moved = False
        view.viewport().setCursor(Qt.CursorShape.ClosedHandCursor)

    def move(self, pos: QPoint) -> None:
        delta = pos - self._last
        self._last = pos
        if delta.manhattanLength():
            self.moved = True
        view = self._view
        view.horizontalScrollBar().setValue(view.horizontalScrollBar().value() - delta.x())
        view.verticalScrollBar().setValue(view.verticalScrollBar().value() - delta.y())

    def end(self) -> None:
        self._view.viewport().setCursor(Qt.CursorShape.ArrowCursor)


class NodeDrag:
    """A node dragged out of the graph: what it carries (an attach of that head) and the
    pill that follows the pointer."""

    def __init__(self, view: HistoryGraphView) -> None:
        self._view = view

    def mime(self, node_id: str) -> QMimeData:
        return node_mime(self._view.graph_scene.session_id or "", node_id)

    def start(self, node_id: str) -> None:
        if self._view.graph_scene.session_id is None:
            return
        drag = QDrag(self._view)
        drag.setMimeData(self.mime(node_id))
        drag.setPixmap(self.pixmap(node_id))
        drag.exec(Qt.DropAction.CopyAction)

    def pixmap(self, node_id: str) -> QPixmap:
        scene = self._view.graph_scene
        node = scene.nodes[node_id]
        text = label_for(node)[:40] or ROLE_NAMES.get(node_kind(node), node.role)
        metrics = self._view.fontMetrics()
        w = min(280, metrics.horizontalAdvance(text) + 34)
        pixmap = QPixmap(w, 24)
        pixmap.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pixmap)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        style = scene.graph_style
        painter.setBrush(style.background)
        painter.setPen(QPen(style.accent, 1.2))
        painter.drawRoundedRect(QRectF(0.5, 0.5, w - 1, 23), 11, 11)
        painter.setBrush(style.fills[node_kind(node)])
        painter.setPen(Qt.PenStyle.NoPen)
        painter.drawEllipse(QPointF(13, 12), 5, 5)
        painter.setPen(style.text)
        painter.drawText(QRectF(24, 0, w - 28, 24), Qt.AlignmentFlag.AlignVCenter,
                         metrics.elidedText(text, Qt.TextElideMode.ElideRight, w - 30))
        painter.end()
        return pixmap


class PointerGestures:
    """Press, move and release on the view: a click on a node checks it out (with Ctrl or
    Shift it toggles the node in the merge selection), a press on a node that moves becomes
    a drag, a press on the empty canvas pans it and, if it did not move, clears the
    selection."""

    def __init__(self, view: HistoryGraphView) -> None:
        self._view = view
        self._press: tuple[QPoint, str | None] | None = None
        self._pan: Pan | None = None
        self.drag = NodeDrag(view)

    def press(self, event: QMouseEvent) -> bool:
        view = self._view
        pos = event.position().toPoint()
        if event.button() == Qt.MouseButton.MiddleButton:
            self._pan = Pan(view, pos)
            return True
        if event.button() != Qt.MouseButton.LeftButton:
            return False
        node_id = view.graph_scene.node_at(view.mapToScene(pos))
        self._press = (pos, node_id)
        if node_id is None:
            self._pan = Pan(view, pos)
        event.accept()
        return True

    def move(self, event: QMouseEvent) -> bool:
        view = self._view
        pos = event.position().toPoint()
        if self._pan is not None:
            self._pan.move(pos)
            return True
        press = self._press
        if press is not None and press[1] is not None:
            start, node_id = press[0], press[1]
            if (pos - start).manhattanLength() >= QApplication.startDragDistance():
                self._press = None
                self.drag.start(node_id)
            return True
        hovering = view.graph_scene.node_at(view.mapToScene(pos)) is not None
        view.viewport().setCursor(Qt.CursorShape.PointingHandCursor if hovering
                                  else Qt.CursorShape.ArrowCursor)
        return False

    def release(self, event: QMouseEvent) -> bool:
        view = self._view
        press, self._press = self._press, None
        pan, self._pan = self._pan, None
        if pan is not None:
            pan.end()
            clicked_empty = press is not None and press[1] is None and not pan.moved
            if clicked_empty and not event.modifiers() & Qt.KeyboardModifier.ControlModifier:
                view.select(())
            return True
        if press is None or press[1] is None or event.button() != Qt.MouseButton.LeftButton:
            return False
        node_id = press[1]
        mods = event.modifiers()
        if mods & (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier):
            view.toggle_selected(node_id)
        else:
            view.checkoutRequested.emit(node_id)
        event.accept()
        return True


def context_menu(view: HistoryGraphView, event: QContextMenuEvent) -> None:
    """The node's menu over a node, else the canvas menu (fit, go to HEAD)."""
    node_id = view.graph_scene.node_at(view.mapToScene(event.pos()))
    if node_id is not None:
        node_menu(view, node_id).popup(event.globalPos())
        return
    menu = QMenu(view)
    menu.addAction("Fit graph", view.fit_all)
    if view.graph_scene.head:
        menu.addAction("Go to HEAD", lambda: view.center_on_node(
            view.graph_scene.head or "", max(view.zoom, 1.0)))
    menu.popup(event.globalPos())


def node_menu(view: HistoryGraphView, node_id: str) -> QMenu:
    """The context menu of a node (built apart so tests can read it without showing it)."""
    scene = view.graph_scene
    node = scene.nodes[node_id]
    menu = QMenu(view)
    menu.setObjectName("NodeMenu")
    menu.addAction("Check out", lambda: view.checkoutRequested.emit(node_id))
    retry = menu.addAction("Retry", lambda: view.retryRequested.emit(node_id))
    retry.setEnabled(node.role in ("user", "assistant") and not view.busy)
    edit = menu.addAction("Edit…", lambda: view.editRequested.emit(node_id))
    edit.setEnabled(node.role == "user" and not view.busy)
    menu.addAction("Branch into new chat", lambda: view.branchRequested.emit(node_id))
    pinned = node_id in scene.pinned_ids
    menu.addAction("Unpin" if pinned else "Pin",
                   lambda: view.pinRequested.emit(node_id, not pinned))
    menu.addAction("Hide branch", lambda: view.hideRequested.emit(node_id))
    menu.addSeparator()
    menu.addAction("Attach to next message", lambda: view.attachRequested.emit(node_id))
    selected = view.selected_nodes()
    in_selection = node_id in selected
    menu.addAction("Remove from merge selection" if in_selection else "Select for merge",
                   lambda: view.toggle_selected(node_id))
    heads = selected if in_selection else [*selected, node_id]
    merge = menu.addAction(f"Merge {len(heads)} branches…",
                           lambda: view.mergeRequested.emit(heads))
    merge.setEnabled(len(heads) >= 2 and not view.busy)
    return menu


def show_preview(view: HistoryGraphView, event: QHelpEvent) -> None:
    """The hover preview as a tooltip (or none off the nodes)."""
    node_id = view.graph_scene.node_at(view.mapToScene(event.pos()))
    if node_id is None:
        QToolTip.hideText()
    else:
        QToolTip.showText(event.globalPos(), preview_html(view.graph_scene, node_id), view)


def preview_html(scene: HistoryScene, node_id: str) -> str:
    """The hover preview of a node: who, when, version, marks and the start of the text."""
    node = scene.nodes[node_id]
    kind = node_kind(node)
    graph = scene.graph if node.parent else None
    bits = [ROLE_NAMES.get(kind, node.role)]
    shown = shown_name(node)
    if shown:
        bits.append(shown)
    bits.append(time.strftime("%d %b %H:%M", time.localtime(node.created_at)))
    if graph is not None and node.role in ("user", "assistant"):
        n, m = dag.version_of(graph, node_id)
        if m > 1:
            bits.append(f"version {n}/{m}")
    marks = []
    if node_id == scene.head:
        marks.append("HEAD")
    if node_id in scene.pinned_ids:
        marks.append("pinned")
    if node_id in scene.merged_ids:
        marks.append("merged")
    if node_id in scene.hidden_ids:
        marks.append("hidden")
    if node.interrupted:
        marks.append("interrupted")
    text = node.text
    if node.role == "tool" and node.input is not None:
        text = f"{json.dumps(node.input, ensure_ascii=False)[:200]}\n→ {text}"
    body = html.escape(text[:420] + ("…" if len(text) > 420 else "")).replace("\n", "<br>")
    head = html.escape(" · ".join(bits))
    mark = f" <i>({html.escape(', '.join(marks))})</i>" if marks else ""
    return f"<p style='white-space:pre-wrap'><b>{head}</b>{mark}<br>{body}</p>"


def shown_name(node: Node) -> str:
    """Who wrote a node as a person reads it: a reply's model by its display name, an MCP
    tool as "server › tool", never the internal address ("local/smollm2-…")."""
    meta = node.metadata
    if node.role == "assistant":
        label = meta.get("model_label")
        return str(label) if isinstance(label, str) and label else node.name
    if node.role == "tool":
        mcp = meta.get("mcp")
        if isinstance(mcp, dict) and mcp.get("server") and mcp.get("tool"):
            return f"{mcp['server']} › {mcp['tool']}"
        return node.name
    return ""


def cursor_target(scene: HistoryScene, key: int) -> str | None:
    """Where the keyboard cursor goes for an arrow key: up to the parent, down to the child
    on HEAD's path (or the first), left and right to the neighbours in the same row."""
    current = scene.focused if scene.focused in scene.nodes else scene.head
    if current is None:
        return None
    target: str | None = None
    if key == Qt.Key.Key_Up:
        target = scene.layout.placements[current].parent
    elif key == Qt.Key.Key_Down:
        children = scene.graph.children(current) if current in scene.graph else ()
        on_path = [c.id for c in children if c.id in scene.path_ids]
        target = on_path[0] if on_path else (children[0].id if children else None)
    else:
        column, row = scene.layout.cell(current)
        step = -1 if key == Qt.Key.Key_Left else 1
        for k in range(1, scene.layout.width + 1):
            found = scene.layout.cells.get((column + step * k, row))
            if found is not None:
                target = found
                break
    return target if target is not None and target in scene.nodes else None
