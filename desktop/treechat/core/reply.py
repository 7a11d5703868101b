"""What a reply holds besides its answer: the reasoning ("Thinking") a model streamed beside
it, and the continuation node that finishes a reply that was cut short.

Every writer and reader of these goes through here (the chat service, the importers, the
Markdown export, the chat view), so reasoning is stored one way whatever made the node: a
string under `REASONING_KEY` in the node's metadata, never mixed into `output`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .model import Node

REASONING_KEY = "reasoning"
"""Node metadata key holding the reply's reasoning text (a string)."""

_LEGACY_REASONING_KEYS = ("thinking",)
"""Keys older importers wrote reasoning under; read, never written."""

CONTINUES_KEY = "continues"
"""Node metadata key of a continuation: the id of the cut-short reply it carries on."""

CONTINUABLE_FINISH_REASONS = frozenset({"length", "max_tokens"})


def reasoning_of(node: Node | Mapping[str, Any]) -> str:
    """The reasoning text stored with a reply (a node or its metadata); "" when it has none.
    A non-string value (a flag some exports set on a reasoning message) is not reasoning
    text and reads as none."""
    metadata = node.metadata if isinstance(node, Node) else node
    for key in (REASONING_KEY, *_LEGACY_REASONING_KEYS):
        value = metadata.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return ""


def with_reasoning(metadata: Mapping[str, Any], text: str) -> dict[str, Any]:
    """`metadata` with `text` stored as the reply's reasoning (unchanged when `text` is
    empty). Legacy keys are folded into the one key."""
    out = {k: v for k, v in metadata.items() if k not in _LEGACY_REASONING_KEYS}
    if text and text.strip():
        out[REASONING_KEY] = text
    elif not isinstance(out.get(REASONING_KEY), str):
        legacy = reasoning_of(metadata)
        if legacy:
            out[REASONING_KEY] = legacy
    return out


def continuation_of(node: Node) -> str | None:
    """The reply a continuation node carries on (None for any other node)."""
    value = node.metadata.get(CONTINUES_KEY)
    return value if isinstance(value, str) and value else None


def can_continue(node: Node) -> bool:
    """Whether a reply was cut short (stopped, interrupted, or out of reply tokens) with
    some text to carry on from."""
    if node.role != "assistant" or not node.text.strip():
        return False
    if node.interrupted:
        return True
    return node.metadata.get("finish_reason") in CONTINUABLE_FINISH_REASONS


def joined_runs(path: Sequence[Node]) -> tuple[tuple[Node, ...], ...]:
    """The path grouped so a reply and its continuations form one run (to show joined); every
    other node is a run of its own."""
    runs: list[list[Node]] = []
    for node in path:
        if runs and continuation_of(node) == runs[-1][-1].id:
            runs[-1].append(node)
        else:
            runs.append([node])
    return tuple(tuple(r) for r in runs)
