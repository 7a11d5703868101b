"""A chat's own instructions and parameters, reasoning, cost per reply and continue, end to end:
real DuckDB file, the real engine, litellm over HTTP to the loopback provider, which records
exactly what went over the wire."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.core.chat_settings import ChatParameters
from treechat.core.reply import continuation_of, joined_runs, reasoning_of
from treechat.services.bootstrap import Services, build_services
from treechat.services.models.catalog import ModelChoice
from treechat.services.transfer.exporting import export_session
from treechat.services.transfer.importing import import_file
from treechat.services.turns.events import ReasoningDelta, TextDelta, TurnEvent
from treechat.services.turns.request import IDENTITY
from treechat.services.turns.spending import SpendingService
from treechat.store import usage as ledger

PLAIN = "openai/loopback-model"  # litellm does not know it: no reasoning parameters
REASONER = "openai/o3-mini"  # reasoning effort, no top-p (litellm's view of it)
THINKER = "anthropic/claude-sonnet-4-5"  # reasoning effort and a thinking budget


@pytest_asyncio.fixture
async def services(tmp_path: Path, loopback: LoopbackProvider) -> AsyncIterator[Services]:
    choices = (
        ModelChoice(PLAIN, "Loopback", "openai", api_base=loopback.openai_base),
        ModelChoice(REASONER, "Reasoner", "openai", api_base=loopback.openai_base),
        ModelChoice(THINKER, "Thinker", "anthropic", api_base=loopback.anthropic_base),
    )
    built = build_services(
        tmp_path / "data", bundled=False, detect_local_servers=False, extra_models=choices
    )
    built.models.default_model = PLAIN
    yield built
    await built.close()
    built.close_store()


class Events(list[TurnEvent]):
    def __call__(self, event: TurnEvent) -> None:
        self.append(event)

    def text(self, kind: type[Any] = TextDelta) -> str:
        return "".join(e.text for e in self if isinstance(e, kind))


def system_of(body: dict[str, Any]) -> str:
    """The system prompt as sent, on either wire."""
    if "system" in body:
        system = body["system"]
        return system if isinstance(system, str) else "\n\n".join(b["text"] for b in system)
    first = body["messages"][0]
    assert first["role"] == "system"
    content = first["content"]
    return content if isinstance(content, str) else "\n\n".join(b["text"] for b in content)


@pytest.mark.asyncio
async def test_chat_instructions_and_parameters_reach_the_wire_exactly(
    services: Services, loopback: LoopbackProvider
) -> None:
    chat = services.chat
    await chat.settings.set_global_instructions("Always answer in English.")
    session = await chat.sessions.create(model=PLAIN)
    await chat.settings.update(
        session.id,
        instructions="You are a terse pirate.",
        parameters=ChatParameters(temperature=0.3, top_p=0.9, max_tokens=321,
                                  reasoning_effort="high"),
    )
    loopback.queue(Reply(text="Arr."))
    await chat.send(session.id, "hello")
    body = loopback.requests[-1].body
    assert system_of(body) == f"{IDENTITY}\n\nAlways answer in English.\n\nYou are a terse pirate."
    assert body["temperature"] == 0.3
    assert body["top_p"] == 0.9
    assert body["max_tokens"] == 321
    # This model takes no reasoning effort: it is not sent at all.
    assert "reasoning_effort" not in body and "thinking" not in body


@pytest.mark.asyncio
async def test_reasoning_effort_goes_only_to_a_model_that_takes_it(
    services: Services, loopback: LoopbackProvider
) -> None:
    chat = services.chat
    session = await chat.sessions.create(model=REASONER)
    await chat.settings.update(
        session.id, parameters=ChatParameters(top_p=0.5, max_tokens=2000, reasoning_effort="low")
    )
    loopback.queue(Reply(text="42", reasoning="Six times seven is forty-two."))
    events = Events()
    node = await chat.send(session.id, "meaning?", on_event=events)
    body = loopback.requests[-1].body
    assert body["reasoning_effort"] == "low"
    assert "top_p" not in body  # o3-mini takes no top-p
    assert body.get("max_completion_tokens", body.get("max_tokens")) == 2000
    assert node is not None
    # Reasoning is its own part of the reply, streamed as its own events.
    assert node.output == "42"
    assert reasoning_of(node) == "Six times seven is forty-two."
    assert events.text(ReasoningDelta) == "Six times seven is forty-two."
    assert "Six times" not in events.text()
    # ...and billed: the provider's output tokens include it.
    record = loopback.requests[-1]
    assert record.reasoning_tokens > 0
    assert node.metadata["usage"]["output_tokens"] == record.output_tokens
    assert node.metadata["usage"]["reasoning_tokens"] == record.reasoning_tokens
    assert node.metadata["parameters"]["reasoning_effort"] == "low"


@pytest.mark.asyncio
async def test_thinking_budget_and_thinking_text_over_the_anthropic_wire(
    services: Services, loopback: LoopbackProvider
) -> None:
    chat = services.chat
    session = await chat.sessions.create(model=THINKER)
    await chat.settings.update(
        session.id, parameters=ChatParameters(max_tokens=4096, thinking_budget=2048)
    )
    loopback.queue(Reply(text="Paris.", reasoning="The capital of France is Paris."))
    node = await chat.send(session.id, "capital of France?")
    body = loopback.requests[-1].body
    assert loopback.requests[-1].wire == "anthropic"
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 4096
    assert node is not None and node.output == "Paris."
    assert reasoning_of(node) == "The capital of France is Paris."


@pytest.mark.asyncio
async def test_no_parameters_set_sends_none_of_them(
    services: Services, loopback: LoopbackProvider
) -> None:
    session = await services.chat.sessions.create(model=REASONER)
    loopback.queue(Reply(text="ok"))
    await services.chat.send(session.id, "hi")
    body = loopback.requests[-1].body
    for key in ("temperature", "top_p", "reasoning_effort", "thinking"):
        assert key not in body


@pytest.mark.asyncio
async def test_changing_instructions_mid_branch_rewrites_the_prefix_once(
    services: Services, loopback: LoopbackProvider
) -> None:
    chat = services.chat
    session = await chat.sessions.create(model=PLAIN)
    await chat.settings.update(session.id, instructions="Be brief.")
    loopback.queue(*(Reply(text=f"answer {i}") for i in range(4)))
    first = await chat.send(session.id, "one")
    second = await chat.send(session.id, "two")
    changed = await chat.settings.update(session.id, instructions="Be thorough.")
    third = await chat.send(session.id, "three")
    fourth = await chat.send(session.id, "four")
    systems = [system_of(r.body) for r in loopback.requests]
    assert systems[:2] == [f"{IDENTITY}\n\nBe brief."] * 2
    assert systems[2:] == [f"{IDENTITY}\n\nBe thorough."] * 2
    # The history after the system prompt is the same prefix: only L0 changed.
    assert loopback.requests[2].body["messages"][1:4] == loopback.requests[1].body["messages"][1:]
    # Each reply knows what it ran under; the earlier ones keep what they were sent.
    assert first is not None and second is not None and third is not None and fourth
    ran = [await chat.settings.instructions_for(session.id, n.id)
           for n in (first, second, third, fourth)]
    assert [r.instructions for r in ran] == ["Be brief.", "Be brief.", "Be thorough.",
                                             "Be thorough."]
    assert ran[2].id == changed.id and ran[2].changed_at == changed.changed_at
    history = await chat.settings.history(session.id)
    assert [h.revision for h in history] == [1, 2]


@pytest.mark.asyncio
async def test_cost_per_reply_equals_the_ledger_row(
    services: Services, loopback: LoopbackProvider
) -> None:
    session = await services.chat.sessions.create(model="openai/gpt-4o")
    services.models.extra = (
        *services.models.extra,
        ModelChoice("openai/gpt-4o", "GPT-4o", "openai", api_base=loopback.openai_base),
    )
    loopback.queue(Reply(text="priced reply " * 20))
    node = await services.chat.send(session.id, "how much?", model=PLAIN)
    assert node is not None
    spending = SpendingService(services.store)
    cost = await spending.reply_cost(node.id)
    rows = services.store.call(lambda r: ledger.session_usage(r, session.id))
    (row,) = rows
    assert cost is not None and row.head == node.id
    assert (cost.input_tokens, cost.cache_read, cost.output_tokens) == (
        row.input_tokens, row.cache_read, row.output_tokens
    )
    assert cost.cost_usd == row.cost_usd and cost.priced == row.priced
    total = await spending.chat_total(session.id)
    assert total.cost_usd == row.cost_usd and total.requests == 1
    # An unknown model has no price: it says so rather than counting as free.
    assert not cost.priced and not total.priced


@pytest.mark.asyncio
async def test_continue_appends_a_node_after_the_partial_reply(
    services: Services, loopback: LoopbackProvider
) -> None:
    chat = services.chat
    session = await chat.sessions.create(model=PLAIN)
    loopback.queue(Reply(text="The first half of the answer", finish="length"),
                   Reply(text=" and the second half."))
    partial = await chat.send(session.id, "tell me")
    assert partial is not None and partial.metadata["finish_reason"] == "length"
    before = await chat.sessions.view(session.id)
    rest = await chat.continue_reply(session.id, partial.id)
    assert rest is not None and rest.output == " and the second half."
    assert rest.predecessor == partial.id and continuation_of(rest) == partial.id
    view = await chat.sessions.view(session.id)
    # Append-only: every earlier node is unchanged, one new node at the end.
    assert view.path[: len(before.path)] == before.path
    assert [n.id for n in view.path] == [*(n.id for n in before.path), rest.id]
    runs = joined_runs(view.path)
    assert [len(r) for r in runs] == [1, 2]
    # The request carried the partial reply, then asked to continue it.
    sent = loopback.requests[-1].body["messages"]
    assert sent[-2] == {"role": "assistant", "content": "The first half of the answer"}
    assert sent[-1]["role"] == "user" and "continue" in sent[-1]["content"].lower()
    with pytest.raises(ValueError, match="cut short"):
        await chat.continue_reply(session.id, view.path[0].id)


@pytest.mark.asyncio
async def test_reasoning_survives_treechat_json_export_and_import(
    services: Services, loopback: LoopbackProvider, tmp_path: Path
) -> None:
    session = await services.chat.sessions.create(model=REASONER)
    loopback.queue(Reply(text="Yes.", reasoning="Let me think this through carefully."))
    node = await services.chat.send(session.id, "think?")
    assert node is not None
    text = await export_session(services.store, session.id, fmt="json")
    stored = {n["id"]: n for n in json.loads(text)["nodes"]}
    assert stored[node.id]["output"] == "Yes."
    markdown = await export_session(services.store, session.id, fmt="md")
    assert "Let me think this through carefully." in markdown
    path = tmp_path / "export.json"
    path.write_text(text, encoding="utf-8")
    other = build_services(tmp_path / "other", bundled=False, detect_local_servers=False)
    try:
        summary = await import_file(other.store, path)
        (sid,) = summary.session_ids
        view = await other.chat.sessions.view(sid)
        (imported,) = [n for n in view.path if n.role == "assistant"]
        assert imported.output == "Yes."
        assert reasoning_of(imported) == "Let me think this through carefully."
    finally:
        await other.close()
        other.close_store()


@pytest.mark.asyncio
async def test_estimate_of_the_next_request_is_at_the_uncached_price(
    services: Services, loopback: LoopbackProvider
) -> None:
    from treechat.providers import llm

    session = await services.chat.sessions.create(model=PLAIN)
    loopback.queue(Reply(text="a reply"))
    await services.chat.send(session.id, "first")
    estimate = await services.chat.estimate_next_cost(
        session.id, "a new question", model="openai/gpt-4o"
    )
    assert estimate.priced and estimate.prompt_tokens > 0
    full = llm.request_cost("openai/gpt-4o", estimate.prompt_tokens, 0)
    assert estimate.prompt_usd == pytest.approx(full.usd)
    cached = llm.request_cost("openai/gpt-4o", estimate.prompt_tokens, 0,
                              cache_read=estimate.prompt_tokens)
    assert estimate.prompt_usd > cached.usd
    assert estimate.ceiling_usd > estimate.prompt_usd
    unknown = await services.chat.estimate_next_cost(session.id, "x")
    assert not unknown.priced


@pytest.mark.asyncio
async def test_a_continued_reply_reads_as_one_answer_in_later_requests(
    services: Services, loopback: LoopbackProvider
) -> None:
    chat = services.chat
    session = await chat.sessions.create(model=THINKER)
    loopback.queue(Reply(text="Part one,", finish="length"), Reply(text=" part two."),
                   Reply(text="Next answer."))
    partial = await chat.send(session.id, "go on")
    assert partial is not None
    await chat.continue_reply(session.id, partial.id)
    final = await chat.send(session.id, "and then?")
    assert final is not None and final.output == "Next answer."
    sent = loopback.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert "Part one," in json.dumps(sent[1]) and " part two." in json.dumps(sent[1])
