"""The provider call: the default history cut for the overflow retry, and what goes on the
wire through real litellm HTTP to the loopback provider.

(The full set of wire behaviours, errors and retries is in tests/e2e/test_providers_http.py.)"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from typing import Any

import pytest
from tests.support.loopback_server import LoopbackProvider, Reply
from tests.unit.providers.test_cache_shaping import MARK, block

from treechat.providers import llm
from treechat.providers.stream import (
    Finished,
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    TurnRequest,
    default_shrink,
    joined,
    shutdown_provider_loop,
    stream_turn,
)
from treechat.providers.stream_usage import KEEP_EVERY


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


def test_pieces_that_arrive_together_are_handed_on_as_one() -> None:
    """A batch from the provider thread: each run of text (and of reasoning) is one piece,
    in order, nothing lost; the other events stay where they were."""
    batch = [ReasoningDelta("Thinking"), ReasoningDelta(" hard"), TextDelta("A"),
             TextDelta(" tall"), TextDelta(" plant."), ToolCallDelta(0, "c1", "look", "{}"),
             TextDelta("!")]
    assert joined(batch) == [ReasoningDelta("Thinking hard"), TextDelta("A tall plant."),
                             ToolCallDelta(0, "c1", "look", "{}"), TextDelta("!")]
    assert joined([]) == []


@pytest.mark.asyncio
@pytest.mark.usefixtures("provider_thread")
async def test_a_fast_stream_arrives_whole_and_in_order(loopback: LoopbackProvider) -> None:
    """Thousands of pieces sent as fast as the server can: the caller gets every character,
    the reasoning before the answer, and one `Finished` last, whatever pieces were joined."""
    words = " ".join(f"w{i}" for i in range(2000))
    loopback.queue(Reply(text=words, reasoning="First a plan."))
    events: list[StreamEvent] = []
    result = await stream_turn(TurnRequest(
        model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "Count."}],
        api_base=loopback.openai_base), on_event=events.append)
    assert result.error is None and result.text == words
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == words
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "First a plan."
    kinds = [type(e) for e in events]
    assert kinds.index(TextDelta) > max(i for i, k in enumerate(kinds) if k is ReasoningDelta)
    assert isinstance(events[-1], Finished) and kinds.count(Finished) == 1


@pytest.mark.asyncio
@pytest.mark.usefixtures("provider_thread")
@pytest.mark.parametrize("reported", ["full", "none"])
async def test_a_long_streams_usage_is_the_providers_after_its_chunks_are_let_go(
    loopback: LoopbackProvider, reported: str
) -> None:
    """litellm's record of a long stream is thinned as it streams (its chunks are not kept):
    the usage the provider reported at the end is still read, and a server that reported
    none still counts as unmeasured, never as litellm's estimate."""
    words = " ".join(f"w{i}" for i in range(3 * KEEP_EVERY))
    loopback.queue(Reply(text=words, usage=reported))
    result = await stream_turn(TurnRequest(
        model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "Count."}],
        api_base=loopback.openai_base))
    assert result.error is None and result.text == words
    if reported == "none":
        assert result.usage is None
    else:
        assert result.usage is not None and result.usage.output_tokens >= 3 * KEEP_EVERY
