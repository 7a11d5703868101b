"""The Context tab: the commit the next request is built from, item by item in render order
(state badge, tokens, reason, attached source, locked / pinned / anchor marks), the rendered
text of the selected item, the passages it carries with their sources, and the branch's
commit history with fork and merge points."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QRect,
    QSize,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QFont, QPainter, QPen, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QLabel,
    QListView,
    QPlainTextEdit,
    QSplitter,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from ...core.commit import ContextCommit, ContextItem
from ...core.occupancy import Occupancy
from ...services.merge import CommitEntry
from ..common.theme import colors_of
from ..knowledge.passages import PassagesList
from ..occupancy.format import headline, pending_text

ITEM_ROLE = Qt.ItemDataRole.UserRole + 1
PINNED_ROLE = Qt.ItemDataRole.UserRole + 2
ENTRY_ROLE = Qt.ItemDataRole.UserRole + 3

BADGE_COLORS = {  # light, dark
    "full": ("#1f8a43", "#4cc377"),
    "aged": ("#b7791f", "#e0a84a"),
    "cleared": ("#6b7280", "#9aa3af"),
    "summarized": ("#9aa3af", "#6b7280"),
    "summary": ("#7c4ddb", "#a98bfa"),
}
ROLE_LABELS = {"user": "You", "assistant": "Assistant", "tool": "Tool", "runtime": "Runtime",
               "system": "System"}
Index = QModelIndex | QPersistentModelIndex


# The /context rows the items of a commit make up (the rest is the system prompt, the tool
# definitions and files).
ITEM_CATEGORIES = ("summaries", "messages", "tool_results")


def short_id(commit_id: str) -> str:
    return commit_id.removeprefix("cc_")[:8]


def item_marks(item: ContextItem, pinned: bool) -> list[str]:
    marks = []
    if item.locked:
        marks.append("locked")
    if pinned:
        marks.append("pinned")
    if item.is_anchor:
        marks.append("anchor")
    if item.attached_from:
        marks.append(f"from {short_id(item.attached_from)}")
    return marks


class CommitItemsModel(QAbstractListModel):
    """The items of one commit, in render order."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.items: tuple[ContextItem, ...] = ()
        self.pinned: frozenset[str] = frozenset()

    def set_items(self, items: Sequence[ContextItem], pinned: frozenset[str]) -> None:
        self.beginResetModel()
        self.items = tuple(items)
        self.pinned = pinned
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.items)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self.items):
            return None
        item = self.items[index.row()]
        if role == ITEM_ROLE:
            return item
        if role == PINNED_ROLE:
            return item.source_node_id in self.pinned
        if role == Qt.ItemDataRole.DisplayRole:
            return item.rendered.split("\n", 1)[0][:200]
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{item.state} · {item.tokens} tokens · {item.reason}"
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return f"{item.role} {item.state} {item.tokens} tokens"
        return None


