"""LibreChat export parsing: the real nested export, its flat form, and content parts."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from treechat.core.imports import librechat

DATA = Path(__file__).resolve().parents[3] / "data" / "imports"


@pytest.fixture(scope="module")
def export() -> dict[str, Any]:
    data = json.loads((DATA / "librechat-tree.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def walk(messages: list[dict[str, Any]], parent: str | None = None) -> list[tuple[dict[str, Any],
                                                                              str | None]]:
    out = []
    for m in messages:
        out.append((m, parent))
        out.extend(walk(m.get("children") or [], m["messageId"]))
    return out


def test_every_message_and_branch_of_the_real_export(export: dict[str, Any]) -> None:
    parsed = librechat.parse(export)
    assert parsed.skipped == ()
    (conv,) = parsed.conversations
    flat = walk(export["messages"])
    assert len(flat) == 9
    assert len(conv.nodes) == len(flat)
    expected_parent = {m["messageId"]: p for m, p in flat}
    assert {n.source_id: n.parent_source_id for n in conv.nodes} == expected_parent
    # Branches: messages with no children in the file.
    leaves = [m["messageId"] for m, _ in flat if not m.get("children")]
    assert conv.branches == len(leaves) == 3
    assert conv.title == export["title"]
    assert conv.source_id == export["conversationId"]


def regeneration(conv: Any) -> list[Any]:
    """The assistant siblings under one user message (a regeneration)."""
    by_parent: dict[str | None, list[Any]] = {}
    for node in conv.nodes:
        by_parent.setdefault(node.parent_source_id, []).append(node)
    groups = [g for g in by_parent.values()
              if len(g) == 2 and all(n.role == "assistant" for n in g)]
    assert len(groups) == 1
    return groups[0]


def test_regenerated_siblings_stay_two_nodes(export: dict[str, Any]) -> None:
    (conv,) = librechat.parse(export).conversations
    first, second = regeneration(conv)
    raw = {m["messageId"]: m for m, _ in walk(export["messages"])}
    assert first.source_id != second.source_id
    assert first.output == raw[first.source_id]["text"]
    assert second.output == raw[second.source_id]["text"]
    # The second one is where the conversation went on.
    assert any(n.parent_source_id == second.source_id for n in conv.nodes)
    assert not any(n.parent_source_id == first.source_id for n in conv.nodes)


def test_identical_text_siblings_stay_two_nodes(export: dict[str, Any]) -> None:
    same = copy.deepcopy(export)
    twins = same["messages"][0]["children"][0]["children"][0]["children"]
    twins[1]["text"] = twins[0]["text"]
    (conv,) = librechat.parse(same).conversations
    first, second = regeneration(conv)
    assert first.output == second.output
    assert {first.source_id, second.source_id} == {t["messageId"] for t in twins}
    assert len(conv.nodes) == 9


def test_token_counts_model_and_roles_are_kept(export: dict[str, Any]) -> None:
    (conv,) = librechat.parse(export).conversations
    raw = {m["messageId"]: m for m, _ in walk(export["messages"])}
    for node in conv.nodes:
        source = raw[node.source_id]
        assert node.role == ("user" if source["isCreatedByUser"] else "assistant")
        assert node.metadata.get("token_count") == source.get("tokenCount")
        assert node.metadata.get("prompt_tokens") == source.get("promptTokens")
        if node.role == "assistant":
            assert node.name == source["model"] == "gpt-4-turbo"
        assert node.output == source["text"]
    assert conv.model == "gpt-4-turbo"


def test_head_is_the_newest_branch_without_a_pointer(export: dict[str, Any]) -> None:
    (conv,) = librechat.parse(export).conversations
    # No currentId in LibreChat exports: the last branch in the file is the latest one.
    assert conv.head_source_id == "1f062c99-ff0a-4cf4-a1cf-7150261a24e2"


def test_flat_export_linked_only_by_parent_message_id(export: dict[str, Any]) -> None:
    nested = librechat.parse(export).conversations[0]
    flat = copy.deepcopy(export)
    messages = []
    for nested_message, _ in walk(flat["messages"]):
        plain = dict(nested_message)
        plain.pop("children", None)
        messages.append(plain)
    flat["messages"] = messages[::-1]  # children before parents: order must not matter
    flat["recursive"] = False
    conv = librechat.parse(flat).conversations[0]
    assert {n.source_id: n.parent_source_id for n in conv.nodes} == {
        n.source_id: n.parent_source_id for n in nested.nodes}
    seen: set[str] = set()
    for node in conv.nodes:  # still parent before child
        assert node.parent_source_id is None or node.parent_source_id in seen
        seen.add(node.source_id)


def test_agent_content_parts_become_paired_tool_nodes() -> None:
    data = {
        "conversationId": "c1",
        "title": "agents",
        "messages": [
            {"messageId": "u1", "parentMessageId": "00000000-0000-0000-0000-000000000000",
             "isCreatedByUser": True, "text": "weather?", "createdAt": "2024-05-01T10:00:00Z"},
            {"messageId": "a1", "parentMessageId": "u1", "isCreatedByUser": False,
             "model": "gpt-4o", "createdAt": "2024-05-01T10:00:05Z", "text": "",
             "content": [
                 {"type": "think", "think": "Need the tool."},
                 {"type": "text", "text": "Checking."},
                 {"type": "tool_call", "tool_call": {"id": "call_1", "name": "weather",
                                                     "args": "{\"city\":\"Oslo\"}",
                                                     "output": "5C"}},
                 {"type": "text", "text": "It is 5C."},
             ]},
            {"messageId": "u2", "parentMessageId": "a1", "isCreatedByUser": True,
             "text": "thanks", "unfinished": False},
        ],
    }
    (conv,) = librechat.parse(data).conversations
    by_id = {n.source_id: n for n in conv.nodes}
    call = by_id["a1#part1"]
    assert call.output == "Checking." and call.metadata["reasoning"] == "Need the tool."
    assert call.metadata["tool_calls"] == [
        {"id": "call_1", "name": "weather", "arguments": "{\"city\":\"Oslo\"}"}]
    result = by_id["a1#result1"]
    assert (result.role, result.edge, result.parent_source_id) == ("tool", "caller", "a1#part1")
    assert result.metadata["tool_call_id"] == "call_1" and result.output == "5C"
    assert by_id["a1"].output == "It is 5C." and by_id["a1"].parent_source_id == "a1#part1"
    assert by_id["u2"].parent_source_id == "a1"
    assert by_id["a1"].created_at == 1714557605.0


def test_missing_parent_is_reported_and_empty_message_dropped_quietly() -> None:
    data = {
        "conversationId": "c2",
        "messages": [
            {"messageId": "u1", "isCreatedByUser": True, "text": "hello"},
            {"messageId": "a1", "parentMessageId": "u1", "isCreatedByUser": False, "text": ""},
            {"messageId": "u2", "parentMessageId": "nowhere", "isCreatedByUser": True,
             "text": "lost"},
        ],
    }
    parsed = librechat.parse(data)
    assert {s.source_id: s.reason for s in parsed.skipped} == {
        "u2": "its parent message nowhere is not in the file",
    }
    assert [n.source_id for n in parsed.conversations[0].nodes] == ["u1"]
    assert parsed.conversations[0].title == "hello"


def test_deep_nesting_does_not_hit_the_recursion_limit() -> None:
    root: dict[str, Any] = {"messageId": "m0", "isCreatedByUser": True, "text": "0"}
    node = root
    for i in range(1, 3000):
        child = {"messageId": f"m{i}", "isCreatedByUser": i % 2 == 0, "text": str(i)}
        node["children"] = [child]
        node = child
    (conv,) = librechat.parse({"conversationId": "deep", "messages": [root]}).conversations
    assert len(conv.nodes) == 3000
    assert conv.head_source_id == "m2999"
