"""Frozen records of the conversation graph: nodes (the DAG), sessions (HEAD) and annotations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["user", "assistant", "tool", "system", "runtime"]
ROLES: tuple[Role, ...] = ("user", "assistant", "tool", "system", "runtime")

AnnotationKind = Literal["pin", "unpin", "hidden", "unhidden", "merged"]


class GraphError(ValueError):
    """An operation that would break the graph's rules (bad edge, unknown node, ...)."""


@dataclass(frozen=True, slots=True)
class Node:
    """One immutable vertex of the conversation DAG (the spec's `Call`).

    `output` holds the permanent original text: user content, assistant content or tool
    result. `input` holds tool arguments or system text. Exactly one of `predecessor`
    (conversation edge) and `caller` (call edge: assistant -> tool) may be set.
    """

    id: str
    seq: int
    created_at: float
    session_id: str
    role: Role
    name: str = ""
    input: Any = None
    output: Any = None
    predecessor: str | None = None
    caller: str | None = None
    reads: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise GraphError(f"unknown role {self.role!r}")
        if self.predecessor is not None and self.caller is not None:
            raise GraphError(f"node {self.id}: predecessor and caller are mutually exclusive")
        if self.id in (self.predecessor, self.caller):
            raise GraphError(f"node {self.id} cannot point at itself")

    @property
    def parent(self) -> str | None:
        """The one edge this node hangs from, whichever kind it is."""
        return self.predecessor if self.predecessor is not None else self.caller

    @property
    def text(self) -> str:
        """The node's content as display text."""
        out = self.output
        if out is None:
            return ""
        if isinstance(out, str):
            return out
        if isinstance(out, dict) and isinstance(out.get("text"), str):
            return str(out["text"])
        import json

        return json.dumps(out, ensure_ascii=False, sort_keys=True)

    @property
    def interrupted(self) -> bool:
        return bool(self.metadata.get("interrupted"))

    @property
    def is_attach(self) -> bool:
        return self.role == "runtime" and self.name == "attach"

    @property
    def is_merge(self) -> bool:
        return self.role == "runtime" and self.name == "merge"


@dataclass(frozen=True, slots=True)
class Session:
    """A named view of the graph; `head` is the one mutable pointer (None when empty)."""

    id: str
    title: str
    head: str | None
    model: str
    created_at: float
    forked_from: str | None = None
    hidden: bool = False
    updated_at: float = 0.0


@dataclass(frozen=True, slots=True)
class Annotation:
    """A user mark on a node: pin/unpin, hidden/unhidden branch, merged peer head."""

    node_id: str
    kind: AnnotationKind
    created_at: float
    session_id: str = ""
    value: str = ""