class CommitItemDelegate(QStyledItemDelegate):
    """Row: state badge, role, first line of the rendered text, marks, token count."""

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        return QSize(200, option.fontMetrics.height() * 2 + 14)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        item: ContextItem | None = index.data(ITEM_ROLE)
        if item is None:
            return
        colors = colors_of(option.palette)
        painter.save()
        rect = option.rect
        if option.state & QStyle.StateFlag.State_Selected:
            painter.fillRect(rect, QColor(colors.accent_soft))
        elif option.state & QStyle.StateFlag.State_MouseOver:
            painter.fillRect(rect, QColor(colors.hover))
        fm = option.fontMetrics
        line = fm.height()
        x = rect.left() + 10
        top = rect.top() + 6
        badge_font = QFont(option.font)
        badge_font.setPointSizeF(max(7.0, option.font.pointSizeF() * 0.82))
        badge_font.setBold(True)
        painter.setFont(badge_font)
        bfm = painter.fontMetrics()
        badge = item.state
        bw = bfm.horizontalAdvance(badge) + 12
        color = QColor(BADGE_COLORS.get(badge, ("#888", "#888"))[1 if colors.dark else 0])
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        fill = QColor(color)
        fill.setAlpha(38)
        painter.setBrush(fill)
        badge_rect = QRect(x, top + 1, bw, line - 2)
        painter.drawRoundedRect(badge_rect, 6, 6)
        painter.setPen(color)
        painter.drawText(badge_rect, Qt.AlignmentFlag.AlignCenter, badge)
        painter.setFont(option.font)
        tokens = f"{item.tokens:,}"
        tw = fm.horizontalAdvance(tokens)
        painter.setPen(QColor(colors.muted))
        painter.drawText(QRect(rect.right() - tw - 10, top, tw, line),
                         Qt.AlignmentFlag.AlignRight, tokens)
        role = ROLE_LABELS.get(item.role, item.role)
        if item.role == "tool" and item.tool_name:
            role = f"Tool {item.tool_name}"
        head_x = x + bw + 8
        painter.setPen(QColor(colors.text))
        bold = QFont(option.font)
        bold.setBold(True)
        painter.setFont(bold)
        painter.drawText(QRect(head_x, top, rect.width(), line), 0, role)
        rx = head_x + painter.fontMetrics().horizontalAdvance(role) + 8
        painter.setFont(option.font)
        marks = item_marks(item, bool(index.data(PINNED_ROLE)))
        reason = item.reason if not item.reason.startswith("attached_from:") else "attached"
        meta = " · ".join([reason, *marks])
        painter.setPen(QColor(colors.muted))
        room = rect.right() - tw - 20 - rx
        painter.drawText(QRect(rx, top, max(0, room), line), 0,
                         fm.elidedText(meta, Qt.TextElideMode.ElideRight, max(0, room)))
        text = index.data(Qt.ItemDataRole.DisplayRole) or ""
        painter.setPen(QColor(colors.text if item.live else colors.muted))
        painter.drawText(QRect(x, top + line + 2, rect.width() - 20, line), 0,
                         fm.elidedText(text, Qt.TextElideMode.ElideRight, rect.width() - 20))
        painter.setPen(QPen(QColor(colors.border), 1))
        painter.drawLine(rect.left() + 8, rect.bottom(), rect.right() - 8, rect.bottom())
        painter.restore()


