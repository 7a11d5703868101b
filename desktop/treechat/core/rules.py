"""The rule pipeline that turns new nodes into commit items and tightens old ones: expansion
and the structural rules (`expansion`, `aging`), then, when asked, the one compaction loop
(`compaction`). This module runs them in order and is where callers find them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .aging import CLEARED_PLACEHOLDER, age_tools, aged_files_item, aged_tool_item, clear_idle
from .commit import ContextCommit
from .compaction import (
    CompactionLoop,
    CompactionPlan,
    FoldRun,
    LoopDone,
    advance,
    apply_compaction,
    compaction_level,
    compaction_loop,
    drive,
    fold_saves,
    foldable_items,
    kept_from,
    plan_compaction,
)
from .expansion import capped_text, expand_attach, extend_commit, node_item
from .model import Node
from .rule_config import (
    DEFAULT_PROTECTED_TOOLS,
    CompactionMode,
    CompactionRequest,
    RuleConfig,
)
from .summarize import DeterministicSummarizer, Summarizer
from .tokens import TokenCounter

__all__ = [
    "CLEARED_PLACEHOLDER", "DEFAULT_PROTECTED_TOOLS", "CompactionLoop", "CompactionMode",
    "CompactionPlan", "CompactionRequest", "FoldRun", "LoopDone", "RuleConfig", "advance",
    "age_tools", "aged_files_item", "aged_tool_item", "apply_compaction", "capped_text",
    "clear_idle", "compaction_level", "compaction_loop", "drive", "expand_attach",
    "extend_commit", "fold_saves", "foldable_items", "generate_chain", "kept_from", "node_item",
    "plan_compaction",
]


def generate_chain(
    parent: ContextCommit | None,
    nodes: Sequence[Node],
    *,
    session_id: str,
    head_node_id: str,
    now: float,
    counter: TokenCounter,
    config: RuleConfig,
    pinned: frozenset[str] = frozenset(),
    attachments: Mapping[str, ContextCommit | None] | None = None,
    compaction: CompactionRequest | None = None,
    summarizer: Summarizer | None = None,
    instructions: str = "",
) -> tuple[ContextCommit, ...]:
    """The commits generation produces, oldest first: the one extending `parent` with
    `nodes`, then any compaction commits on top of it (same head). Empty when nothing
    changed."""
    out: list[ContextCommit] = []
    commit = extend_commit(
        parent, nodes, session_id=session_id, head_node_id=head_node_id, now=now,
        counter=counter, config=config, pinned=pinned, attachments=attachments or {},
    )
    if commit is not None:
        out.append(commit)
    current = commit if commit is not None else parent
    if compaction is None or current is None:
        return tuple(out)
    summarizer = summarizer if summarizer is not None else DeterministicSummarizer(counter)
    loop = compaction_loop(current, compaction, now=now, counter=counter, config=config,
                           pinned=pinned, instructions=instructions)
    out.extend(drive(loop, summarizer.summarize))
    return tuple(out)


