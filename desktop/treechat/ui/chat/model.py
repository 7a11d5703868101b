"""The rows of the chat view: one per visible message of a session's active path, each tool
call as a compact row after its assistant, plus the reply streaming in and an inline error."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, NamedTuple

from PySide6.QtCore import QAbstractListModel, QModelIndex, QObject, QPersistentModelIndex, Qt

from ...core.citations import TurnSources, with_sources
from ...core.model import GraphError, Node
from ...core.reply import reasoning_of
from ...core.tool_names import shown_tool_name
from ...services.turns.events import TurnError
from ...services.turns.sessions import SessionView

ROW_ROLE = int(Qt.ItemDataRole.UserRole) + 1
# Changes are announced for these roles only: naming none (or the size hint's) lays out all rows
CONTENT_ROLES = [ROW_ROLE, int(Qt.ItemDataRole.DisplayRole),
                 int(Qt.ItemDataRole.AccessibleTextRole)]

ModelIndex = QModelIndex | QPersistentModelIndex


class RowKind(Enum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"
    SYSTEM = "system"
    NOTE = "note"
    STREAM = "stream"
    ERROR = "error"


TURN_KINDS = (RowKind.ASSISTANT, RowKind.TOOL, RowKind.STREAM)
THINKING_KEY = "thinking:"  # a reply's Thinking row: this, then the reply's node id


class ChatRow(NamedTuple):
    """Everything the delegate needs to lay out and paint one row.

    A named tuple rather than a frozen dataclass: just as immutable, and several times
    cheaper to make, which counts when a 2,000-message session opens."""

    kind: RowKind
    key: str  # node id; "stream" / "error" for the rows without a node
    node: Node | None = None
    text: str = ""
    label: str = ""  # model of an assistant reply, tool name, note title
    model: str = ""  # the model that wrote the reply this row belongs to (header text)
    version: tuple[int, int] = (1, 1)
    pinned: bool = False
    interrupted: bool = False
    starts_turn: bool = False  # the first row of a reply: draws the assistant header
    ends_turn: bool = True  # the last row of a reply: draws the action bar
    expanded: bool = False  # tool / system rows show their full content
    is_last: bool = False  # last message of the path (a user message here can be retried)
    at_end: bool = False  # the bottom row of the list (gets room below it)
    revision: int = 0  # grows with the streamed text
    streaming: bool = False
    error: TurnError | None = None
    retry_target: str | None = None  # the node an error row's retry re-runs
    waiting: str = ""  # a reply not started yet says why ("queued · next"), not "writing…"

    def marked(self, starts_turn: bool, ends_turn: bool, is_last: bool, at_end: bool
               ) -> ChatRow:
        """A copy with new turn marks (positional: `_replace` is too slow for 2,000 rows)."""
        return ChatRow(self.kind, self.key, self.node, self.text, self.label, self.model,
                       self.version, self.pinned, self.interrupted, starts_turn, ends_turn,
                       self.expanded, is_last, at_end, self.revision, self.streaming,
                       self.error, self.retry_target, self.waiting)

    @property
    def layout_key(self) -> tuple[Any, ...]:
        """What the row's height depends on (besides the width)."""
        return (self.key, self.revision, self.starts_turn, self.ends_turn, self.expanded,
                self.is_last, self.interrupted, self.at_end)

    @property
    def node_id(self) -> str | None:
        return self.node.id if self.node is not None else None

    @property
    def has_versions(self) -> bool:
        return self.version[1] > 1

    @property
    def arguments_text(self) -> str:
        """Tool arguments as display text (pretty JSON when they are structured)."""
        value = self.node.input if self.node is not None else None
        if value is None or value == "":
            return ""
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return value
        return json.dumps(value, ensure_ascii=False, indent=2)

    @property
    def arguments_summary(self) -> str:
        """Tool arguments on one line: `path=src/app.py, limit=20`."""
        value = self.node.input if self.node is not None else None
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                return " ".join(value.split())
        if isinstance(value, dict):
            parts = []
            for k, v in value.items():
                shown = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
                parts.append(f"{k}={' '.join(str(shown).split())}")
            return ", ".join(parts)
        if value is None:
            return ""
        return json.dumps(value, ensure_ascii=False)

    @property
    def failed(self) -> bool:
        return bool(self.node is not None and self.node.metadata.get("is_error"))

    @property
    def denied(self) -> bool:  # a tool call the person said no to: it did not run
        return bool(self.node is not None and self.node.metadata.get("denied") is True)

    def accessible_text(self) -> str:
        who = {
            RowKind.USER: "You",
            RowKind.ASSISTANT: self.label or "Assistant",
            RowKind.STREAM: self.label or "Assistant",
            RowKind.TOOL: f"Tool {self.label}",
            RowKind.SYSTEM: "System prompt",
            RowKind.NOTE: self.label or "Note",
            RowKind.ERROR: "Error",
        }[self.kind]
        extras = [f"version {self.version[0]} of {self.version[1]}"] if self.has_versions else []
        marks = {"pinned": self.pinned, "interrupted": self.interrupted, "denied": self.denied}
        extras += [word for word, on in marks.items() if on]
        body = self.error.message if self.error is not None else self.text
        suffix = f" ({', '.join(extras)})" if extras else ""
        return f"{who}{suffix}: {body}"


