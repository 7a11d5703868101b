"""The passages a request carries, for the Context tab: each search result the model got (a
knowledge file's passage by file, page and line; an earlier message by its node; another
chat's message by chat and node), with its text. Activating a file's passage opens the file
at that place; selecting any passage names its node, for the graph to show."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QModelIndex, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import QAbstractItemView, QLabel, QListView, QVBoxLayout, QWidget

from ...core.citations import Carried, carried_passages, source_url
from ...core.commit import ContextItem

CARRIED_ROLE = Qt.ItemDataRole.UserRole + 1
PREVIEW_CHARS = 220
KIND_LABELS = {"knowledge": "Knowledge", "recall": "Recall", "chat": "Other chat"}


def passage_row(c: Carried) -> str:
    p = c.passage
    state = "" if c.state == "full" else f" · {c.state}"
    text = " ".join(p.text.split())
    if len(text) > PREVIEW_CHARS:
        text = text[:PREVIEW_CHARS - 1] + "…"
    return f"{KIND_LABELS.get(p.kind, p.kind)}: {p.short_source}{state}\n{text}"


class PassagesList(QWidget):
    nodeSelected = Signal(str)  # the tool call that brought the passage

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ContextPassages")
        self.title = QLabel("")
        self.title.setObjectName("EmptyHint")
        self.title.setContentsMargins(10, 4, 10, 0)
        self.title.setWordWrap(True)  # a narrow dock reads the whole line, in two
        self.model = QStandardItemModel(self)
        self.view = QListView()
        self.view.setObjectName("ContextPassageList")
        self.view.setAccessibleName("Passages this request carries")
        self.view.setModel(self.model)
        self.view.setWordWrap(True)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.view.setSpacing(3)  # passages of several lines each: apart, they read apart
        self.view.clicked.connect(self._clicked)
        self.view.activated.connect(self._activated)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(2)
        box.addWidget(self.title)
        box.addWidget(self.view, 1)
        self.carried: tuple[Carried, ...] = ()
        self.set_items(())

    def set_items(self, items: Sequence[ContextItem]) -> None:
        self.carried = tuple(carried_passages(items))
        self.model.clear()
        for c in self.carried:
            row = QStandardItem(passage_row(c))
            row.setData(c, CARRIED_ROLE)
            opens = ("\n\nDouble-click or Enter opens the file here."
                     if c.passage.kind == "knowledge" else "")
            row.setToolTip(f"{c.passage.source}\n\n{c.passage.text[:2000]}{opens}")
            row.setAccessibleText(f"{c.passage.kind} passage from {c.passage.source}")
            self.model.appendRow(row)
        n = len(self.carried)
        self.title.setText(
            f"Passages this request carries: {n}" if n
            else "No retrieved passages in this request: knowledge and recall results show "
                 "here with their sources.")
        self.view.setVisible(bool(n))

    def _clicked(self, index: QModelIndex) -> None:
        c = index.data(CARRIED_ROLE)
        if isinstance(c, Carried):
            self.nodeSelected.emit(c.node_id)

    def _activated(self, index: QModelIndex) -> None:
        c = index.data(CARRIED_ROLE)
        if isinstance(c, Carried) and c.passage.kind == "knowledge":
            QDesktopServices.openUrl(QUrl(source_url(c.passage)))
