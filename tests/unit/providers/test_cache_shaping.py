"""Shaping for the prompt cache: Anthropic keeps at most four marks (the stable head and the
tail), every other provider gets none, and tools go out in a stable order."""

from __future__ import annotations

import json
from typing import Any

from treechat.providers.cache_shaping import MAX_BREAKPOINTS, shape_messages, shape_tools

MARK = {"type": "ephemeral"}


def block(text: str, mark: bool = True) -> list[dict[str, Any]]:
    item: dict[str, Any] = {"type": "text", "text": text}
    if mark:
        item["cache_control"] = MARK
    return [item]


def marked_conversation(n: int) -> list[dict[str, Any]]:
    out = [{"role": "system", "content": block("system")}]
    for i in range(n):
        out.append({"role": "user" if i % 2 == 0 else "assistant", "content": block(f"m{i}")})
    return out


def marks(messages: list[dict[str, Any]]) -> list[int]:
    return [i for i, m in enumerate(messages) if "cache_control" in json.dumps(m)]


def test_anthropic_keeps_at_most_four_marks_the_stable_head_and_the_tail() -> None:
    source = marked_conversation(7)
    shaped = shape_messages("anthropic/claude-sonnet-4-5", source)
    assert len(marks(shaped)) == MAX_BREAKPOINTS
    assert marks(shaped) == [0, 1, 2, 7]
    assert marks(source) == list(range(8))  # the caller's messages are not modified


def test_anthropic_with_few_marks_is_sent_as_given() -> None:
    source = marked_conversation(2)
    assert shape_messages("anthropic/claude-sonnet-4-5", source) == source


def test_other_providers_get_no_marks_and_no_blocks_made_for_them() -> None:
    source = marked_conversation(3)
    source.append(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "a"},
                {"type": "image_url", "image_url": {"url": "data:,"}, "cache_control": MARK},
            ],
        }
    )
    shaped = shape_messages("openai/gpt-4o", source)
    assert "cache_control" not in json.dumps(shaped)
    assert shaped[0] == {"role": "system", "content": "system"}
    assert shaped[1] == {"role": "user", "content": "m0"}
    assert shaped[-1]["content"] == [
        {"type": "text", "text": "a"},
        {"type": "image_url", "image_url": {"url": "data:,"}},
    ]


def test_tools_go_out_in_a_stable_order() -> None:
    def tool(name: str) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": name, "parameters": {}},
            "cache_control": MARK,
        }

    one = shape_tools("openai/gpt-4o", [tool("write"), tool("read"), tool("grep")])
    two = shape_tools("openai/gpt-4o", [tool("grep"), tool("write"), tool("read")])
    assert one == two
    assert [t["function"]["name"] for t in one] == ["grep", "read", "write"]
    assert "cache_control" not in json.dumps(one)
    kept = shape_tools("anthropic/claude-sonnet-4-5", [tool("b"), tool("a")])
    assert [t["function"]["name"] for t in kept] == ["a", "b"] and all(
        "cache_control" in t for t in kept
    )