def model_label(node: Node, name: Callable[[str], str] | None = None) -> str:
    """The model's display name for the reply header, as it was when the reply was written
    ("Ollama · llama3.2:3b"); for a reply saved without one, the short model name
    (`anthropic/claude-x` -> `claude-x`), or its one name by `name` when given."""
    shown = str(node.metadata.get("model_label") or "").strip()
    if shown:
        return shown
    raw = node.metadata.get("model") or node.name or ""
    raw = str(raw).strip()
    if raw and name is not None:
        return name(raw)
    return raw.rsplit("/", 1)[-1] if raw else "Assistant"


def rows_for(view: SessionView, expanded: frozenset[str] = frozenset(),
             name: Callable[[str], str] | None = None) -> list[ChatRow]:
    """The rows showing `view.path`, before any stream or error is added."""
    path = [n for n in view.path if not n.metadata.get("hidden")]
    tool_callers = {n.caller for n in path if n.role == "tool" and n.caller is not None}
    rows: list[ChatRow] = []
    sources = TurnSources()  # a reply's citations link to the passages its turn retrieved
    for node in path:
        sources.see(node)
        version = _version(view, node)
        pinned = node.id in view.pinned
        if node.role == "user":
            rows.append(ChatRow(RowKind.USER, node.id, node, node.text, version=version,
                                pinned=pinned, expanded=node.id in expanded))
        elif node.role == "assistant":
            text = with_sources(node.text, sources.of(node))
            label = model_label(node, name)
            thinking = reasoning_of(node)
            if thinking:
                # the reasoning the model streamed, apart from its answer: collapsed above it
                key = THINKING_KEY + node.id
                rows.append(ChatRow(RowKind.TOOL, key, node, thinking, label="Thinking",
                                    model=label, expanded=key in expanded))
            # a step that only called tools says nothing itself: its tool rows stand for it
            if (not text.strip() and node.id in tool_callers and not node.interrupted
                    and version[1] == 1 and not pinned):
                continue
            rows.append(ChatRow(RowKind.ASSISTANT, node.id, node, text, label=label, model=label,
                                version=version, pinned=pinned, interrupted=node.interrupted,
                                expanded=node.id in expanded))
        elif node.role == "tool":
            caller, tool = view.graph.find(node.caller), shown_tool_name(node.name)
            rows.append(ChatRow(RowKind.TOOL, node.id, node, node.text, label=tool,
                                model=model_label(caller, name) if caller is not None else "",
                                pinned=pinned, expanded=node.id in expanded))
        elif node.role == "system":
            text = node.input if isinstance(node.input, str) and node.input else node.text
            rows.append(ChatRow(RowKind.SYSTEM, node.id, node, text, label="System prompt",
                                pinned=pinned, expanded=node.id in expanded))
        else:
            rows.append(ChatRow(RowKind.NOTE, node.id, node, _note_text(node),
                                label=node.name.capitalize() or "Note", pinned=pinned))
    return rows


