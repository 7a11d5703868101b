"""Shaping a request for the provider's prompt cache: Anthropic's `cache_control` marks kept
(at most four, the earliest and the last) and stripped for everyone else, tools in a stable
order with the last one marked."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from . import llm

MAX_BREAKPOINTS = 4
"""Anthropic rejects a request with more `cache_control` blocks than this."""


def _marks_in(message: Mapping[str, Any]) -> int:
    content = message.get("content")
    count = 1 if "cache_control" in message else 0
    if isinstance(content, list):
        count += sum(1 for b in content if isinstance(b, dict) and "cache_control" in b)
    return count


def _strip_message(message: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in message.items() if k != "cache_control"}
    content = out.get("content")
    if isinstance(content, list):
        blocks = [
            {k: v for k, v in b.items() if k != "cache_control"} if isinstance(b, dict) else b
            for b in content
        ]
        # Blocks existed only to carry the mark: send plain text, as the provider expects
        # (CTX-005: do not reshape non-Anthropic requests into content blocks).
        if (
            len(blocks) == 1
            and isinstance(blocks[0], dict)
            and blocks[0].get("type") == "text"
            and set(blocks[0]) <= {"type", "text"}
        ):
            out["content"] = blocks[0].get("text", "")
        else:
            out["content"] = blocks
    return out


def _limit_marks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """At most `MAX_BREAKPOINTS` marks: the earliest ones (stable prefix) and the last one
    (rolling), dropping the ones in between."""
    positions: list[tuple[int, int | None]] = []
    for i, message in enumerate(messages):
        if "cache_control" in message:
            positions.append((i, None))
        content = message.get("content")
        if isinstance(content, list):
            positions.extend(
                (i, j)
                for j, b in enumerate(content)
                if isinstance(b, dict) and "cache_control" in b
            )
    if len(positions) <= MAX_BREAKPOINTS:
        return messages
    keep = set(positions[: MAX_BREAKPOINTS - 1]) | {positions[-1]}
    for i, j in positions:
        if (i, j) in keep:
            continue
        if j is None:
            del messages[i]["cache_control"]
        else:
            del messages[i]["content"][j]["cache_control"]
    return messages


def shape_messages(model: str, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages as they go on the wire: Anthropic models keep up to four `cache_control`
    breakpoints; every other provider gets none, and no content blocks made only for them."""
    if llm.is_anthropic(model):
        return _limit_marks([copy.deepcopy(dict(m)) for m in messages])
    return [
        _strip_message(m) if _marks_in(m) or isinstance(m.get("content"), list) else dict(m)
        for m in messages
    ]


def _tool_name(tool: Mapping[str, Any]) -> str:
    function = tool.get("function")
    if isinstance(function, Mapping):
        return str(function.get("name", ""))
    return str(tool.get("name", ""))


def shape_tools(model: str, tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tools in a stable order (by name), so the same set always makes the same prefix;
    marks only for Anthropic."""
    ordered = sorted((copy.deepcopy(dict(t)) for t in tools), key=_tool_name)
    if not llm.is_anthropic(model):
        for tool in ordered:
            tool.pop("cache_control", None)
    return ordered
