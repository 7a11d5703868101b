"""Facts so far: what the user stated about themselves, their project and their decisions,
and what tool results found, one line each. Each fold appends the lines of what it folds as
the facts section of its new summary (after the summary's own fence), so the facts read in
order across the summaries and nothing before the new summary changes. A roll-up carries the
sections of the summaries it rolls up verbatim, line for line, into its own; when they
outgrow the facts' budget (or most of the roll-up's own size) it thins the tool facts it
carries evenly, then the statements, and rewrites none. Pure: same items in, same
lines out."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .commit import ContextItem
from .findings import stated_facts
from .summarize import fence_lines
from .tool_facts import result_facts

FACTS_OPEN = "<<<facts-so-far"
FACTS_CLOSE = "facts-so-far>>>"
USER_PREFIX = "- user said: "
MAX_LABEL_CHARS = 48


@dataclass(frozen=True, slots=True)
class FactLine:
    text: str
    stated: bool  # said by the user (kept longer than a tool's)


def facts_section(lines: Sequence[str]) -> str:
    """The section a summary's facts are rendered as (empty for none)."""
    if not lines:
        return ""
    return "\n" + fence_lines(FACTS_OPEN, FACTS_CLOSE, "\n".join(lines))


def section_lines(rendered: str) -> list[str]:
    """The fact lines of a summary's rendered text (none when it has no section)."""
    start = rendered.find(FACTS_OPEN)
    end = rendered.rfind(FACTS_CLOSE)
    if start < 0 or end < start:
        return []
    body = rendered[start + len(FACTS_OPEN):end]
    return [ln for ln in body.strip().splitlines() if ln.strip()]


def facts_so_far(summaries: Iterable[ContextItem]) -> list[str]:
    """Every fact line the summaries carry, in their order."""
    return [ln for it in summaries for ln in section_lines(it.rendered)]


def _label(item: ContextItem) -> str:
    """The tool and what it was asked (a path, a query), short."""
    name = item.tool_name or "tool"
    try:
        args = json.loads(item.tool_args) if item.tool_args else {}
    except ValueError:
        args = {}
    arg = ""
    if isinstance(args, dict):
        arg = next((str(v) for v in args.values() if isinstance(v, str | int | float)), "")
    arg = " ".join(arg.split())
    if len(arg) > MAX_LABEL_CHARS:
        arg = arg[: MAX_LABEL_CHARS - 1] + "…"
    return f"{name} {arg}".strip()


def folded_facts(items: Sequence[ContextItem]) -> list[FactLine]:
    """The facts of items being folded, in their order: a user message's statements, a tool
    result's findings (two to four, read from its whole output when it arrived)."""
    out: list[FactLine] = []
    for it in items:
        if it.attached_from or it.is_summary:
            continue
        if it.role == "tool":
            found = it.facts or result_facts(it.rendered)
            if found:  # one line a call: its label is not repeated for each finding
                out.append(FactLine(f"- {_label(it)}: {'; '.join(found)}", stated=False))
        elif it.role == "user":
            out.extend(FactLine(f"{USER_PREFIX}{s}", stated=True)
                       for s in stated_facts(it.rendered))
    return out


def line_cost(line: str) -> int:
    """About what a fact line takes (three characters a token: ids, paths and numbers
    split finely). Planning and trimming use this one measure, so a roll-up leaves out no
    line its room was planned to hold."""
    return len(line) // 3 + 1


def facts_tokens(items: Sequence[ContextItem]) -> int:
    """About what the facts of `items` will take."""
    return sum(line_cost(f.text) for f in folded_facts(items))


def new_lines(found: Sequence[FactLine], known: Iterable[str]) -> list[str]:
    """The lines of `found` not already carried (case aside), once each."""
    seen = {ln.lower() for ln in known}
    out: list[str] = []
    for f in found:
        if f.text.lower() not in seen:
            seen.add(f.text.lower())
            out.append(f.text)
    return out


def within(lines: Sequence[str], budget: int) -> list[str]:
    """`lines` in their order, tool facts and then statements left out until they fit
    `budget` (by `line_cost`). Each kind is thinned evenly over its lines (every other
    one, then every fourth between them, ...), not from one end: a roll-up carries lines
    of many turns, and any of them may be asked about next."""
    sizes = [line_cost(ln) for ln in lines]
    total = sum(sizes)
    keep = [True] * len(lines)
    for stated in (False, True):
        kind = [k for k, ln in enumerate(lines) if ln.startswith(USER_PREFIX) == stated]
        for j in thinning_order(len(kind)):
            if total <= budget:
                break
            keep[kind[j]] = False
            total -= sizes[kind[j]]
    return [ln for ln, k in zip(lines, keep, strict=True) if k]


def thinning_order(n: int) -> list[int]:
    """0..n-1 in the order that leaves what remains most evenly spread at every step (van
    der Corput order: the middle, then the quarters, then the eighths, ...)."""
    out: list[int] = []
    seen: set[int] = set()
    denominator = 2
    while len(out) < n and denominator <= 2 * n:
        for numerator in range(1, denominator, 2):
            k = numerator * n // denominator
            if k not in seen:
                seen.add(k)
                out.append(k)
        denominator *= 2
    out.extend(k for k in range(n) if k not in seen)
    return out
