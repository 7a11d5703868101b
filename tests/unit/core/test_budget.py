"""Budgets: history = min(configured max, window x share); the four-way split; the whole
request fitted (huge single messages cut, tool pairing kept); a system prompt that alone
exceeds the window is a clear error; the overflow retry halves what was sent."""

from __future__ import annotations

import pytest

from treechat.core.budget import (
    BudgetConfig,
    ContextOverflowError,
    fit_to_window,
    history_budget,
    history_tokens,
    output_reserve,
    plan_budget,
    safety_margin,
    shrink_history,
)
from treechat.providers.tokenizer import counter_for

COUNTER = counter_for("gpt-4o")


def test_history_budget_is_min_of_configured_max_and_window_share() -> None:
    cfg = BudgetConfig(max_history_tokens=50_000, history_share=0.5)
    assert history_budget(32_000, cfg) == 16_000
    assert history_budget(1_000_000, cfg) == 50_000  # the window is a ceiling, not a target


def test_four_way_split_adds_up() -> None:
    b = plan_budget(32_768, system_tokens=1_500, tools_tokens=900)
    assert b.output_reserve == output_reserve(32_768)
    assert b.safety_margin == safety_margin(32_768)
    assert b.history <= b.room_for_history
    assert b.system + b.tools + b.history + b.output_reserve + b.safety_margin <= b.window


def test_small_window_shrinks_the_reply_reserve_before_the_history() -> None:
    b = plan_budget(4_096, system_tokens=2_500, tools_tokens=500)
    assert b.output_reserve >= 256
    assert b.history > 0
    assert b.system + b.tools + b.history + b.output_reserve + b.safety_margin <= b.window


def test_system_prompt_alone_over_the_window_is_a_clear_error() -> None:
    with pytest.raises(ContextOverflowError) as err:
        plan_budget(8_192, system_tokens=9_000, tools_tokens=0)
    assert "window" in str(err.value) and "system prompt" in str(err.value)
    assert err.value.window == 8_192


def test_fit_with_system_prompt_over_the_window_raises_not_crashes() -> None:
    messages = [{"role": "system", "content": "rule " * 5_000},
                {"role": "user", "content": "hi"}]
    with pytest.raises(ContextOverflowError):
        fit_to_window(messages, window=2_048, counter=COUNTER, max_output_tokens=256)


def test_huge_single_message_is_cut_to_fit_with_head_and_tail() -> None:
    huge = "BEGIN " + ("lorem ipsum dolor sit amet " * 20_000) + " END"
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": huge}]
    fit = fit_to_window(messages, window=8_192, counter=COUNTER, tools_tokens=300,
                        max_output_tokens=1_024)
    assert fit.tokens + 300 + 1_024 <= 8_192
    assert COUNTER.count_messages(fit.messages) == fit.tokens
    body = fit.messages[-1]["content"]
    assert body.startswith("BEGIN") and body.endswith("END")
    assert fit.truncated == (1,)
    assert fit.messages[0] == messages[0]


def test_fit_drops_oldest_and_never_starts_on_an_orphan_tool_result() -> None:
    messages: list[dict[str, object]] = [{"role": "system", "content": "sys"}]
    for i in range(40):
        messages.append({"role": "user", "content": f"question {i} " + "x " * 200})
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": "grep", "arguments": "{}"}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "hit " * 150})
        messages.append({"role": "assistant", "content": f"answer {i}"})
    fit = fit_to_window(messages, window=6_000, counter=COUNTER, max_output_tokens=1_000)
    assert fit.tokens + 1_000 <= 6_000
    assert fit.dropped > 0 and fit.changed
    assert fit.messages[0]["role"] == "system"
    assert fit.messages[1]["role"] == "user"
    assert fit.messages[-1]["content"] == "answer 39"
    calls = set()
    for m in fit.messages:
        for c in m.get("tool_calls") or ():  # type: ignore[union-attr]
            calls.add(c["id"])
        if m["role"] == "tool":
            assert m["tool_call_id"] in calls


def test_fit_leaves_a_fitting_request_alone() -> None:
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}]
    fit = fit_to_window(messages, window=8_192, counter=COUNTER, max_output_tokens=512)
    assert list(fit.messages) == messages
    assert not fit.changed and fit.kept == (0, 1)


def test_shrink_history_halves_relative_to_what_was_sent() -> None:
    messages = [{"role": "system", "content": "sys " * 50}]
    messages += [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " * 100}
                 for i in range(30)]
    sent = history_tokens(messages, COUNTER)
    out = shrink_history(messages, sent // 2, COUNTER)
    assert out[0] == messages[0]
    assert history_tokens(out, COUNTER) <= sent // 2
    assert history_tokens(out, COUNTER) > sent // 4
    assert out[-1] == messages[-1]
    assert out[1]["role"] == "user"


def test_shrink_history_cuts_a_single_oversized_message() -> None:
    messages = [{"role": "system", "content": "sys"},
                {"role": "user", "content": "A " + "b " * 10_000 + "Z"}]
    out = shrink_history(messages, 500, COUNTER)
    assert history_tokens(out, COUNTER) <= 500
    assert out[-1]["content"].startswith("A") and out[-1]["content"].endswith("Z")
