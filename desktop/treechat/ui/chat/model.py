"""The chat view's list model: the rows (`rows`) of a session's active path, from a few
screens above its end on for a long one (the rows above come in as they are asked for),
plus the reply streaming in and an inline error."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QAbstractListModel, QModelIndex, QObject, QPersistentModelIndex, Qt

from ...services.turns.events import TurnError
from ...services.turns.sessions import SessionView
from .rows import (
    THINKING_KEY,
    TURN_KINDS,
    ChatRow,
    RowKind,
    model_label,
    rows_for,
    turn_start,
    with_turn_marks,
)

__all__ = ["CONTENT_ROLES", "ROW_ROLE", "THINKING_KEY", "TURN_KINDS", "ChatModel", "ChatRow",
           "RowKind", "model_label", "rows_for", "with_turn_marks"]

ROW_ROLE = int(Qt.ItemDataRole.UserRole) + 1
# Changes are announced for these roles only: naming none (or the size hint's) lays out all rows
CONTENT_ROLES = [ROW_ROLE, int(Qt.ItemDataRole.DisplayRole),
                 int(Qt.ItemDataRole.AccessibleTextRole)]

ModelIndex = QModelIndex | QPersistentModelIndex

SHOWN_NODES = 120  # nodes of a long path's end a session opens on: a few screens' worth
EARLIER_NODES = 150  # nodes brought in above at a time as the list is scrolled up


@dataclass(slots=True)
class _Stream:
    parent_id: str | None
    label: str
    text: str = ""
    active: bool = True
    revision: int = 0
    waiting: str = ""
    own_turn: bool = False  # a reply to several (a fusion, a merge): its own header


class ChatModel(QAbstractListModel):
    """A list model over a `SessionView`'s active path. Rows are `ChatRow`s (ROW_ROLE);
    the display role carries a readable summary for screen readers."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._rows: list[ChatRow] = []
        self._base: list[ChatRow] = []
        self._view: SessionView | None = None
        self.model_name: Callable[[str], str] | None = None  # a model's one name
        self._stream: _Stream | None = None
        self._error: TurnError | None = None
        self._error_revision = 0
        self._expanded: set[str] = set()
        self._start = 0  # the rows show the path from this node on (`show_earlier`)
        self._earlier: tuple[SessionView, int, list[ChatRow]] | None = None

    # --- Qt model interface --------------------------------------------------------------

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        row = self._rows[index.row()]
        if role == ROW_ROLE:
            return row
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.AccessibleTextRole):
            return row.accessible_text()
        return None

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        flags = Qt.ItemFlag.ItemIsEnabled
        if self._rows[index.row()].kind == RowKind.USER:
            flags |= Qt.ItemFlag.ItemIsEditable
        return flags

    # --- reading -------------------------------------------------------------------------

    @property
    def rows(self) -> list[ChatRow]:
        return self._rows

    @property
    def view(self) -> SessionView | None:
        return self._view

    @property
    def streaming(self) -> bool:
        return self._stream is not None and self._stream.active

    def row_at(self, index: int) -> ChatRow:
        return self._rows[index]

    def index_of(self, key: str) -> int:
        for i, row in enumerate(self._rows):
            if row.key == key:
                return i
        return -1

    def has_earlier(self) -> bool:
        """Whether the path goes on above the first row (`show_earlier` brings it in)."""
        return self._start > 0

    # --- the part of a long path on show -------------------------------------------------
    # A long path's rows are made, laid out and measured only from a few screens above its
    # end: the list lays out and asks the height of every row it holds at each change, and
    # 10,000 of them would hold the window still for a third of a second every time. The
    # rows above come in a slice at a time as the list is scrolled up to them.

    def show_earlier(self, nodes: int = EARLIER_NODES) -> int:
        """Bring in the rows of about `nodes` more nodes above the first; returns how many
        rows came in (inserted at the top: the rows below keep their order, one index on per
        row added)."""
        view = self._view
        if view is None or self._start == 0:
            return 0
        start = turn_start(view.path, self._start - nodes)
        before = len(self._rows)
        self._base = rows_for(view, frozenset(self._expanded), self.model_name, start,
                              self._start) + self._base
        self._start = start
        self._publish()
        return len(self._rows) - before

    def earlier_rows(self) -> list[ChatRow]:
        """The rows `show_earlier` brings in next, marked as they will be there: measured
        ahead while the window is idle, they come in with their heights known."""
        view = self._view
        if view is None or self._start == 0:
            return []
        cached = self._earlier
        if cached is None or cached[0] is not view or cached[1] != self._start:
            start = turn_start(view.path, self._start - EARLIER_NODES)
            above = rows_for(view, frozenset(self._expanded), self.model_name, start,
                             self._start)
            marked = with_turn_marks([*above, *self._rows[:1]])[:len(above)]
            cached = self._earlier = (view, self._start, marked)
        return cached[2]

    def show_from(self, key: str) -> int:
        """Bring in the rows down from the message `key` (a node of the path, or its
        Thinking row) if it is above the first row; returns its row, -1 when it is not on
        the path at all."""
        index = self.index_of(key)
        view = self._view
        if index >= 0 or view is None:
            return index
        node_id = key.removeprefix(THINKING_KEY)
        at = next((i for i, n in enumerate(view.path[:self._start]) if n.id == node_id), -1)
        if at < 0:
            return -1
        self.show_earlier(self._start - at)
        return self.index_of(key)

    def _first_shown(self, view: SessionView) -> int:
        """Where the rows of `view` begin: at the node the rows began at before when it is
        still on the path (the same session redrawn, or read whole after its end), else a
        few screens above the end."""
        previous = self._view
        if (previous is not None and previous.session.id == view.session.id
                and self._start < len(previous.path)):
            first = previous.path[self._start].id
            at = next((i for i, n in enumerate(view.path) if n.id == first), -1)
            if at >= 0:  # (the end read alone may begin within a turn: from its question)
                return turn_start(view.path, at)
        if len(view.path) <= SHOWN_NODES:
            return 0
        return turn_start(view.path, len(view.path) - SHOWN_NODES)

    # --- updates -------------------------------------------------------------------------

    def set_view(self, view: SessionView) -> None:
        same_session = self._view is not None and self._view.session.id == view.session.id
        if not same_session:
            self._stream = None
            self._error = None
            self._expanded.clear()
        self._start = self._first_shown(view)
        self._view = view
        stream = self._stream
        if stream is not None:
            if not stream.active:
                self._stream = None  # the finished reply is a node of the path now
            elif not _stream_on_path(view, stream.parent_id):
                pass  # another branch is on screen: the stream stays with its own, unshown
            elif view.head is not None and view.head != stream.parent_id:
                # what streamed so far was committed as a node: continue under it
                stream.parent_id = view.head
                stream.text = ""
                stream.revision += 1
        self._base = rows_for(view, frozenset(self._expanded), self.model_name, self._start)
        self._publish()

    def begin_stream(self, parent_id: str | None, label: str, own_turn: bool = False) -> None:
        self._stream = _Stream(parent_id=parent_id, label=label, own_turn=own_turn)
        self._error = None
        self._publish()

    def set_stream_text(self, text: str) -> int:
        """Replace the streamed text; returns the stream row (-1 when there is none).

        Silent: QListView answers dataChanged with a full relayout, too much thirty times
        a second, so the view repaints the row itself; `end_stream` announces the result."""
        if self._stream is None:
            return -1
        self._stream.text = text
        self._stream.revision += 1
        return self._refresh_stream(announce=False)

    def end_stream(self) -> None:
        if self._stream is not None:
            self._stream.active = False
            self._stream.revision += 1
            self._refresh_stream()

    def stream_text(self) -> str:
        return self._stream.text if self._stream is not None else ""

    def set_stream_waiting(self, note: str) -> None:
        """What the reply's header says while it waits to start ("" once it is written)."""
        if self._stream is not None and self._stream.waiting != note:
            self._stream.waiting = note
            self._refresh_stream()

    def stream_waiting(self) -> str:
        return self._stream.waiting if self._stream is not None else ""

    def set_error(self, error: TurnError | None) -> None:
        self._error = error
        self._error_revision += 1  # a different error is a different row to lay out
        self._publish()

    def toggle_expanded(self, key: str) -> None:
        if key in self._expanded:
            self._expanded.discard(key)
        else:
            self._expanded.add(key)
        self._base = [
            r._replace(expanded=r.key in self._expanded) if r.key == key else r
            for r in self._base
        ]
        self._publish()

    def _refresh_stream(self, *, announce: bool = True) -> int:
        index = self.index_of("stream")
        if index < 0 or self._stream is None:
            return -1
        old = self._rows[index]
        self._rows[index] = old._replace(
            text=self._stream.text,
            revision=self._stream.revision,
            streaming=self._stream.active,
            waiting=self._stream.waiting,
        )
        if announce:
            self.dataChanged.emit(self.index(index), self.index(index), CONTENT_ROLES)
        return index

    def _compose(self) -> list[ChatRow]:
        rows = list(self._base)
        stream = self._stream
        if stream is not None and (self._view is None
                                   or not _stream_on_path(self._view, stream.parent_id)):
            stream = None  # streaming on a branch that is not shown: its text is not here
        if stream is not None:
            cut = _cut_after(rows, stream.parent_id)
            rows = rows[:cut]
            rows.append(
                ChatRow(
                    RowKind.STREAM,
                    "stream",
                    text=stream.text,
                    label=stream.label,
                    model=stream.label,
                    revision=stream.revision,
                    streaming=stream.active,
                    waiting=stream.waiting,
                )
            )
        rows = with_turn_marks(rows)
        if stream is not None and stream.own_turn and len(rows) > 1:
            # it hangs under the reply on screen but is not that reply's continuation
            above, own = rows[-2], rows[-1]
            rows[-2] = above.marked(above.starts_turn, True, above.is_last, above.at_end)
            rows[-1] = own.marked(True, own.ends_turn, own.is_last, own.at_end)
        if self._error is not None:
            target = next(
                (r.node.caller or r.node.id if r.kind == RowKind.TOOL else r.node.id
                 for r in reversed(rows) if r.node is not None),
                None,
            )
            if stream is not None and stream.parent_id is not None:
                target = stream.parent_id
            if rows and rows[-1].at_end:
                last = rows[-1]
                rows[-1] = last.marked(last.starts_turn, last.ends_turn, last.is_last, False)
            rows.append(ChatRow(RowKind.ERROR, "error", text=self._error.message,
                                error=self._error, retry_target=target,
                                revision=self._error_revision, at_end=True))
        return rows

    def _publish(self) -> None:
        """Move to the composed rows with the smallest change Qt needs to hear about: a
        shared prefix and suffix stay (rows brought in above are inserted at the top), the
        rest between them is removed and inserted."""
        new = self._compose()
        old = self._rows
        limit = min(len(old), len(new))
        prefix = 0
        while prefix < limit and old[prefix].key == new[prefix].key:
            prefix += 1
        suffix = 0
        while suffix < limit - prefix and old[-1 - suffix].key == new[-1 - suffix].key:
            suffix += 1
        changed = [i for i in range(prefix) if old[i] != new[i]]
        changed_below = [len(new) - k for k in range(suffix, 0, -1) if old[-k] != new[-k]]
        if prefix < len(old) - suffix:
            self.beginRemoveRows(QModelIndex(), prefix, len(old) - suffix - 1)
            self._rows = old[:prefix] + old[len(old) - suffix:]
            self.endRemoveRows()
        if prefix < len(new) - suffix:
            self.beginInsertRows(QModelIndex(), prefix, len(new) - suffix - 1)
            self._rows = self._rows[:prefix] + new[prefix:len(new) - suffix] + self._rows[prefix:]
            self.endInsertRows()
        for i in (*changed, *changed_below):
            self._rows[i] = new[i]
        for span in (changed, changed_below):
            if span:
                self.dataChanged.emit(self.index(span[0]), self.index(span[-1]), CONTENT_ROLES)


def _stream_on_path(view: SessionView, parent_id: str | None) -> bool:
    """Whether a reply streaming under `parent_id` belongs to the branch `view` shows: its
    parent is on the path, or not a stored node yet (the message shown before the store had
    it, replaced by the stored one)."""
    if parent_id is None or parent_id not in view.graph:
        return True
    return any(node.id == parent_id for node in view.path)


def _cut_after(rows: list[ChatRow], parent_id: str | None) -> int:
    """Where a reply to `parent_id` goes: after that row and its tool rows (a reply to a
    message further up replaces what the path showed below it)."""
    if parent_id is None:
        return len(rows)
    for i, row in enumerate(rows):
        if row.key == parent_id:
            end = i + 1
            while (end < len(rows) and rows[end].kind == RowKind.TOOL
                   and (node := rows[end].node) is not None and node.caller == parent_id):
                end += 1
            return end
    # the parent is not shown (a hidden tool-only step): keep the path as it is
    return len(rows)
