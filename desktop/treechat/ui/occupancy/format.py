"""Words and numbers for the occupancy record, shared by the composer ring and the /context
dialog so the two always say the same thing about the same record."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...core.occupancy import Occupancy

CATEGORY_LABELS = {
    "system": "System prompt",
    "tools": "Tool definitions",
    "summaries": "Summaries",
    "messages": "Messages",
    "tool_results": "Tool calls and results",
    "attachments": "Attachments",
    "free": "Free space",
}


@dataclass(frozen=True, slots=True)
class CompactionState:
    """How compacted the current context is, from the head's commit items."""

    summaries: int = 0
    summarized: int = 0
    aged: int = 0
    cleared: int = 0
    items: int = 0
    cut: int = 0  # items sent shortened to the per-item cap (long tool results)
    foldable: int = 0  # live items older than the kept turns that a summary could fold
    foldable_tokens: int = 0
    trigger: float = 0.8  # share of the history budget where auto-compaction starts
    emergency: float = 0.95  # share of the prompt allowance where it is forced

    @classmethod
    def from_states(
        cls, states: Iterable[str], trigger: float = 0.8, emergency: float = 0.95
    ) -> CompactionState:
        counts = {"summary": 0, "summarized": 0, "aged": 0, "cleared": 0}
        total = 0
        for state in states:
            total += 1
            if state in counts:
                counts[state] += 1
        return cls(
            summaries=counts["summary"],
            summarized=counts["summarized"],
            aged=counts["aged"],
            cleared=counts["cleared"],
            items=total,
            trigger=trigger,
            emergency=emergency,
        )

    def describe(self) -> str:
        if self.items == 0:
            return "Nothing to compact yet."
        parts = []
        if self.summaries:
            parts.append(
                f"{self.summaries} summar{'y' if self.summaries == 1 else 'ies'} "
                f"folding {self.summarized} earlier item{'s' if self.summarized != 1 else ''}"
            )
        if self.aged:
            parts.append(f"{self.aged} old tool result{'s' if self.aged != 1 else ''} shortened")
        if self.cleared:
            parts.append(f"{self.cleared} idle tool result{'s' if self.cleared != 1 else ''} "
                         "cleared")
        if self.cut:
            parts.append(f"{self.cut} long item{'s' if self.cut != 1 else ''} cut to the "
                         "per-item cap")
        state = "; ".join(parts) if parts else "Not compacted: every message is sent in full"
        return (
            f"{state}. Compacts automatically at {self.trigger:.0%} of the history budget "
            f"({self.emergency:.0%} forces it)."
        )


def compaction_report(before: CompactionState, after: CompactionState, *,
                      keep_recent: int) -> str:
    """What /compact did, from the commit's items before and after (never from a change of
    counting basis): items folded into a summary, results shortened, or why nothing was."""
    folded = after.summarized - before.summarized
    made = after.summaries - before.summaries
    aged = after.aged - before.aged
    cleared = after.cleared - before.cleared
    parts = []
    if folded > 0 or made > 0:
        parts.append(f"{folded} item{'s' if folded != 1 else ''} folded into "
                     f"{max(made, 1)} summar{'y' if max(made, 1) == 1 else 'ies'}")
    if aged > 0:
        parts.append(f"{aged} old tool result{'s' if aged != 1 else ''} shortened")
    if cleared > 0:
        parts.append(f"{cleared} idle tool result{'s' if cleared != 1 else ''} cleared")
    if parts:
        return "Compacted: " + "; ".join(parts)
    turns = f"{keep_recent} exchange{'s' if keep_recent != 1 else ''}"
    if before.foldable:
        n = before.foldable
        return (f"Nothing to compact yet: the {n} earlier message{'s' if n != 1 else ''} "
                f"({tokens(before.foldable_tokens)} tokens) {'are' if n != 1 else 'is'} too "
                "short to gain from a summary, which would not be smaller; the last "
                f"{turns} are always sent in full")
    if before.summaries:
        return (f"Nothing more to compact yet: older messages are already in summaries and "
                f"the last {turns} are always sent in full")
    return (f"Nothing to compact yet: the last {turns} are always sent in full and there is "
            "nothing older to fold into a summary")


