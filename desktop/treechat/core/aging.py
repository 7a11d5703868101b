"""Tool aging and idle clearing: an old tool result becomes a stub that names its call and
keeps its findings, an aged result untouched for an hour a fixed placeholder. Pure."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from .attachments import stub_text
from .commit import ContextItem, item_tokens
from .rule_config import RuleConfig
from .tokens import TokenCounter
from .tool_facts import tool_facts

# The facts an aged stub quotes (the strongest of those read when the result arrived).
AGED_FACTS = 2

CLEARED_PLACEHOLDER = (
    "[tool result cleared after an hour unused; the recall tool returns it, or run the tool "
    "again]"
)


def _agable(it: ContextItem, pinned: frozenset[str], config: RuleConfig) -> bool:
    return (
        it.role == "tool"
        and it.state == "full"
        and not it.locked
        and it.source_node_id not in pinned
        and it.tool_name not in config.protected_tools
    )


def aged_tool_item(it: ContextItem, counter: TokenCounter, config: RuleConfig) -> ContextItem:
    """Tool call head kept (args cut), result replaced by a stub that names what it stands
    for (the call and its node, so the model can ask `recall` for it again) and keeps its
    findings: the lines that stand out from the rest, not merely the first."""
    text = it.rendered
    lines = len(text.splitlines())
    found = it.facts[:AGED_FACTS] or tool_facts(text, limit=AGED_FACTS) or tuple(
        ln.strip()[:120] for ln in text.splitlines()[:1] if ln.strip())
    call = " ".join(it.tool_args.split())
    if len(call) > 80:
        call = call[:79] + "…"
    stub = (f"[{it.tool_name or 'tool'} output, {lines} lines / {len(text):,} chars, aged; "
            f"{it.tool_name or 'tool'}({call}) is node {it.source_node_id}, recall returns it] "
            + " | ".join(found))
    args = it.tool_args
    if len(args) > config.max_tool_args_chars:
        # Cut args must stay valid JSON: providers parse tool-call arguments.
        args = json.dumps({"arguments_cut": args[: config.max_tool_args_chars]}, ensure_ascii=False)
    return replace(
        it,
        state="aged",
        rendered=stub,
        tool_args=args,
        tokens=item_tokens("tool", stub, counter, tool_name=it.tool_name, tool_args=args),
        reason="tail_window",
        text_ref="",
        args_ref=args == it.tool_args and it.args_ref,
    )


def cleared_item(it: ContextItem, counter: TokenCounter, *, reason: str) -> ContextItem:
    args = it.tool_args
    return replace(
        it,
        state="cleared",
        rendered=CLEARED_PLACEHOLDER,
        tokens=item_tokens("tool", CLEARED_PLACEHOLDER, counter, tool_name=it.tool_name,
                           tool_args=args),
        reason=reason,
        text_ref="",
    )


def age_tools(
    items: list[ContextItem],
    changed: set[int],
    *,
    start: int,
    force: bool,
    pinned: frozenset[str],
    config: RuleConfig,
    counter: TokenCounter,
) -> int:
    """Age tool results older than the tail window (the newest `tail_turns` assistant
    items). Returns the new aging frontier: everything before it is settled."""
    n = len(items)
    seen = 0
    tail_start = -1
    for p in range(n - 1, start - 1, -1):
        it = items[p]
        if it.role == "assistant" and it.live:
            seen += 1
            if seen >= config.tail_turns:
                tail_start = p
                break
    if tail_start <= start:
        return start
    if not force:
        batch = config.aging_batch_turns
        if batch is None:
            return start
        turns = sum(1 for p in range(start, tail_start) if items[p].role == "assistant")
        if turns < batch:
            return start
    for p in range(start, tail_start):
        it = items[p]
        if _agable(it, pinned, config):
            items[p] = aged_tool_item(it, counter, config)
            changed.add(p)
        elif it.files and it.live and not it.locked and it.source_node_id not in pinned:
            items[p] = aged_files_item(it, counter)
            changed.add(p)
    return tail_start


def aged_files_item(it: ContextItem, counter: TokenCounter) -> ContextItem:
    """A message whose files have aged: its text kept, each file a stub naming it."""
    stubs = "\n".join(stub_text(f) for f in it.files)
    rendered = f"{it.rendered}\n\n{stubs}" if it.rendered else stubs
    return replace(
        it,
        state="aged" if it.state == "full" else it.state,
        rendered=rendered,
        files=(),
        tokens=item_tokens(it.role, rendered, counter),
        reason="tail_window",
        text_ref="",
    )


def clear_idle(
    items: list[ContextItem],
    changed: set[int],
    live: Sequence[int],
    *,
    now: float,
    pinned: frozenset[str],
    config: RuleConfig,
    counter: TokenCounter,
) -> int:
    """Aged tool results untouched for `idle_clear_seconds` become a fixed placeholder."""
    cleared = 0
    for p in live:
        if p >= len(items):
            break
        it = items[p]
        if (
            it.state == "aged"
            and it.role == "tool"
            and not it.locked
            and it.source_node_id not in pinned
            and now - it.touched_at >= config.idle_clear_seconds
        ):
            items[p] = cleared_item(it, counter, reason="idle_60min")
            changed.add(p)
            cleared += 1
    return cleared


