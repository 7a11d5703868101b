"""Open WebUI export parsing: the history tree, currentId, tool calls and older shapes."""

from __future__ import annotations

from typing import Any

from treechat.core.imports import openwebui


def m(mid: str, parent: str | None, role: str, content: str, ts: int,
      children: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": mid, "parentId": parent, "childrenIds": children or [], "role": role,
            "content": content, "timestamp": ts, **extra}


def chat(messages: dict[str, dict[str, Any]], current: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chat-1", "title": "Branchy", "created_at": 1700000000, "updated_at": 1700000100,
        "chat": {"title": "Branchy", "models": ["llama3.1:latest"],
                 "history": {"currentId": current, "messages": messages}},
        **extra,
    }


def test_history_tree_every_branch_and_current_id() -> None:
    messages = {
        "u1": m("u1", None, "user", "Name a colour", 1700000001, ["a1", "a2"]),
        "a1": m("a1", "u1", "assistant", "Red", 1700000002, ["u2"], model="llama3.1:latest"),
        "a2": m("a2", "u1", "assistant", "Blue", 1700000005, [], model="qwen2.5"),
        "u2": m("u2", "a1", "user", "Another", 1700000003, ["a3"]),
        "a3": m("a3", "u2", "assistant", "Green", 1700000004, [], model="llama3.1:latest"),
    }
    parsed = openwebui.parse([chat(messages, current="a3")])
    assert parsed.skipped == ()
    (conv,) = parsed.conversations
    assert {n.source_id: n.parent_source_id for n in conv.nodes} == {
        "u1": None, "a1": "u1", "a2": "u1", "u2": "a1", "a3": "u2"}
    # HEAD is the pointer, not the newest reply (a2 is newer) nor the first child.
    assert conv.head_source_id == "a3"
    assert conv.branches == 2
    assert conv.title == "Branchy" and conv.model == "llama3.1:latest"
    by_id = {n.source_id: n for n in conv.nodes}
    assert by_id["a2"].name == "qwen2.5" and by_id["a2"].metadata["model"] == "qwen2.5"
    assert by_id["u1"].created_at == 1700000001.0
    assert conv.created_at == 1700000000.0 and conv.updated_at == 1700000100.0


def test_single_chat_object_and_missing_parent_id_found_through_children() -> None:
    messages = {
        "u1": m("u1", None, "user", "hi", 1700000001, ["a1"]),
        "a1": {"id": "a1", "childrenIds": [], "role": "assistant", "content": "hello",
               "timestamp": 1700000002, "done": False},
    }
    (conv,) = openwebui.parse(chat(messages, current="a1")).conversations
    by_id = {n.source_id: n for n in conv.nodes}
    assert by_id["a1"].parent_source_id == "u1"
    assert by_id["a1"].metadata["interrupted"] is True


def test_structured_output_tool_call_and_reasoning() -> None:
    assistant = m("a1", "u1", "assistant",
                  '<details type="tool_calls"><summary>Tool Executed</summary></details>'
                  "The weather in Paris is 18C with rain.", 1700001020, model="gpt-4o",
                  output=[
                      {"type": "reasoning", "content": [
                          {"type": "output_text", "text": "Need weather."}]},
                      {"type": "function_call", "id": "call_1", "call_id": "call_1",
                       "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
                      {"type": "function_call_output", "call_id": "call_1",
                       "output": [{"type": "input_text", "text": "Paris: 18C, rain"}]},
                      {"type": "message", "role": "assistant", "content": [{
                          "type": "output_text", "text": "The weather in Paris is 18C with rain."
                      }]},
                  ])
    messages = {"u1": m("u1", None, "user", "Weather in Paris?", 1700001000, ["a1"]),
                "a1": assistant}
    (conv,) = openwebui.parse(chat(messages, current="a1")).conversations
    by_id = {n.source_id: n for n in conv.nodes}
    call = by_id["a1#part1"]
    assert call.metadata["reasoning"] == "Need weather."
    assert call.metadata["tool_calls"][0]["name"] == "get_weather"
    tool = by_id["a1#result1"]
    assert (tool.edge, tool.parent_source_id, tool.output) == ("caller", "a1#part1",
                                                               "Paris: 18C, rain")
    assert tool.metadata["tool_call_id"] == "call_1"
    assert by_id["a1"].output == "The weather in Paris is 18C with rain."
    assert conv.head_source_id == "a1"


def test_details_blocks_in_plain_content() -> None:
    content = (
        '<details type="reasoning" done="true" duration="3"><summary>Thought for 3 seconds'
        "</summary>&gt; Let me think.\n&gt; Yes.</details>"
        '<details type="tool_calls" done="true" id="call_9" name="calc" '
        'arguments="{&quot;x&quot;: 2}" result="&quot;4&quot;"><summary>Tool Executed</summary>'
        "</details>The answer is 4."
    )
    messages = {"u1": m("u1", None, "user", "2+2?", 1, ["a1"]),
                "a1": m("a1", "u1", "assistant", content, 2)}
    (conv,) = openwebui.parse(chat(messages, current="a1")).conversations
    by_id = {n.source_id: n for n in conv.nodes}
    assert by_id["a1#part1"].metadata["reasoning"] == "Let me think.\nYes."
    assert by_id["a1#part1"].metadata["tool_calls"] == [
        {"id": "call_9", "name": "calc", "arguments": '{"x": 2}'}]
    assert by_id["a1#result1"].output == '"4"'
    assert by_id["a1"].output == "The answer is 4."


def test_older_linear_messages_list() -> None:
    item = {"id": "old", "title": "Old", "chat": {"messages": [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hey"},
    ]}}
    (conv,) = openwebui.parse([item]).conversations
    assert [(n.role, n.parent_source_id) for n in conv.nodes] == [
        ("system", None), ("user", "old#1"), ("assistant", "old#2")]
    assert conv.nodes[0].input == "Be terse."
    assert conv.head_source_id == "old#3"


def test_cycle_and_missing_parent_are_reported_and_empty_message_dropped_quietly() -> None:
    messages = {
        "u1": m("u1", None, "user", "fine", 1, ["a1"]),
        "a1": m("a1", "u1", "assistant", "", 2, ["u2"]),
        "u2": m("u2", "a1", "user", "after empty", 3),
        "c1": m("c1", "c2", "user", "loop", 4),
        "c2": m("c2", "c1", "assistant", "loop", 5),
        "o1": m("o1", "ghost", "user", "orphan", 6),
    }
    parsed = openwebui.parse(chat(messages, current="c2"))
    (conv,) = parsed.conversations
    assert {n.source_id: n.parent_source_id for n in conv.nodes} == {"u1": None, "u2": "u1"}
    reasons = {s.source_id: s.reason for s in parsed.skipped}
    assert reasons == {
        "c1": "parent links form a cycle (through message c1)",
        "c2": "parent links form a cycle (through message c1)",
        "o1": "its parent message ghost is not in the file",
    }
    assert conv.head_source_id == "u2"  # the named HEAD was dropped: newest remaining tip


def test_chat_with_nothing_importable_is_skipped() -> None:
    parsed = openwebui.parse([{"id": "e", "title": "Empty", "chat": {"history": {
        "currentId": None, "messages": {}}}}])
    assert parsed.conversations == ()
    assert [(s.source_id, s.reason) for s in parsed.skipped] == [
        ("e", "conversation has no messages to import")]