def tokens(n: int) -> str:
    return f"{n:,}"


def short_tokens(n: int) -> str:
    """12.3k, 128k, 1.0M: for tight places."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 10_000:
        return f"{n / 1000:.0f}k"
    if n >= 1000:
        return f"{n / 1000:.1f}k"
    return str(n)


def percent(fraction: float) -> str:
    """Whole percent, without rounding a sliver to 0 % or an almost-full to 100 %."""
    value = fraction * 100
    if 0 < value < 1:
        return "<1%"
    if 99 < value < 100:
        return ">99%"
    return f"{value:.0f}%"


def headline(occ: Occupancy) -> str:
    """"12,345 / 128,000 tokens (10%)" — the number both widgets show."""
    return f"{tokens(occ.total_used)} / {tokens(occ.window)} tokens ({percent(occ.fraction)})"


def basis_text(occ: Occupancy) -> str:
    if occ.basis == "measured":
        return "Measured: what the provider counted for the last request on this branch"
    if occ.reported is not None:
        return (f"Estimated with the local tokenizer: the server reported only "
                f"{tokens(occ.reported)} prompt tokens for the last request, fewer than the "
                "items below need (a server that reuses its cache counts only what it "
                "processed again)")
    return "Estimated with the local tokenizer (no request measured on this exact branch yet)"


def calibration_text(occ: Occupancy) -> str:
    if occ.calibration is None:
        return "Calibration: none yet (needs a measured request on this branch)"
    return (
        f"Calibration ×{occ.calibration:.2f}: the provider counts "
        f"{abs(occ.calibration - 1):.0%} {'more' if occ.calibration >= 1 else 'fewer'} "
        "tokens than the local estimate"
    )


def carried_text(occ: Occupancy) -> str:
    """What every request carries before any message (the figure an empty chat shows):
    "System prompt 32 · tool definitions 447, sent with every request"."""
    parts = dict(occ.breakdown)
    system, tool_specs = parts.get("system", 0), parts.get("tools", 0)
    if not system and not tool_specs:
        return ""
    named = [f"System prompt {tokens(system)}"]
    if tool_specs:
        named.append(f"tool definitions {tokens(tool_specs)}")
    return " · ".join(named) + ", sent with every request"


def pending_text(occ: Occupancy | None, pending: int) -> str:
    """What the box holds (typed text, chips), the same words wherever it is shown:
    "With what you are typing and attaching: +1,234 → 5,678 / 8,192 tokens (69%)"."""
    if occ is None or pending <= 0:
        return ""
    total = occ.total_used + pending
    share = total / occ.window if occ.window > 0 else 1.0
    return (f"With what you are typing and attaching: +{tokens(pending)} → "
            f"{tokens(total)} / {tokens(occ.window)} tokens ({percent(share)})")


def new_chat_pending_text(pending: int, window: int) -> str:
    """The same figure for a chat not started yet (its system prompt comes on top)."""
    share = pending / window if window > 0 else 1.0
    return (f"With what you are typing and attaching: {tokens(pending)} / {tokens(window)} "
            f"tokens ({percent(share)}), before the system prompt of the new chat")


def tooltip(occ: Occupancy, pending: int = 0) -> str:
    carried = carried_text(occ)
    waiting = pending_text(occ, pending)
    lines = [
        f"Context: {headline(occ)}",
        *([waiting] if waiting else []),
        *([carried] if carried else []),
        f"Basis: {occ.basis}" + (
            f" (calibration ×{occ.calibration:.2f})" if occ.calibration is not None else ""
        ) + (f" (the server reported only {tokens(occ.reported)})"
             if occ.reported is not None else ""),
        f"Free: {tokens(dict(occ.breakdown).get('free', max(0, occ.window - occ.total_used)))}",
        "Click for the breakdown (/context)",
    ]
    return "\n".join(lines)


def rows(occ: Occupancy) -> list[tuple[str, str, int, float]]:
    """(key, label, tokens, share of the window) for each category, free space last."""
    out = []
    for key, value in occ.breakdown:
        share = value / occ.window if occ.window > 0 else 0.0
        out.append((key, CATEGORY_LABELS.get(key, key.replace("_", " ").title()), value, share))
    return out
