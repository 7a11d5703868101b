"""What a running turn reports as it goes; a view redraws from these and nothing else. The
last event of a turn (`TurnFinished` or `TurnFailed`) carries the turn's `TurnChanges`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...core.model import Node
from .changes import TurnChanges


@dataclass(frozen=True, slots=True)
class TurnError:
    """A failed turn in words a person understands, with what to do about it.

    kind: overflow | auth | rate_limit | offline | server | bad_request | cancelled | busy |
    internal. `retry_after` is in seconds when the provider said how long to wait."""

    kind: str
    message: str
    retry: bool = False
    retry_after: float | None = None
    action: str = ""  # "retry" | "settings" | "wait" | ""


@dataclass(frozen=True, slots=True)
class TurnStarted:
    session_id: str
    parent_id: str | None  # the node the reply hangs under
    user_node: Node | None  # the message just committed (None for a retry)
    model: str


@dataclass(frozen=True, slots=True)
class TextDelta:
    session_id: str
    text: str  # the new piece, to append


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of the reasoning ("Thinking") a model streams before or beside its answer;
    kept apart from the answer (`core.reply.reasoning_of` on the finished node)."""

    session_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    session_id: str
    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class NodeAdded:
    """A node was written during the turn (an assistant step with tool calls, a tool result)."""

    session_id: str
    node: Node


@dataclass(frozen=True, slots=True)
class OccupancyChanged:
    """The context record moved (after each request, after a compaction)."""

    session_id: str
    occupancy: Any  # core.occupancy.Occupancy


@dataclass(frozen=True, slots=True)
class TurnFinished:
    session_id: str
    node: Node  # the final assistant node; `.interrupted` when stopped
    occupancy: Any
    changes: TurnChanges | None = None  # what the whole turn wrote


@dataclass(frozen=True, slots=True)
class TurnFailed:
    session_id: str
    error: TurnError
    partial: Node | None  # text that streamed before the failure, kept as an interrupted node
    changes: TurnChanges | None = None  # what the turn wrote before it failed (None: nothing)


TurnEvent = (
    TurnStarted
    | TextDelta
    | ReasoningDelta
    | ToolCallStarted
    | NodeAdded
    | OccupancyChanged
    | TurnFinished
    | TurnFailed
)
EventSink = Callable[[TurnEvent], None]