class CommitTimeline(QWidget):
    """Shows a commit and a branch history; selecting an item names its source node."""

    itemSelected = Signal(str)  # source node id (a DAG node; "sm_…" for summaries)
    commitSelected = Signal(str)  # head node id of a history entry

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("CommitTimeline")
        self.commit: ContextCommit | None = None
        self.occupancy: Occupancy | None = None  # the record the ring and /context show
        self.pending = 0  # tokens of what the message box holds (typed text, chips)
        self._pinned: frozenset[str] = frozenset()
        self.header = QLabel("No context yet: send a message.")
        self.header.setObjectName("TimelineHeader")
        self.header.setWordWrap(True)
        self.header.setContentsMargins(10, 8, 10, 4)

        self.model = CommitItemsModel(self)
        self.items_view = QListView()
        self.items_view.setObjectName("CommitItems")
        self.items_view.setAccessibleName("Context items")
        self.items_view.setModel(self.model)
        self.items_view.setItemDelegate(CommitItemDelegate(self.items_view))
        self.items_view.setUniformItemSizes(True)
        self.items_view.setMouseTracking(True)
        self.items_view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.items_view.selectionModel().currentChanged.connect(self._current_changed)

        self.detail = QPlainTextEdit()
        self.detail.setObjectName("CommitItemText")
        self.detail.setAccessibleName("Rendered text of the item")
        self.detail.setReadOnly(True)
        self.detail.setPlaceholderText("Select an item to read what the model sees for it.")

        self.history_model = QStandardItemModel(self)
        self.history = QListView()
        self.history.setObjectName("CommitHistory")
        self.history.setAccessibleName("Commit history of this branch")
        self.history.setModel(self.history_model)
        self.history.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.history.setUniformItemSizes(True)
        self.history.clicked.connect(self._history_clicked)
        history_box = QWidget()
        hb = QVBoxLayout(history_box)
        hb.setContentsMargins(0, 0, 0, 0)
        hb.setSpacing(2)
        title = QLabel("Commit history of this branch")
        title.setObjectName("EmptyHint")
        title.setContentsMargins(10, 4, 10, 0)
        hb.addWidget(title)
        hb.addWidget(self.history)

        self.passages = PassagesList()
        self.passages.nodeSelected.connect(self.itemSelected)

        split = QSplitter(Qt.Orientation.Vertical)
        split.setChildrenCollapsible(False)
        split.addWidget(self.items_view)
        split.addWidget(self.detail)
        split.addWidget(self.passages)
        split.addWidget(history_box)
        split.setSizes([360, 120, 120, 140])
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(0)
        box.addWidget(self.header)
        box.addWidget(split, 1)

    def set_commit(self, commit: ContextCommit | None, pinned: frozenset[str] = frozenset()
                   ) -> None:
        self.commit = commit
        self._pinned = pinned
        self.detail.clear()
        self.passages.set_items(commit.items if commit is not None else ())
        if commit is None:
            self.model.set_items((), pinned)
            self.header.setText("No context yet: send a message.")
            return
        self.model.set_items(commit.items, pinned)
        self._show_header()

    def set_occupancy(self, occ: Occupancy | None) -> None:
        """The request's total comes from the one occupancy record the ring and the /context
        dialog show; the items' own sum is only the messages' share of it."""
        self.occupancy = occ
        if self.commit is not None:
            self._show_header()

    def set_pending(self, tokens: int) -> None:
        self.pending = max(0, tokens)
        if self.commit is not None:
            self._show_header()

    def total_text(self) -> str:
        """The request's size as this tab says it (the ring's figure for the same head)."""
        occ, commit = self.occupancy, self.commit
        if occ is not None and commit is not None and occ.head == commit.head_node_id:
            return headline(occ)
        return ""

    def _show_header(self) -> None:
        commit = self.commit
        if commit is None:
            return
        live = len(commit.live)
        parents = len(commit.parent_ids)
        bits = [f"Commit {short_id(commit.id)}", f"{live} of {len(commit.items)} items live"]
        total = self.total_text()
        occ = self.occupancy
        if total and occ is not None:
            # the items' share as the /context dialog's rows count it (each message with
            # its framing), so the two never show different figures for the same items
            parts = dict(occ.breakdown)
            mine = sum(parts.get(k, 0) for k in ITEM_CATEGORIES)
            bits.append(f"{total} in the next request ({mine:,} of it in messages, "
                        "summaries and tool calls, as /context counts them)")
            waiting = pending_text(occ, self.pending)
            if waiting:
                bits.append(waiting)
        else:
            bits.append(f"{commit.total_tokens:,} tokens in these items")
        if parents > 1:
            bits.append(f"merge of {parents} parents")
        attached = commit.attached_sources()
        if attached:
            # branches already in this context, not the chips waiting in the message box
            n = len(attached)
            bits.append(f"{n} branch{'es' if n != 1 else ''} attached in this context")
        self.header.setText(" · ".join(bits))

    def set_history(self, entries: Sequence[CommitEntry]) -> None:
        """`entries` are `CommitEntry`s of the branch, oldest first; shown newest first."""
        self.history_model.clear()
        for entry in reversed(entries):
            when = time.strftime("%H:%M", time.localtime(entry.created_at))
            marks = []
            if entry.is_merge:
                marks.append(f"merge ×{len(entry.parent_ids)}")
            if entry.fork:
                marks.append("fork")
            mark = f"  [{', '.join(marks)}]" if marks else ""
            role = ROLE_LABELS.get(entry.role, entry.role.capitalize())
            row = QStandardItem(f"{when}  {short_id(entry.commit_id)}  {role}: {entry.preview}"
                                f"  · {entry.total_tokens:,} tok{mark}")
            row.setData(entry, ENTRY_ROLE)
            row.setToolTip(f"Commit {entry.commit_id}\nHead {entry.head_node_id}\n"
                           f"Parents: {', '.join(short_id(p) for p in entry.parent_ids) or '-'}")
            self.history_model.appendRow(row)

    def select_source(self, node_id: str) -> bool:
        """Select the first item that came from `node_id` (True if there is one)."""
        for row, item in enumerate(self.model.items):
            if item.source_node_id == node_id:
                self.items_view.setCurrentIndex(self.model.index(row))
                return True
        return False

    def _current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        item: ContextItem | None = current.data(ITEM_ROLE) if current.isValid() else None
        if item is None:
            self.detail.clear()
            return
        header = f"[{item.state}] {item.role} · {item.tokens} tokens · {item.reason}"
        if item.merged_into:
            header += f" · folded into {item.merged_into}"
        body = item.rendered if item.live else "(folded into a summary; not sent)"
        self.detail.setPlainText(f"{header}\n\n{body}")
        self.itemSelected.emit(item.source_node_id.split("#", 1)[0])

    def _history_clicked(self, index: QModelIndex) -> None:
        entry = index.data(ENTRY_ROLE)
        if entry is not None:
            self.commitSelected.emit(entry.head_node_id)
