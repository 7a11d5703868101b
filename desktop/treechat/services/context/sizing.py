"""How much each part of a request takes: the tool list in its stable order, the system
prompt and tools, the whole request fitted to the window and sized by category, whether the
history calls for compaction, and what a model that cannot see gets for an image."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ...core.attachments import AttachmentPayload
from ...core.budget import BudgetConfig, FitResult, fit_to_window
from ...core.commit import ContextCommit
from ...core.occupancy import estimate_categories
from ...core.render import Composition, render_parts
from ...core.rules import CompactionMode, RuleConfig
from ...core.tokens import TokenCounter, message_tokens, messages_tokens, tools_tokens


def stable_tools(tools: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    """Tool schemas in a fixed order: a reordered tool list invalidates the cached prefix."""

    def key(tool: Mapping[str, Any]) -> str:
        fn = tool.get("function")
        name = fn.get("name") if isinstance(fn, Mapping) else tool.get("name")
        return str(name or "")

    return tuple(dict(t) for t in sorted(tools, key=key))


def fixed_tokens(
    counter: TokenCounter, composition: Composition, tools: Sequence[Mapping[str, Any]]
) -> tuple[int, int]:
    """(the system prompt's tokens, the tool list's tokens): what every request carries."""
    parts = render_parts(None, composition)
    system = messages_tokens([p.message for p in parts], counter.count) if parts else 0
    return system, tools_tokens(tools, counter.count)


def fit_request(
    counter: TokenCounter, budget: BudgetConfig, commit: ContextCommit | None,
    composition: Composition, window: int, tool_tokens: int, output_reserve: int,
) -> tuple[FitResult, dict[str, int]]:
    """Render the commit, fit the whole request to the window, and size each category
    of what is sent (on a worker thread)."""
    parts = render_parts(commit, composition)
    count = counter.count
    sizes = [message_tokens(p.message, count) + p.unseen_tokens for p in parts]
    fit = fit_to_window(
        [p.message for p in parts], window=window, counter=counter,
        tools_tokens=tool_tokens, max_output_tokens=output_reserve,
        config=budget, sizes=sizes,
    )
    if fit.changed:
        fitted = tuple(
            replace(parts[k], message=fit.messages[i]) for i, k in enumerate(fit.kept)
        )
        return fit, dict(estimate_categories(fitted, tool_tokens, counter))
    return fit, dict(estimate_categories(parts, tool_tokens, counter, sizes))


def categories(
    counter: TokenCounter, commit: ContextCommit | None, composition: Composition,
    tools: Sequence[Mapping[str, Any]],
) -> dict[str, int]:
    """The request's size by category, unfitted (what the ring shows between turns)."""
    parts = render_parts(commit, composition)
    return dict(estimate_categories(parts, tools_tokens(tools, counter.count), counter))


def compaction_mode(
    rules: RuleConfig,
    *,
    commit: ContextCommit | None,
    history_budget: int,
    prompt_allowance: int,
    fixed_tokens: int,
    calibration: float,
    force: bool,
) -> CompactionMode | None:
    """Whether the history calls for compaction now, and how urgently (None: it fits)."""
    if commit is None:
        return None
    if force:
        return "manual"
    prompt = (fixed_tokens + commit.total_tokens) * calibration
    if prompt >= rules.emergency_trigger * prompt_allowance:
        return "emergency"
    if commit.total_tokens * calibration > rules.summarize_trigger * history_budget:
        return "auto"
    # Summaries over their share still roll up, without touching the items.
    return "auto" if commit.summaries() and _summary_tokens(commit) * calibration > (
        rules.summary_share * history_budget) else None


def unseen_image(counter: TokenCounter, payload: AttachmentPayload, name: str
                 ) -> AttachmentPayload:
    """An image's payload for a model that cannot see: a note naming it instead."""
    note = f"[image {name}: not shown, this model cannot see images]"
    blocks = [b for b in payload.blocks if b.get("type") != "image_url"
              and not str(b.get("text", "")).startswith("Image: ")]
    blocks.append({"type": "text", "text": note})
    return AttachmentPayload(
        payload.sha256, tuple(blocks),
        text_tokens=sum(counter.count(str(b["text"])) for b in blocks),
    )


def _summary_tokens(commit: ContextCommit) -> int:
    return sum(i.tokens for i in commit.summaries())
