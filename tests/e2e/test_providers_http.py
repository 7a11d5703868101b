"""The provider layer through real litellm HTTP to the loopback provider, for both wire formats."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.loopback_server import (
    DEFAULT_TEXT,
    LoopbackProvider,
    Reply,
    _openai_prompt,
    count_tokens,
)

from treechat.providers import llm
from treechat.providers.errors import ErrorKind, ProviderError
from treechat.providers.keys import install_log_redaction
from treechat.providers.stream import (
    Finished,
    OverflowRetry,
    StreamEvent,
    TextDelta,
    ToolCall,
    TurnRequest,
    shutdown_provider_loop,
    stream_events,
    stream_turn,
)
from treechat.store.database import Store
from treechat.store.repository import Draft
from treechat.store.usage import UsageRecord, last_measurement, ledger, record_usage

OPENAI = "openai/gpt-4o"
ANTHROPIC = "anthropic/claude-sonnet-4-5"
WIRES = [OPENAI, ANTHROPIC]

MARK = {"type": "ephemeral"}


@pytest.fixture(autouse=True, scope="module")
def provider_thread() -> Iterator[None]:
    """Calls run on the provider thread; close its connections when this module is done."""
    yield
    shutdown_provider_loop()
    gc.collect()  # anything left unclosed warns here


def base(server: LoopbackProvider, model: str) -> str:
    return server.anthropic_base if llm.is_anthropic(model) else server.openai_base


def request(
    server: LoopbackProvider, model: str, messages: list[dict[str, Any]], **kw: Any
) -> TurnRequest:
    return TurnRequest(
        model=model,
        messages=messages,
        api_base=base(server, model),
        api_key="sk-loopback-test",
        **kw,
    )


def marked(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text, "cache_control": MARK}]


def _plain(message: dict[str, Any]) -> dict[str, Any]:
    """A message as the OpenAI wire carries it (marks stripped, one text block -> string)."""
    content = message["content"]
    if isinstance(content, list) and len(content) == 1:
        return {**message, "content": content[0]["text"]}
    return message


def long_system() -> str:
    return "You are a careful assistant who answers in plain words. " * 160


def conversation(turns: int, words: int = 40) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    for i in range(turns):
        role = "user" if i % 2 == 0 else "assistant"
        out.append({"role": role, "content": f"turn {i} " + "lorem ipsum dolor " * words})
    if out[-1]["role"] != "user":
        out.append({"role": "user", "content": "and now?"})
    return out


@pytest.mark.asyncio
@pytest.mark.parametrize("model", WIRES)
async def test_streams_text_and_reports_measured_usage(
    loopback: LoopbackProvider, model: str
) -> None:
    # the server holds the rest of the reply until its first piece has reached us
    resume = threading.Event()
    loopback.queue(Reply(text=DEFAULT_TEXT, pause_after=3, resume=resume))
    events: list[StreamEvent] = []
    held: list[bool] = []

    def on_event(event: StreamEvent) -> None:
        if isinstance(event, TextDelta) and not held:
            held.append(not resume.is_set())
            resume.set()
        events.append(event)

    result = await stream_turn(
        request(loopback, model, [{"role": "user", "content": "Say hello."}]),
        on_event=on_event,
    )
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert result.ok
    assert result.text == DEFAULT_TEXT == "".join(deltas)
    # streamed: text arrived while most of the reply was still to come
    assert held == [True] and len(deltas) >= 2 and len(deltas[0]) < len(DEFAULT_TEXT) / 2
    assert isinstance(events[-1], Finished)
    sent = loopback.requests[-1]
    assert sent.body["stream"] is True
    assert result.usage is not None
    assert result.usage.prompt_tokens == sent.prompt_tokens
    assert result.usage.output_tokens == count_tokens(DEFAULT_TEXT)
    assert result.finish_reason == "stop"
    assert result.cost is not None and result.cost.priced and result.cost.usd > 0


@pytest.mark.asyncio
async def test_openai_second_call_reads_the_cached_prefix(loopback: LoopbackProvider) -> None:
    history = [
        {"role": "system", "content": long_system()},
        {"role": "user", "content": "First question?"},
    ]
    first = await stream_turn(request(loopback, OPENAI, history))
    assert first.usage is not None and first.usage.cache_read == 0
    history += [
        {"role": "assistant", "content": first.text},
        {"role": "user", "content": "Second?"},
    ]
    second = await stream_turn(request(loopback, OPENAI, history))
    assert second.usage is not None
    # OpenAI caches automatically from 1024 tokens on, in steps of 128.
    assert second.usage.cache_read >= 1024
    assert (second.usage.cache_read - 1024) % 128 == 0
    assert second.usage.cache_read <= first.usage.prompt_tokens
    assert second.usage.prompt_tokens == loopback.requests[-1].prompt_tokens
    assert second.cost is not None and first.cost is not None


@pytest.mark.asyncio
async def test_anthropic_caches_only_at_breakpoints_and_reports_writes(
    loopback: LoopbackProvider,
) -> None:
    history: list[dict[str, Any]] = [
        {"role": "system", "content": marked(long_system())},
        {"role": "user", "content": "First question?"},
    ]
    first = await stream_turn(request(loopback, ANTHROPIC, history))
    assert first.usage is not None
    assert first.usage.cache_read == 0
    assert first.usage.cache_write >= 1024  # the marked system prompt was written
    history += [
        {"role": "assistant", "content": first.text},
        {"role": "user", "content": "Second?"},
    ]
    second = await stream_turn(request(loopback, ANTHROPIC, history))
    assert second.usage is not None
    assert second.usage.cache_read == first.usage.cache_write
    assert second.usage.prompt_tokens == loopback.requests[-1].prompt_tokens
    # Without any breakpoint Anthropic caches nothing at all.
    plain = [{"role": "system", "content": long_system()}, {"role": "user", "content": "Third?"}]
    await stream_turn(request(loopback, ANTHROPIC, plain))
    third = await stream_turn(request(loopback, ANTHROPIC, plain))
    assert third.usage is not None and third.usage.cache_read == 0 and third.usage.cache_write == 0


@pytest.mark.asyncio
async def test_anthropic_body_carries_at_most_four_breakpoints_others_none(
    loopback: LoopbackProvider,
) -> None:
    messages: list[dict[str, Any]] = [{"role": "system", "content": marked(long_system())}]
    for i in range(6):
        role = "user" if i % 2 == 0 else "assistant"
        messages.append({"role": role, "content": marked(f"message {i}")})
    messages.append({"role": "user", "content": marked("last")})
    tools = [
        {
            "type": "function",
            "function": {
                "name": n,
                "description": n,
                "parameters": {"type": "object", "properties": {}},
            },
        }
        for n in ("zeta", "alpha", "mid")
    ]
    await stream_turn(request(loopback, ANTHROPIC, messages, tools=tools))
    body = loopback.requests[-1].body
    wire = json.dumps(body)
    assert wire.count('"cache_control"') == 4
    assert "cache_control" in json.dumps(body["system"])  # the stable head keeps its mark
    last = body["messages"][-1]["content"]
    assert "cache_control" in json.dumps(last)  # and so does the rolling tail
    assert [t["name"] for t in body["tools"]] == ["alpha", "mid", "zeta"]

    await stream_turn(request(loopback, OPENAI, messages, tools=tools))
    body = loopback.requests[-1].body
    assert "cache_control" not in json.dumps(body)
    assert body["messages"][0]["content"] == long_system()  # plain text, not content blocks
    assert [t["function"]["name"] for t in body["tools"]] == ["alpha", "mid", "zeta"]


@pytest.mark.asyncio
@pytest.mark.parametrize("model", WIRES)
async def test_overflow_is_retried_once_with_half_the_history_and_succeeds(
    loopback: LoopbackProvider, model: str
) -> None:
    messages = conversation(24)
    loopback.window = 2400
    events: list[StreamEvent] = []
    shrink_calls: list[int] = []

    def shrink(sent: list[dict[str, Any]], target: int) -> list[dict[str, Any]]:
        shrink_calls.append(target)
        kept: list[dict[str, Any]] = []
        used = 0
        for message in reversed(sent[1:]):
            size = llm.count_message_tokens(model, [message])
            if used + size > target:
                break
            kept.insert(0, message)
            used += size
        return sent[:1] + kept

    result = await stream_turn(
        request(loopback, model, messages), on_event=events.append, shrink=shrink
    )
    assert result.ok, result.error
    assert result.text == DEFAULT_TEXT
    assert len(loopback.requests) == 2  # exactly one retry
    first, second = loopback.requests
    assert first.status == 400 and first.prompt_tokens > loopback.window
    assert second.prompt_tokens <= loopback.window
    retry = next(e for e in events if isinstance(e, OverflowRetry))
    assert shrink_calls == [retry.target_tokens]
    assert retry.target_tokens == retry.sent_history_tokens // 2
    assert result.attempts == 2
    assert len(result.messages_sent) == retry.messages_after < len(messages)
    assert result.messages_sent[0] == messages[0]  # the system prompt survives


@pytest.mark.asyncio
@pytest.mark.parametrize("model", WIRES)
async def test_overflow_retry_uses_the_default_shrink(
    loopback: LoopbackProvider, model: str
) -> None:
    loopback.window = 2400
    result = await stream_turn(request(loopback, model, conversation(24)))
    assert result.ok and result.attempts == 2 and len(loopback.requests) == 2


@pytest.mark.asyncio
@pytest.mark.parametrize("model", WIRES)
async def test_overflow_that_persists_is_reported_not_retried_again(
    loopback: LoopbackProvider, model: str
) -> None:
    loopback.window = 10  # even the shrunken request cannot fit
    result = await stream_turn(request(loopback, model, conversation(8)))
    assert result.error is not None and result.error.kind is ErrorKind.OVERFLOW
    assert len(loopback.requests) == 2
    assert "longer than this model can read" in result.error.message


@pytest.mark.asyncio
@pytest.mark.parametrize("model", WIRES)
async def test_overflow_after_streamed_text_is_not_retried(
    loopback: LoopbackProvider, model: str
) -> None:
    loopback.queue(Reply(error_after=4, message="overflow"))
    result = await stream_turn(request(loopback, model, [{"role": "user", "content": "hi"}]))
    assert result.error is not None and result.error.kind is ErrorKind.OVERFLOW
    assert len(loopback.requests) == 1  # no duplicate output from a second attempt
    assert result.text and DEFAULT_TEXT.startswith(result.text)


@pytest.mark.asyncio
@pytest.mark.parametrize("model", WIRES)
async def test_other_errors_are_never_retried(loopback: LoopbackProvider, model: str) -> None:
    loopback.fail_next(400)
    result = await stream_turn(request(loopback, model, [{"role": "user", "content": "hi"}]))
    assert result.error is not None and result.error.kind is ErrorKind.BAD_REQUEST
    assert result.error.retry is False
    assert len(loopback.requests) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("model", WIRES)
async def test_rate_limit_gives_its_kind_and_wait(loopback: LoopbackProvider, model: str) -> None:
    loopback.fail_next(429, retry_after=7)
    result = await stream_turn(request(loopback, model, [{"role": "user", "content": "hi"}]))
    assert result.error is not None
    assert result.error.kind is ErrorKind.RATE_LIMIT
    assert result.error.retry is True
    assert result.error.retry_after == 7
    assert "7 seconds" in result.error.message
    assert len(loopback.requests) == 1  # no hidden retries inside litellm or the SDK


@pytest.mark.asyncio
@pytest.mark.parametrize("model", WIRES)
async def test_server_error_gives_its_kind(loopback: LoopbackProvider, model: str) -> None:
    loopback.fail_next(500)
    result = await stream_turn(request(loopback, model, [{"role": "user", "content": "hi"}]))
    assert result.error is not None
    assert result.error.kind is ErrorKind.SERVER and result.error.retry
    assert result.error.message == "The provider had a problem on its side."
    assert len(loopback.requests) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("model", WIRES)
async def test_cut_stream_keeps_the_text_that_arrived(
    loopback: LoopbackProvider, model: str
) -> None:
    loopback.queue(Reply(cut_after=6))
    events: list[StreamEvent] = []
    result = await stream_turn(
        request(loopback, model, [{"role": "user", "content": "hi"}]), on_event=events.append
    )
    assert result.error is not None
    assert result.error.kind is ErrorKind.SERVER
    assert "text received so far was kept" in result.error.message
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert result.text == streamed
    assert result.text and DEFAULT_TEXT.startswith(result.text) and result.text != DEFAULT_TEXT
    assert len(loopback.requests) == 1


@pytest.mark.asyncio
async def test_unreachable_provider_is_offline() -> None:
    server = LoopbackProvider()
    url = server.openai_base
    server.stop()  # nothing listens on the port any more
    result = await stream_turn(
        TurnRequest(
            model=OPENAI, messages=[{"role": "user", "content": "hi"}], api_base=url, api_key="sk-x"
        )
    )
    assert result.error is not None
    assert result.error.kind is ErrorKind.OFFLINE and result.error.retry


@pytest.mark.asyncio
@pytest.mark.parametrize("model", WIRES)
async def test_cancel_mid_stream_closes_the_http_stream(
    loopback: LoopbackProvider, model: str
) -> None:
    loopback.queue(Reply(text="word " * 600, tokens_per_second=200))
    received: list[str] = []
    first_text = asyncio.Event()

    def on_event(event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            received.append(event.text)
            if len(received) >= 10:
                first_text.set()

    task = asyncio.create_task(
        stream_turn(
            request(loopback, model, [{"role": "user", "content": "go"}]), on_event=on_event
        )
    )
    await asyncio.wait_for(first_text.wait(), timeout=30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    served = loopback.requests[-1]
    assert await asyncio.to_thread(served.done.wait, 30)
    assert served.disconnected and not served.finished
    assert served.pieces_sent < 600
    assert len(received) <= served.pieces_sent
    assert len(loopback.requests) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("model", WIRES)
@pytest.mark.parametrize("usage", ["none", "zeros"])
async def test_empty_terminal_usage_reports_none(
    loopback: LoopbackProvider, model: str, usage: str
) -> None:
    loopback.queue(Reply(usage=usage))
    result = await stream_turn(request(loopback, model, [{"role": "user", "content": "hi"}]))
    assert result.ok and result.text == DEFAULT_TEXT
    assert result.usage is None  # not litellm's own estimate, not zeros
    assert result.cost is None


@pytest.mark.asyncio
@pytest.mark.parametrize("model", WIRES)
async def test_tool_calls_arrive_assembled(loopback: LoopbackProvider, model: str) -> None:
    loopback.reply_with_tool_calls(
        [
            {"name": "read_file", "arguments": {"path": "notes/todo.md", "limit": 40}},
            {"name": "list_dir", "arguments": {"path": "."}},
        ],
        text="Let me look.",
    )
    tools = [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "list_dir",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        },
    ]
    events: list[StreamEvent] = []
    result = await stream_turn(
        request(loopback, model, [{"role": "user", "content": "what's left?"}], tools=tools),
        on_event=events.append,
    )
    assert result.ok
    assert result.text == "Let me look."
    assert [c.name for c in result.tool_calls] == ["read_file", "list_dir"]
    assert result.tool_calls[0].parsed_arguments() == {"path": "notes/todo.md", "limit": 40}
    assert result.tool_calls[1].parsed_arguments() == {"path": "."}
    assert all(c.id for c in result.tool_calls)
    assert [e for e in events if isinstance(e, ToolCall)] == list(result.tool_calls)
    assert result.finish_reason == "tool_calls"


@pytest.mark.asyncio
async def test_stream_events_raises_a_provider_error_without_the_original(
    loopback: LoopbackProvider,
) -> None:
    loopback.fail_next(401)
    with pytest.raises(ProviderError) as info:
        async for _ in stream_events(
            TurnRequest(
                model=OPENAI,
                messages=[{"role": "user", "content": "hi"}],
                api_base=loopback.openai_base,
                api_key="sk-live-abcdefghijklmnop1234",
            )
        ):
            pass
    assert info.value.kind is ErrorKind.AUTH
    assert info.value.__cause__ is None and info.value.__suppress_context__


@pytest.mark.asyncio
async def test_keys_never_reach_the_store_or_the_logs(
    loopback: LoopbackProvider, tmp_path: Path
) -> None:
    key = "sk-treechat-e2e-" + "Q7x9" * 8
    log_file = tmp_path / "treechat.log"
    handler = logging.FileHandler(log_file)
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    install_log_redaction()
    litellm = await llm.ensure_loaded()
    litellm._turn_on_debug()  # the most verbose litellm gets
    store = Store.open(tmp_path / "treechat.duckdb")
    try:
        ok = await stream_turn(
            TurnRequest(
                model=OPENAI,
                messages=[{"role": "user", "content": "hi"}],
                api_base=loopback.openai_base,
                api_key=key,
            )
        )
        loopback.fail_next(401)  # the loopback echoes the presented key back, as some providers do
        bad = await stream_turn(
            TurnRequest(
                model=ANTHROPIC,
                messages=[{"role": "user", "content": "hi"}],
                api_base=loopback.anthropic_base,
                api_key=key,
            )
        )
        assert loopback.requests[-1].headers.get("x-api-key") == key  # it really went over the wire
        assert bad.error is not None and bad.error.kind is ErrorKind.AUTH
        assert key not in bad.error.message and key not in bad.error.detail
        assert key not in repr(TurnRequest(model=OPENAI, messages=[], api_key=key))
        assert ok.usage is not None
        usage = ok.usage
        await store.run(
            lambda repo: record_usage(
                repo,
                UsageRecord(
                    id="u1",
                    session_id="s1",
                    model=OPENAI,
                    created_at=time.time(),
                    input_tokens=usage.prompt_tokens,
                    output_tokens=usage.output_tokens,
                ),
            )
        )
        failure = bad.error
        await store.run(
            lambda repo: repo.write_draft(
                Draft(
                    id="d1",
                    session_id="s1",
                    parent_id=None,
                    model=ANTHROPIC,
                    text=bad.text,
                    started_at=1.0,
                    updated_at=2.0,
                    metadata={
                        "error": failure.message,
                        "detail": failure.detail,
                        "kind": str(failure.kind),
                    },
                )
            )
        )
        logging.getLogger("treechat.providers").error("turn failed: %s", failure.detail)
    finally:
        store.close()
        litellm._logging._disable_debugging()
        root.removeHandler(handler)
        root.setLevel(old_level)
        handler.close()
    for path in tmp_path.iterdir():
        assert key.encode() not in path.read_bytes(), path.name
    assert log_file.stat().st_size > 0  # the logs were really written, just without the key


@pytest.mark.asyncio
async def test_usage_lands_in_the_ledger_and_occupancy_reads_the_last_request(
    loopback: LoopbackProvider, tmp_path: Path
) -> None:
    history = [
        {"role": "system", "content": marked(long_system())},
        {"role": "user", "content": "Q1"},
    ]
    store = Store.open(tmp_path / "treechat.duckdb")
    try:
        results = []
        for i in range(3):
            result = await stream_turn(request(loopback, ANTHROPIC, history))
            assert result.usage is not None and result.cost is not None
            u, cost = result.usage, result.cost
            record = UsageRecord(
                id=f"u{i}",
                session_id="s",
                model=ANTHROPIC,
                created_at=100.0 + i,
                input_tokens=u.prompt_tokens,
                cache_read=u.cache_read,
                cache_write=u.cache_write,
                output_tokens=u.output_tokens,
                cost_usd=cost.usd,
                priced=cost.priced,
            )
            await store.run(lambda repo, r=record: record_usage(repo, r))
            results.append(result)
            history = [
                *history,
                {"role": "assistant", "content": result.text},
                {"role": "user", "content": f"Q{i + 2}"},
            ]
        rows = await store.run(ledger)
        last = await store.run(lambda repo: last_measurement(repo, "s"))
    finally:
        store.close()
    (row,) = rows
    assert row.requests == 3
    assert row.cache_read == sum(r.usage.cache_read for r in results if r.usage) > 0
    assert row.cache_write == sum(r.usage.cache_write for r in results if r.usage) > 0
    assert row.cost_usd == pytest.approx(sum(r.cost.usd for r in results if r.cost))
    assert last is not None and results[-1].usage is not None
    assert last.input_tokens == results[-1].usage.prompt_tokens  # the last request, not a sum


@pytest.mark.asyncio
@pytest.mark.parametrize("model", WIRES)
async def test_cached_prefix_survives_an_append_only_compaction(
    loopback: LoopbackProvider, model: str
) -> None:
    summary = "[Summary] Earlier the user and the assistant planned the garden. " * 30
    before: list[dict[str, Any]] = [
        {"role": "system", "content": marked(long_system())},
        {"role": "user", "content": marked(summary)},
        *conversation(6)[1:],
    ]
    first = await stream_turn(request(loopback, model, before))
    # Compaction folds the old turns into a second summary placed after the first one; the
    # system prompt and the first summary stay byte-identical.
    after: list[dict[str, Any]] = [
        before[0],
        before[1],
        {"role": "user", "content": marked("[Summary] Then they chose tomatoes and beans. " * 10)},
        {"role": "user", "content": "What should I plant first?"},
    ]
    second = await stream_turn(request(loopback, model, after))
    assert first.usage is not None and second.usage is not None
    if llm.is_anthropic(model):
        # Read exactly what the first call wrote (through the first summary), write the rest.
        assert second.usage.cache_read == first.usage.cache_write >= 1024
        assert second.usage.cache_write > 0
    else:
        kept = _openai_prompt({"messages": [_plain(m) for m in after]}).block_ends[1]
        assert kept >= 1024
        assert kept - 128 < second.usage.cache_read < second.usage.prompt_tokens
