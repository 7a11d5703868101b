"""Which request parameters a model takes, in litellm's own view of it, and the completion
arguments a chat's parameters become."""

from __future__ import annotations

from treechat.providers import llm


def test_a_model_litellm_does_not_know_takes_the_common_three_and_no_reasoning() -> None:
    caps = llm.model_capabilities("openai/some-local-model")
    assert (caps.temperature, caps.top_p, caps.max_tokens) == (True, True, True)
    assert not caps.reasoning


def test_reasoning_models_take_effort_and_thinking_where_litellm_says_so() -> None:
    o3 = llm.model_capabilities("openai/o3-mini")
    assert o3.reasoning_effort and not o3.thinking_budget and not o3.top_p
    claude = llm.model_capabilities("anthropic/claude-sonnet-4-5")
    assert claude.reasoning_effort and claude.thinking_budget


def test_parameters_a_model_does_not_take_are_left_out() -> None:
    assert llm.request_parameters(
        "openai/some-local-model", temperature=0.4, top_p=0.8, reasoning_effort="high",
        thinking_budget=4096,
    ) == {"temperature": 0.4, "top_p": 0.8}
    assert llm.request_parameters("openai/o3-mini", top_p=0.8, reasoning_effort="low") == {
        "reasoning_effort": "low"
    }
    # A thinking budget wins over an effort where the model takes both.
    assert llm.request_parameters(
        "anthropic/claude-sonnet-4-5", reasoning_effort="low", thinking_budget=2048
    ) == {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    assert llm.request_parameters("openai/gpt-4o") == {}
