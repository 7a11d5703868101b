"""The Graph tab: a small toolbar (zoom, fit, HEAD, merge) over the history graph view."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ...services.turns.sessions import SessionView
from ..common.elided_label import ElidedLabel
from .view import HistoryGraphView

MERGE_WIDEST = "Merge 99…"  # the merge button is as wide as this whatever it says


class HistoryGraphPanel(QWidget):
    """The Graph tab: a small toolbar over the view (zoom, fit, HEAD, merge)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("HistoryGraphPanel")
        self.view = HistoryGraphView(self)
        bar = QHBoxLayout()
        bar.setContentsMargins(8, 6, 8, 4)
        bar.setSpacing(4)

        def button(text: str, tip: str, slot: Callable[[], object]) -> QToolButton:
            b = QToolButton()
            b.setText(text)
            b.setToolTip(tip)
            b.setAccessibleName(tip)
            b.setAutoRaise(True)
            b.clicked.connect(slot)
            bar.addWidget(b)
            return b

        self.zoom_out_button = button("−", "Zoom out (-)", lambda: self.view.zoom_by(0.8))
        self.zoom_in_button = button("+", "Zoom in (+)", lambda: self.view.zoom_by(1.25))
        self.fit_button = button("Fit", "Fit the whole graph (0)", self.view.fit_all)
        self.head_button = button("HEAD", "Go to HEAD (H)", self._go_head)
        self.summary = ElidedLabel("")  # elides: the dock never widens for it
        self.summary.setObjectName("EmptyHint")
        bar.addWidget(self.summary, 1)
        self.merge_button = button("Merge…", "Merge the selected branch heads", self._merge)
        self.merge_button.setEnabled(False)
        # one width for "Merge…" and "Merge 2…": the toolbar does not shift as heads are picked
        self.merge_button.setText(MERGE_WIDEST)
        self.merge_button.setMinimumWidth(self.merge_button.sizeHint().width())
        self.merge_button.setText("Merge…")
        self.hint = QLabel("Click a node (or arrows, Enter) to check it out · drag it onto "
                           "the message box to attach it · Ctrl+click heads to merge them")
        self.hint.setObjectName("EmptyHint")
        self.hint.setWordWrap(True)
        self.hint.setContentsMargins(10, 0, 10, 6)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(0)
        box.addLayout(bar)
        box.addWidget(self.hint)
        box.addWidget(self.view, 1)
        self.view.selectionChangedTo.connect(self._selection)

    def show_view(self, view: SessionView) -> None:
        self.view.show_view(view)
        scene = self.view.graph_scene
        nodes = len(scene.nodes)
        continued = {n.predecessor for n in scene.nodes.values()}
        leaves = sum(1 for n in scene.nodes.values()
                     if n.role != "tool" and n.id not in continued)
        nodes_text = f"{nodes:,} node{'s' if nodes != 1 else ''}"
        branches_text = f"{leaves:,} branch{'es' if leaves != 1 else ''}"
        # a narrow dock shows the counts in fewer words before it cuts any
        self.summary.set_texts(f"{nodes_text} · {branches_text}",
                               f"{nodes:,} · {branches_text}", branches_text)
        self._selection(self.view.selected_nodes())

    def clear(self) -> None:
        self.view.graph_scene.clear_view()
        self.view.minimap.invalidate()
        self.summary.setText("")
        self._selection([])

    def set_busy(self, busy: bool) -> None:
        self.view.busy = busy
        self._selection(self.view.selected_nodes())

    def _selection(self, selected: list[str]) -> None:
        self.merge_button.setEnabled(len(selected) >= 2 and not self.view.busy)
        self.merge_button.setText(f"Merge {len(selected)}…" if len(selected) >= 2 else "Merge…")

    def _merge(self) -> None:
        selected = self.view.selected_nodes()
        if len(selected) >= 2:
            self.view.mergeRequested.emit(selected)

    def _go_head(self) -> None:
        head = self.view.graph_scene.head
        if head:
            self.view.center_on_node(head, max(self.view.zoom, 1.0))