def _version(view: SessionView, node: Node) -> tuple[int, int]:
    if node.role not in ("user", "assistant", "runtime"):
        return (1, 1)
    graph = view.graph
    parent = node.parent
    if parent is not None and parent in graph and len(graph.children(parent)) == 1:
        return (1, 1)  # an only child has no versions (the common case, kept cheap)
    try:
        return view.version(node.id)
    except (GraphError, ValueError):
        return (1, 1)


def _note_text(node: Node) -> str:
    if node.is_attach:
        title = node.metadata.get("title") or node.text or "another branch"
        return f"Attached {title}"
    if node.is_merge:
        return "Merged branches" + (f": {node.text}" if node.text else "")
    return node.text


def with_turn_marks(rows: list[ChatRow]) -> list[ChatRow]:
    """Mark where each reply starts (header) and ends (action bar), and the last message."""
    out: list[ChatRow] = []
    last_message = next(
        (i for i in range(len(rows) - 1, -1, -1)
         if rows[i].kind in (RowKind.USER, RowKind.ASSISTANT)),
        -1,
    )
    in_turn = [r.kind in TURN_KINDS for r in rows]
    in_turn.append(False)  # past the end: the last row ends its turn
    end = len(rows) - 1
    for i, row in enumerate(rows):
        turn = in_turn[i]
        starts = turn and not (i > 0 and in_turn[i - 1])
        ends = not (turn and in_turn[i + 1])
        if row.kind == RowKind.ASSISTANT and (row.has_versions or row.interrupted or row.pinned):
            ends = True  # its version switch and actions must stay reachable
        is_last = i == last_message
        at_end = i == end
        if (starts == row.starts_turn and ends == row.ends_turn and is_last == row.is_last
                and at_end == row.at_end):
            out.append(row)
        else:
            out.append(row.marked(starts, ends, is_last, at_end))
    return out


@dataclass(slots=True)
class _Stream:
    parent_id: str | None
    label: str
    text: str = ""
    active: bool = True
    revision: int = 0
    waiting: str = ""


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

    # --- updates -------------------------------------------------------------------------

    def set_view(self, view: SessionView) -> None:
        same_session = self._view is not None and self._view.session.id == view.session.id
        if not same_session:
            self._stream = None
            self._error = None
            self._expanded.clear()
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
        self._base = rows_for(view, frozenset(self._expanded), self.model_name)
        self._publish()

    def begin_stream(self, parent_id: str | None, label: str) -> None:
        self._stream = _Stream(parent_id=parent_id, label=label)
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
        """Move to the composed rows with the smallest change Qt needs to hear about:
        a shared prefix stays, the rest is removed and inserted."""
        new = self._compose()
        old = self._rows
        prefix = 0
        limit = min(len(old), len(new))
        while prefix < limit and old[prefix].key == new[prefix].key:
            prefix += 1
        changed = [i for i in range(prefix) if old[i] != new[i]]
        if prefix < len(old):
            self.beginRemoveRows(QModelIndex(), prefix, len(old) - 1)
            self._rows = old[:prefix]
            self.endRemoveRows()
        for i in changed:
            self._rows[i] = new[i]
        if changed:
            self.dataChanged.emit(self.index(changed[0]), self.index(changed[-1]), CONTENT_ROLES)
        if prefix < len(new):
            self.beginInsertRows(QModelIndex(), prefix, len(new) - 1)
            self._rows = self._rows[:prefix] + new[prefix:]
            self.endInsertRows()


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
