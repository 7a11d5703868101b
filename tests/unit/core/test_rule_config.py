"""The context rules' thresholds and a compaction request: defaults that keep their order
(a normal compaction before an emergency one, each folding to below where it starts), values
that cannot change under a caller, and overrides per engine."""

from __future__ import annotations

import dataclasses

import pytest

from treechat.core.rule_config import (
    DEFAULT_PROTECTED_TOOLS,
    CompactionRequest,
    RuleConfig,
)


def test_the_default_thresholds_keep_their_order() -> None:
    config = RuleConfig()
    assert 0 < config.emergency_target < config.summarize_target < config.summarize_trigger
    assert config.summarize_trigger < config.emergency_trigger <= 1.0
    assert config.min_summary_tokens < config.max_summary_tokens
    assert config.aging_batch_turns is None  # aging waits for the next compaction


def test_the_todo_tools_are_never_aged_away() -> None:
    assert {"todo_create", "todo_update", "todo_list"} <= RuleConfig().protected_tools
    assert RuleConfig().protected_tools is DEFAULT_PROTECTED_TOOLS


def test_a_config_is_fixed_once_made_and_overridden_by_a_copy() -> None:
    config = RuleConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.tail_turns = 9
    tighter = dataclasses.replace(config, summarize_trigger=0.8, protected_tools=frozenset())
    assert (tighter.summarize_trigger, tighter.protected_tools) == (0.8, frozenset())
    assert config.summarize_trigger == 0.90


def test_a_compaction_request_is_automatic_and_uncalibrated_unless_told() -> None:
    request = CompactionRequest(history_budget=12_000)
    assert (request.mode, request.calibration) == ("auto", 1.0)
    assert CompactionRequest(500, mode="manual", calibration=1.2).mode == "manual"
