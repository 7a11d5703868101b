"""Thresholds of the context rules (spec §3, §5) and what a caller asks compaction for:
shared by the structural rules, the compaction loop and the engine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DEFAULT_PROTECTED_TOOLS = frozenset({"todo_create", "todo_update", "todo_list", "web_search"})

CompactionMode = Literal["auto", "emergency", "manual"]


@dataclass(frozen=True, slots=True)
class RuleConfig:
    """Thresholds of the rules (spec §3, §5), all overridable per engine."""

    tail_turns: int = 3
    # Aging rewrites the prompt from the first aged item on. By default (None) it waits for
    # the next compaction, which rewrites the prompt from the fold on anyway, so aging costs
    # no cache of its own (measured: it caused most of the lost cache tokens when it ran in
    # batches of 4 turns). A number ages old tool results in batches of that many assistant
    # turns between compactions.
    aging_batch_turns: int | None = None
    max_tool_args_chars: int = 200
    max_tool_result_chars: int = 4000
    protected_tools: frozenset[str] = DEFAULT_PROTECTED_TOOLS
    idle_clear_seconds: float = 3600.0
    anchor_max_tokens: int = 1500
    summarize_trigger: float = 0.90
    summarize_target: float = 0.50
    emergency_trigger: float = 0.95
    emergency_target: float = 0.30
    keep_recent_turns: int = 2
    # The exchanges before the newest are kept in full while they fit this share of the
    # history budget (the newest always is).
    keep_recent_share: float = 0.07
    # A fold's own summary (beside the fact lines it carries apart) takes this share of what
    # it folds: the facts carry what is asked again, so the prose may be short, and the
    # summaries' share then holds the fact lines of more turns before they must be thinned.
    summary_ratio: float = 0.08
    min_summary_tokens: int = 64
    max_summary_tokens: int = 1500
    # Summaries may take this share of the history budget. A large share keeps what is
    # re-sent after a compaction small: the summaries before the fold stay byte-identical (a
    # cached prefix), only the short run of recent items after them is written again.
    # (0.78 while every summary carried its own note; the tokens that freed go partly to
    # more facts kept and partly to smaller requests.)
    summary_share: float = 0.76
    # The facts so far (the user's statements, the tool results' facts, carried in the
    # summaries' facts sections) may take this share of the history budget, within the
    # summaries' share.
    facts_share: float = 0.12
    rollup_ratio: float = 0.5
    # A roll-up brings the summaries down to this fraction of their share: just under it, so
    # each roll-up folds only the newest few summaries and leaves the older ones alone.
    rollup_target: float = 0.97


@dataclass(frozen=True, slots=True)
class CompactionRequest:
    """Ask the pipeline to summarize against a history budget. `calibration` (measured ÷
    estimated) scales our estimate to what the provider will really count."""

    history_budget: int
    mode: CompactionMode = "auto"
    calibration: float = 1.0

