"""The nodes a turn writes: what a reply records of its request, a reply cut short, and a
tool call's result."""

from __future__ import annotations

from treechat.core.model import Node
from treechat.core.reply import reasoning_of
from treechat.providers import stream as provider_stream
from treechat.services.models.catalog import Endpoint
from treechat.services.turns.replies import interrupted_node, reply_node, tool_node
from treechat.tools.base import ToolResult

ENDPOINT = Endpoint("openai/qwen2.5", "Qwen", 32_768, 4096, choice="ollama/qwen2.5")


def _result(
    *, tool_calls: tuple[provider_stream.ToolCall, ...] = (), attempts: int = 1,
    unreadable_lines: int = 0, reasoning: str = "",
) -> provider_stream.TurnResult:
    return provider_stream.TurnResult(
        model="openai/qwen2.5", text="The answer.", tool_calls=tool_calls, usage=None,
        cost=None, finish_reason="stop", attempts=attempts, messages_sent=(),
        reasoning=reasoning, unreadable_lines=unreadable_lines)


def test_a_reply_is_recorded_under_the_address_it_was_asked_for() -> None:
    node = reply_node("r", "s", "u", ENDPOINT, _result(), {"prompt_tokens": 9},
                      {"settings_revision": "rev"}, 5.0)
    assert (node.role, node.predecessor, node.output, node.created_at) == (
        "assistant", "u", "The answer.", 5.0)
    assert node.name == "ollama/qwen2.5"
    meta = node.metadata
    assert meta["model"] == "ollama/qwen2.5" and meta["litellm_model"] == "openai/qwen2.5"
    assert meta["usage"] == {"prompt_tokens": 9} and meta["settings_revision"] == "rev"
    assert "tool_calls" not in meta and "overflow_retried" not in meta


def test_a_reply_names_its_tool_calls_retries_bad_lines_and_reasoning() -> None:
    call = provider_stream.ToolCall(0, "c1", "todo_list", "{}")
    node = reply_node("r", "s", None, ENDPOINT, _result(
        tool_calls=(call,), attempts=2, unreadable_lines=3, reasoning="thinking it over"),
        None, {}, 1.0)
    meta = node.metadata
    assert meta["tool_calls"] == [{"id": "c1", "name": "todo_list", "arguments": "{}"}]
    assert meta["overflow_retried"] is True and meta["unreadable_stream_lines"] == 3
    assert reasoning_of(node) == "thinking it over"


def test_a_reply_cut_short_says_why() -> None:
    node = interrupted_node("i", "s", "u", ENDPOINT, "half of it", "stopped",
                            {"parameters": {"max_tokens": 10}}, 2.0)
    assert node.interrupted and node.output == "half of it"
    assert node.metadata["reason"] == "stopped"
    assert node.metadata["parameters"] == {"max_tokens": 10}


def test_a_tool_result_hangs_under_its_reply_with_its_arguments() -> None:
    reply = Node(id="r", seq=3, created_at=0.0, session_id="s", role="assistant")
    good = tool_node("t", "s", reply, provider_stream.ToolCall(0, "c1", "todo_create",
                     '{"title": "milk"}'), ToolResult.success("done"), 3.0)
    assert (good.role, good.caller, good.predecessor) == ("tool", "r", None)
    assert good.input == {"title": "milk"} and good.metadata["tool_call_id"] == "c1"
    raw = tool_node("t2", "s", reply, provider_stream.ToolCall(0, "c2", "x", "not json"),
                    ToolResult.error("bad"), 3.0)
    assert raw.input == "not json" and raw.metadata["ok"] is False
