"""The provider call: cache shaping, tool order, the default history cut and usage reading,
and what goes on the wire through real litellm HTTP to the loopback provider.

(The full set of wire behaviours, errors and retries is in tests/e2e/test_providers_http.py.)"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from typing import Any

import pytest
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.providers import llm
from treechat.providers.stream import (
    MAX_BREAKPOINTS,
    ToolCall,
    TurnRequest,
    _usage_from,
    default_shrink,
    shape_messages,
    shape_tools,
    shutdown_provider_loop,
    stream_turn,
)

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


def test_default_shrink_keeps_the_system_prompt_and_the_newest_history_that_fits() -> None:
    model = "openai/gpt-4o"
    messages: list[dict[str, Any]] = [{"role": "system", "content": "rules " * 50}]
    for i in range(10):
        messages.append(
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"{i} " + "word " * 100}
        )
    history = sum(llm.count_message_tokens(model, [m]) for m in messages[1:])
    cut = default_shrink(model)(messages, history // 2)
    assert cut[0] == messages[0]
    assert cut[-1] == messages[-1]
    kept = sum(llm.count_message_tokens(model, [m]) for m in cut[1:])
    assert 0 < kept <= history // 2
    assert cut[1:] == messages[len(messages) - len(cut) + 1 :]  # a contiguous newest tail


def test_default_shrink_never_starts_on_an_orphaned_tool_result() -> None:
    model = "openai/gpt-4o"
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "old " * 300},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "result " * 40},
        {"role": "user", "content": "new question"},
    ]
    tail = sum(llm.count_message_tokens(model, [m]) for m in messages[3:])
    cut = default_shrink(model)(messages, tail)
    assert [m["role"] for m in cut] == ["system", "user"]
    assert cut[-1]["content"] == "new question"


def test_empty_usage_is_none_and_cache_details_are_clamped() -> None:
    assert _usage_from(None) is None
    assert _usage_from({"prompt_tokens": 0, "completion_tokens": 0}) is None
    usage = _usage_from(
        {
            "prompt_tokens": 100,
            "completion_tokens": 7,
            "prompt_tokens_details": {"cached_tokens": 250},
        }
    )
    assert usage is not None
    assert (usage.prompt_tokens, usage.cache_read, usage.output_tokens) == (100, 100, 7)
    assert usage.uncached_prompt_tokens == 0


def test_request_repr_hides_the_key_and_tool_arguments_parse() -> None:
    request = TurnRequest(model="openai/gpt-4o", messages=[], api_key="sk-hidden-0123456789")
    assert "sk-hidden" not in repr(request)
    assert ToolCall(0, "c", "f", '{"a": 1}').parsed_arguments() == {"a": 1}
    assert ToolCall(0, "c", "f", "{not json").parsed_arguments() == "{not json"
    assert ToolCall(0, "c", "f", "").parsed_arguments() == {}


# --- on the wire -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def provider_thread() -> Iterator[None]:
    """Calls run on the provider thread; close its connections when this module is done."""
    yield
    shutdown_provider_loop()
    gc.collect()


def _marked_request(model: str, api_base: str, api_key: str | None) -> TurnRequest:
    return TurnRequest(
        model=model,
        messages=[
            {"role": "system", "content": block("You answer briefly. " * 50)},
            {"role": "user", "content": block("What is a tree?")},
        ],
        api_base=api_base,
        api_key=api_key,
    )


@pytest.mark.asyncio
@pytest.mark.usefixtures("provider_thread")
async def test_openrouter_claude_keeps_its_breakpoints_on_the_wire(
    loopback: LoopbackProvider,
) -> None:
    """The context engine places breakpoints for this model, and they reach OpenRouter:
    litellm sends OpenRouter's Claude models `cache_control` in content blocks."""
    loopback.queue(Reply(text="A tall plant."))
    model = "openrouter/anthropic/claude-sonnet-4.5"
    result = await stream_turn(_marked_request(model, loopback.openai_base, "sk-or-test-0123"))
    assert result.error is None and result.text == "A tall plant."
    body = loopback.requests[-1].body
    assert body["model"] == "anthropic/claude-sonnet-4.5"
    assert json.dumps(body).count('"cache_control"') == 2
    assert body["messages"][0]["content"][-1]["cache_control"] == MARK


@pytest.mark.asyncio
@pytest.mark.usefixtures("provider_thread")
async def test_openrouter_other_models_get_no_breakpoints(loopback: LoopbackProvider) -> None:
    model = "openrouter/openai/gpt-4o"
    await stream_turn(_marked_request(model, loopback.openai_base, "sk-or-test-0123"))
    body = loopback.requests[-1].body
    assert "cache_control" not in json.dumps(body)
    assert body["messages"][0]["content"] == "You answer briefly. " * 50
