"""Claude.ai export parsing: linear chats, branches from parent_message_uuid, tool blocks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from treechat.core.imports import claude

NIL = "00000000-0000-4000-8000-000000000000"


def msg(uuid: str, sender: str, text: str, at: str, parent: str | None = None,
        **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "uuid": uuid, "text": text, "sender": sender, "created_at": at, "updated_at": at,
        "content": [{"type": "text", "text": text}], "attachments": [], "files": [],
    }
    if parent is not None:
        out["parent_message_uuid"] = parent
    out.update(extra)
    return out


def test_linear_conversation_without_parent_links() -> None:
    data = [{
        "uuid": "conv-1", "name": "Soup", "created_at": "2024-03-01T10:00:00.000000Z",
        "updated_at": "2024-03-01T10:05:00Z",
        "chat_messages": [
            msg("m1", "human", "Best soup?", "2024-03-01T10:00:01Z"),
            msg("m2", "assistant", "Pho.", "2024-03-01T10:00:02Z"),
            msg("m3", "human", "Why?", "2024-03-01T10:00:03Z"),
            msg("m4", "assistant", "Broth.", "2024-03-01T10:00:04Z"),
        ],
    }]
    parsed = claude.parse(data)
    assert parsed.skipped == ()
    (conv,) = parsed.conversations
    assert [(n.source_id, n.parent_source_id, n.role, n.output) for n in conv.nodes] == [
        ("m1", None, "user", "Best soup?"),
        ("m2", "m1", "assistant", "Pho."),
        ("m3", "m2", "user", "Why?"),
        ("m4", "m3", "assistant", "Broth."),
    ]
    assert conv.title == "Soup" and conv.head_source_id == "m4"
    assert conv.created_at == 1709287200.0 and conv.nodes[0].created_at == 1709287201.0
    assert conv.branches == 1


def test_parent_links_build_branches_and_head_is_the_newest_leaf() -> None:
    data = [{
        "uuid": "conv-2", "name": "Edits", "created_at": "2024-03-01T10:00:00Z",
        "chat_messages": [
            msg("h1", "human", "Write a haiku", "2024-03-01T10:00:01Z", NIL),
            msg("a1", "assistant", "Old pond...", "2024-03-01T10:00:02Z", "h1"),
            msg("a1b", "assistant", "Old pond...", "2024-03-01T10:00:09Z", "h1"),
            msg("h2", "human", "Another", "2024-03-01T10:00:03Z", "a1"),
            msg("a2", "assistant", "Autumn moon", "2024-03-01T10:00:04Z", "h2"),
        ],
    }]
    (conv,) = claude.parse(data).conversations
    parents = {n.source_id: n.parent_source_id for n in conv.nodes}
    assert parents == {"h1": None, "a1": "h1", "a1b": "h1", "h2": "a1", "a2": "h2"}
    assert conv.branches == 2
    assert conv.head_source_id == "a1b"  # retried last, and nothing names another leaf

    data[0]["current_leaf_message_uuid"] = "a2"
    assert claude.parse(data).conversations[0].head_source_id == "a2"


def test_tool_use_blocks_become_paired_tool_nodes_and_thinking_is_kept() -> None:
    assistant = msg("a1", "assistant", "", "2024-03-01T10:00:02Z")
    assistant["content"] = [
        {"type": "thinking", "thinking": "I should search."},
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "web_search", "input": {"q": "pho"}},
        {"type": "tool_result", "tool_use_id": "toolu_1", "name": "web_search",
         "content": [{"type": "text", "text": "Pho is Vietnamese."}], "is_error": False},
        {"type": "text", "text": "Pho is Vietnamese."},
    ]
    data = {"uuid": "conv-3", "name": "Tools", "chat_messages": [
        msg("h1", "human", "What is pho?", "2024-03-01T10:00:01Z"), assistant,
        msg("h2", "human", "Thanks", "2024-03-01T10:00:03Z")]}
    (conv,) = claude.parse(data).conversations
    by_id = {n.source_id: n for n in conv.nodes}
    call = by_id["a1#part1"]
    assert call.output == "Let me look." and call.metadata["reasoning"] == "I should search."
    assert call.metadata["tool_calls"] == [
        {"id": "toolu_1", "name": "web_search", "arguments": {"q": "pho"}}]
    result = by_id["a1#result1"]
    assert (result.role, result.edge, result.parent_source_id) == ("tool", "caller", "a1#part1")
    assert result.metadata["tool_call_id"] == "toolu_1"
    assert result.input == {"q": "pho"} and result.output == "Pho is Vietnamese."
    assert by_id["a1"].parent_source_id == "a1#part1"
    assert by_id["h2"].parent_source_id == "a1"
    assert conv.branches == 1


def test_attachments_are_named_placeholders_and_empty_messages_drop_quietly() -> None:
    with_file = msg("h1", "human", "", "2024-03-01T10:00:01Z",
                    attachments=[{"file_name": "notes.txt", "extracted_content": "milk"}])
    empty = msg("a1", "assistant", "", "2024-03-01T10:00:02Z")
    reply = msg("h2", "human", "hello?", "2024-03-01T10:00:03Z")
    parsed = claude.parse([{"uuid": "c", "name": "n", "chat_messages": [with_file, empty, reply]}])
    (conv,) = parsed.conversations
    assert [n.source_id for n in conv.nodes] == ["h1", "h2"]
    placeholder = conv.nodes[0].metadata["attachments"][0]
    assert placeholder["placeholder"] is True and placeholder["name"] == "notes.txt"
    assert placeholder["text"] == "milk"  # the text Claude extracted is kept whole
    assert conv.nodes[0].output == ""  # the file is its card, not a line of text
    assert conv.nodes[1].parent_source_id == "h1"
    assert parsed.skipped == ()


def test_unknown_sender_cycle_and_missing_parent_are_reported() -> None:
    data = [{"uuid": "c", "name": "bad", "chat_messages": [
        msg("h1", "human", "ok", "2024-03-01T10:00:01Z", NIL),
        msg("x1", "robot", "beep", "2024-03-01T10:00:02Z", "h1"),
        msg("a1", "assistant", "reply", "2024-03-01T10:00:03Z", "x1"),
        msg("l1", "human", "loop", "2024-03-01T10:00:04Z", "l2"),
        msg("l2", "assistant", "loop", "2024-03-01T10:00:05Z", "l1"),
        msg("o1", "human", "orphan", "2024-03-01T10:00:06Z", "missing"),
    ]}, {"uuid": "c2", "name": "no messages"}]
    parsed = claude.parse(data)
    (conv,) = parsed.conversations
    assert {n.source_id: n.parent_source_id for n in conv.nodes} == {"h1": None, "a1": "h1"}
    reasons = {s.source_id: s.reason for s in parsed.skipped}
    assert reasons["x1"] == "unknown sender 'robot'"
    assert reasons["l1"].startswith("parent links form a cycle")
    assert reasons["o1"] == "its parent message missing is not in the file"
    assert reasons["c2"] == "conversation has no 'chat_messages' list"


def test_nil_parent_variants_are_roots() -> None:
    data = {"uuid": "c", "name": "n", "chat_messages": [
        msg("h1", "human", "one", "2024-03-01T10:00:01Z", "00000000-0000-0000-0000-000000000000"),
        msg("h2", "human", "two", "2024-03-01T10:00:02Z", NIL),
    ]}
    (conv,) = claude.parse(data).conversations
    assert all(n.parent_source_id is None for n in conv.nodes)


# --- the fixture written from the export's documented shape (see tests/data/imports) ------

FIXTURE = Path(__file__).resolve().parents[3] / "data" / "imports" / "claude-tools-thinking.json"


def fixture() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(FIXTURE.read_text(encoding="utf-8"))
    return data


def path_to_head(conv: Any) -> list[Any]:
    by_id = {n.source_id: n for n in conv.nodes}
    node = by_id[conv.head_source_id]
    out = [node]
    while node.parent_source_id is not None:
        node = by_id[node.parent_source_id]
        out.append(node)
    return out[::-1]


def test_out_of_order_messages_are_put_in_time_order_human_before_its_reply() -> None:
    parsed = claude.parse(fixture())
    assert parsed.skipped == ()
    conv = parsed.conversations[0]
    # the file lists the follow-up first, and the first reply shares the question's time
    assert [(n.role, n.output) for n in path_to_head(conv)] == [
        ("user", "What is the weather in Hanoi? My notes are attached."),
        ("assistant", "Let me look that up."),
        ("assistant", "It is 32C and humid in Hanoi."),
        ("user", "And tomorrow?"),
        ("assistant", "Tomorrow looks rainy."),
    ]
    assert conv.head_source_id == "m4-assistant" and conv.branches == 1


def test_tool_blocks_with_null_ids_pair_in_order_and_thinking_is_the_reasoning() -> None:
    conv = claude.parse(fixture()).conversations[0]
    by_id = {n.source_id: n for n in conv.nodes}
    call = by_id["m2-assistant#part1"]
    assert call.metadata["reasoning"] == "The user wants current weather. I should search."
    (spec,) = call.metadata["tool_calls"]
    assert (spec["name"], spec["arguments"]) == ("web_search", {"query": "Hanoi weather"})
    result = by_id["m2-assistant#result1"]
    assert (result.role, result.edge, result.parent_source_id) == (
        "tool", "caller", "m2-assistant#part1")
    assert result.metadata["tool_call_id"] == spec["id"] and result.output == "32C and humid"
    assert result.input == {"query": "Hanoi weather"}
    files = by_id["m1-user"].metadata["attachments"]
    assert [(f["kind"], f["name"], f["placeholder"]) for f in files] == [
        ("file", "trip-notes.txt", True), ("image", "map.png", True)]
    assert files[0]["text"] == "Arrive Tuesday, 3 days." and files[1]["ref"] == "f-map-1"


def test_messages_made_only_of_tool_blocks_become_a_call_and_its_tool_node() -> None:
    conv = claude.parse(fixture()).conversations[1]
    by_id = {n.source_id: n for n in conv.nodes}
    # the human message that only carries the result is not a chat message of its own
    assert "b3" not in by_id
    assert by_id["b2"].metadata["tool_calls"][0]["id"] == "toolu_add"
    answer = by_id["b3#answer1"]
    assert (answer.role, answer.edge, answer.parent_source_id, answer.output) == (
        "tool", "caller", "b2", "5")
    assert answer.metadata["tool_call_id"] == "toolu_add" and answer.input == {"a": 2, "b": 3}
    assert answer.name == "add"
    # both replies continue the turn from the call; the retry is HEAD, with its reasoning
    assert by_id["b4"].parent_source_id == "b2" and by_id["b5-retry"].parent_source_id == "b2"
    assert conv.head_source_id == "b5-retry" and conv.branches == 2
    assert by_id["b5-retry"].metadata["reasoning"] == "Just report the tool's answer."


PAGE = '<!DOCTYPE html>\n<html>\n  <body>\n    <h1>Hello</h1>\n  </body>\n</html>'


def test_ant_thinking_is_the_reasoning_and_an_artifact_is_a_titled_card() -> None:
    reply = (
        "<antThinking>A small page fits; I will write it as an artifact.</antThinking>\n"
        "Here is the page:\n\n"
        '<antArtifact identifier="hello-page" type="text/html" title="Hello page">\n'
        f"{PAGE}\n</antArtifact>\n\nOpen it in a browser."
    )
    data = [{"uuid": "c1", "name": "Page", "created_at": "2024-03-01T10:00:00Z",
             "chat_messages": [msg("m1", "human", "Write a page", "2024-03-01T10:00:01Z"),
                               msg("m2", "assistant", reply, "2024-03-01T10:00:02Z",
                                   parent="m1")]}]
    (conv,) = claude.parse(data).conversations
    answer = {n.source_id: n for n in conv.nodes}["m2"]
    assert "antThinking" not in answer.output and "antArtifact" not in answer.output
    assert answer.metadata["reasoning"] == (
        "A small page fits; I will write it as an artifact.")
    assert answer.output.startswith("Here is the page:\n\n**Hello page** · HTML page\n\n")
    assert f"```html\n{PAGE}\n```" in answer.output  # its line breaks kept, fenced
    assert answer.output.endswith("Open it in a browser.")
    (artifact,) = answer.metadata["artifacts"]
    assert (artifact["title"], artifact["type"], artifact["language"]) == (
        "Hello page", "text/html", "html")
    assert artifact["content"].strip() == PAGE
