"""What the bundled server reads of a request: messages reduced for a chat template, tool calls
parsed from Hermes-style `<tool_call>` blocks, the numbers and stop sequences checked."""

from __future__ import annotations

import pytest

from treechat.providers.local.bundled_server.messages import (
    RequestError,
    normalize_messages,
    parse_tool_calls,
    positive_int,
    stop_sequences,
    tool_messages,
)


def test_tool_call_blocks_become_calls() -> None:
    text = 'Let me look.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n' \
           '</tool_call>'
    content, calls = parse_tool_calls(text)
    assert content == "Let me look."
    (call,) = calls
    assert call["function"] == {"name": "read_file", "arguments": '{"path": "a.txt"}'}
    assert call["id"].startswith("call_") and call["type"] == "function"


def test_a_block_that_is_not_json_stays_text() -> None:
    text = "<tool_call> not json </tool_call>"
    assert parse_tool_calls(text) == (text, [])
    assert parse_tool_calls("plain words") == ("plain words", [])


def test_tool_turns_keep_their_structure_for_the_template() -> None:
    messages = tool_messages([
        {"role": "user", "content": "read a"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "a"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "contents of a"},
    ])
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == {"path": "a"}
    assert messages[2] == {"role": "tool", "content": "contents of a", "tool_call_id": "c1"}


def test_messages_become_role_and_text_with_tool_calls_kept_as_words() -> None:
    out = normalize_messages([
        {"role": "developer", "content": [{"type": "text", "text": "Be "}, "brief."]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"function": {"name": "read_file", "arguments": '{"path": "a"}'}}]},
    ])
    assert out == [
        {"role": "system", "content": "Be brief."},
        {"role": "assistant", "content": '\n[tool call read_file({"path": "a"})]'},
    ]


@pytest.mark.parametrize("messages", [[], "hello", [{"content": "no role"}]])
def test_messages_that_are_not_a_list_of_roles_are_refused_in_openai_shape(
        messages: object) -> None:
    with pytest.raises(RequestError) as caught:
        normalize_messages(messages)
    assert caught.value.status == 400
    assert caught.value.body["error"]["param"] == "messages"
    assert caught.value.body["error"]["type"] == "invalid_request_error"


def test_the_first_positive_limit_given_is_the_one_used() -> None:
    body = {"max_completion_tokens": None, "max_tokens": 12}
    assert positive_int(body, "max_completion_tokens", "max_tokens") == 12
    assert positive_int({}, "max_tokens") is None
    for bad in (0, -3, True, "12"):
        with pytest.raises(RequestError, match="'max_tokens' must be a positive integer"):
            positive_int({"max_tokens": bad}, "max_tokens")


def test_stop_sequences_are_a_string_or_strings_and_empty_ones_are_dropped() -> None:
    assert stop_sequences({}) == []
    assert stop_sequences({"stop": ""}) == []
    assert stop_sequences({"stop": "END"}) == ["END"]
    assert stop_sequences({"stop": ["a", "", "b"]}) == ["a", "b"]
    with pytest.raises(RequestError, match="'stop' must be a string"):
        stop_sequences({"stop": ["a", 1]})
