"""Records of conversations read from an export file, before they become Treechat nodes.

Parsers produce these; the store turns each `ImportedConversation` into one session.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..model import Role

EdgeKind = Literal["predecessor", "caller"]


class ImportFileError(ValueError):
    """The file cannot be imported at all (unknown format, damaged JSON, ...).

    The message is written for the person who chose the file.
    """


@dataclass(frozen=True, slots=True)
class Skipped:
    """Something in the file that was not imported, and why."""

    reason: str
    source_id: str
    conversation: str = ""


@dataclass(frozen=True, slots=True)
class ImportedMessage:
    """One future node. `parent_source_id` names another message of the same conversation;
    `edge` says whether it is the conversation edge or the call edge (assistant -> tool)."""

    source_id: str
    parent_source_id: str | None
    edge: EdgeKind
    role: Role
    name: str
    input: Any
    output: Any
    created_at: float
    metadata: dict[str, Any] = field(default_factory=dict)
    reads: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ImportedConversation:
    """A whole conversation: `nodes` are ordered parent before child, siblings oldest first,
    and `head_source_id` is the message the source app was showing."""

    source_id: str
    title: str
    created_at: float
    model: str
    nodes: tuple[ImportedMessage, ...]
    head_source_id: str | None
    source_format: str = ""
    updated_at: float = 0.0
    # Attachment bytes the file carries for its nodes: (sha256, media type, bytes).
    files: tuple[tuple[str, str, bytes], ...] = ()

    @property
    def branches(self) -> int:
        """How many distinct conversation tips the graph has (a linear chat has one)."""
        return count_tips(self.nodes)


@dataclass(frozen=True, slots=True)
class ParsedExport:
    """Everything read from one file."""

    source_format: str
    conversations: tuple[ImportedConversation, ...]
    skipped: tuple[Skipped, ...] = ()

    @property
    def message_count(self) -> int:
        return sum(len(c.nodes) for c in self.conversations)


def count_tips(nodes: tuple[ImportedMessage, ...] | list[ImportedMessage]) -> int:
    """Conversation messages with no conversation child: one per branch. Tool results
    (call edges) are part of their caller's turn, not branches of their own."""
    conversational = [n for n in nodes if n.edge == "predecessor"]
    ids = {n.source_id for n in conversational}
    has_child = {n.parent_source_id for n in conversational if n.parent_source_id in ids}
    return sum(1 for n in conversational if n.source_id not in has_child)
