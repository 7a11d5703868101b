"""The stream's vocabulary: a request never shows its key, a tool call's arguments parse (or
stay text), and a request to a server of our own without a key is keyless."""

from __future__ import annotations

from treechat.providers.stream_types import ToolCall, TurnRequest


def test_request_repr_hides_the_key_and_tool_arguments_parse() -> None:
    request = TurnRequest(model="openai/gpt-4o", messages=[], api_key="sk-hidden-0123456789")
    assert "sk-hidden" not in repr(request)
    assert ToolCall(0, "c", "f", '{"a": 1}').parsed_arguments() == {"a": 1}
    assert ToolCall(0, "c", "f", "{not json").parsed_arguments() == "{not json"
    assert ToolCall(0, "c", "f", "").parsed_arguments() == {}


def test_only_a_server_of_our_own_without_a_key_is_keyless() -> None:
    assert TurnRequest("openai/m", [], api_base="http://127.0.0.1:1/v1").keyless
    assert not TurnRequest("openai/m", [], api_base="http://127.0.0.1:1/v1", api_key="k").keyless
    assert not TurnRequest("openai/gpt-4o", []).keyless
