"""The rows of a chat: one per visible message of a session's active path, each tool call
as a compact row after its assistant, and where each reply starts and ends. Pure data, made
off the list model so a long path's rows can be made for the part of it on show."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any, NamedTuple

from ...core.citations import TurnSources, with_sources
from ...core.model import GraphError, Node
from ...core.reply import reasoning_of
from ...core.tool_names import shown_tool_name
from ...services.turns.events import TurnError
from ...services.turns.sessions import SessionView


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


def turn_start(path: Sequence[Node], index: int) -> int:
    """Where the turn holding `path[index]` begins: its user message (0 when none is
    above). The rows of part of a path begin there, so a reply never shows cut from it."""
    index = max(0, min(index, len(path) - 1))
    while index > 0 and path[index].role != "user":
        index -= 1
    return index


def rows_for(view: SessionView, expanded: frozenset[str] = frozenset(),
             name: Callable[[str], str] | None = None, start: int = 0,
             stop: int | None = None) -> list[ChatRow]:
    """The rows showing `view.path[start:stop]` (all of it by default), before any stream
    or error is added. `start` and `stop` begin turns (`turn_start`)."""
    path = [n for n in view.path[start:stop] if not n.metadata.get("hidden")]
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
