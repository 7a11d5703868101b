"""The history graph as a screen reader reads it: a list whose items are the nodes, in the
graph's order, each named as its hover preview names it (who wrote it, the start of its
text) and described with its version and marks. A QGraphicsView offers no accessible
children of its own, so the view's interface is written here and installed as a factory."""

from __future__ import annotations

from typing import cast

from PySide6.QtCore import QObject, QPoint, QRect
from PySide6.QtGui import QAccessible, QAccessibleInterface, QWindow
from PySide6.QtWidgets import QAccessibleWidget

from ...core import dag
from .interactions import ROLE_NAMES, shown_name
from .items import R, label_for, node_kind
from .view import HistoryGraphView

# Qt's "none" for an accessible child, object or window: a null pointer, which the bindings'
# signatures leave out of their return types.
NO_INTERFACE = cast(QAccessibleInterface, None)
NO_OBJECT = cast(QObject, None)

_installed = False


def install_graph_accessibility() -> None:
    """Once per process: the graph views' accessible interface is ours."""
    global _installed
    if not _installed:
        QAccessible.installFactory(_factory)
        _installed = True


def _factory(class_name: str, obj: QObject) -> QAccessibleInterface | None:
    if isinstance(obj, HistoryGraphView):
        return GraphAccessible(obj)
    return None


def node_name(view: HistoryGraphView, node_id: str) -> str:
    scene = view.graph_scene
    node = scene.nodes[node_id]
    who = ROLE_NAMES.get(node_kind(node), node.role)
    name = shown_name(node)
    words = label_for(node)[:120] if node.role != "tool" else ""
    return " · ".join(b for b in (who, name, words) if b)


def node_description(view: HistoryGraphView, node_id: str) -> str:
    scene = view.graph_scene
    node = scene.nodes[node_id]
    bits: list[str] = []
    if node.role in ("user", "assistant") and node.parent:
        n, m = dag.version_of(scene.graph, node_id)
        if m > 1:
            bits.append(f"version {n} of {m}")
    marks = (("current position (HEAD)", node_id == scene.head),
             ("on the branch shown", node_id in scene.path_ids and node_id != scene.head),
             ("pinned", node_id in scene.pinned_ids), ("hidden", node_id in scene.hidden_ids),
             ("merged", node_id in scene.merged_ids), ("interrupted", node.interrupted))
    bits.extend(word for word, on in marks if on)
    return ", ".join(bits)


class GraphAccessible(QAccessibleWidget):
    """The view: a list of node items. Child interfaces are kept here, one per node id, so
    a screen reader holding one keeps a live object."""

    def __init__(self, view: HistoryGraphView) -> None:
        super().__init__(view, QAccessible.Role.List, "History graph")
        self._view = view
        self._children: dict[str, NodeAccessible] = {}
        self._order: list[str] = []
        self._order_key: tuple[int, int] = (0, -1)

    def _ids(self) -> list[str]:
        """The nodes top to bottom, left to right (sorted once per layout)."""
        scene = self._view.graph_scene
        key = (id(scene.layout), len(scene.nodes))
        if key != self._order_key:
            placed = [p for p in scene.layout.placements.values() if p.node_id in scene.nodes]
            placed.sort(key=lambda p: (p.row, p.column))
            self._order = [p.node_id for p in placed] or list(scene.nodes)
            self._order_key = key
        return self._order

    def childCount(self) -> int:
        return len(self._ids())

    def child(self, index: int) -> QAccessibleInterface:
        ids = self._ids()
        if not 0 <= index < len(ids):
            return NO_INTERFACE
        node_id = ids[index]
        found = self._children.get(node_id)
        if found is None:
            found = self._children[node_id] = NodeAccessible(self, node_id)
        return found

    def indexOfChild(self, child: QAccessibleInterface) -> int:
        if isinstance(child, NodeAccessible):
            try:
                return self._ids().index(child.node_id)
            except ValueError:
                return -1
        return -1

    def focusChild(self) -> QAccessibleInterface:
        scene = self._view.graph_scene
        target = scene.focused or scene.head
        if target is None or target not in scene.nodes:
            return NO_INTERFACE
        ids = self._ids()
        return self.child(ids.index(target)) if target in ids else NO_INTERFACE

    @property
    def view(self) -> HistoryGraphView:
        return self._view


class NodeAccessible(QAccessibleInterface):
    """One node of the graph: a list item named by who wrote it and how it begins."""

    def __init__(self, parent: GraphAccessible, node_id: str) -> None:
        super().__init__()
        self._parent = parent
        self.node_id = node_id

    def _view(self) -> HistoryGraphView:
        return self._parent.view

    def isValid(self) -> bool:
        try:
            return self.node_id in self._view().graph_scene.nodes
        except RuntimeError:  # the view is gone
            return False

    def object(self) -> QObject:
        return NO_OBJECT

    def window(self) -> QWindow:
        return self._view().window().windowHandle()

    def parent(self) -> QAccessibleInterface:
        return self._parent

    def child(self, index: int) -> QAccessibleInterface:
        return NO_INTERFACE

    def childCount(self) -> int:
        return 0

    def indexOfChild(self, child: QAccessibleInterface) -> int:
        return -1

    def childAt(self, x: int, y: int) -> QAccessibleInterface:
        return NO_INTERFACE

    def focusChild(self) -> QAccessibleInterface:
        return NO_INTERFACE

    def role(self) -> QAccessible.Role:
        return QAccessible.Role.ListItem

    def text(self, kind: QAccessible.Text) -> str:
        if not self.isValid():
            return ""
        if kind == QAccessible.Text.Name:
            return node_name(self._view(), self.node_id)
        if kind == QAccessible.Text.Description:
            return node_description(self._view(), self.node_id)
        return ""

    def setText(self, kind: QAccessible.Text, text: str) -> None:
        return None

    def rect(self) -> QRect:
        if not self.isValid():
            return QRect()
        view = self._view()
        centre = view.mapFromScene(view.graph_scene.point_of(self.node_id))
        radius = max(4, int(R * view.transform().m11()))
        top_left = view.viewport().mapToGlobal(QPoint(centre.x() - radius, centre.y() - radius))
        return QRect(top_left.x(), top_left.y(), 2 * radius, 2 * radius)

    def state(self) -> QAccessible.State:
        state = QAccessible.State()
        state.selectable = True
        state.focusable = True
        if self.isValid():
            scene = self._view().graph_scene
            state.selected = self.node_id in scene.selected
            state.focused = self.node_id == (scene.focused or scene.head)
            view = self._view()
            visible = view.viewport().rect().contains(
                view.mapFromScene(scene.point_of(self.node_id)))
            state.offscreen = not visible
            state.invisible = False
        return state
