"""The occupancy record both the composer ring and the /context panel read: one number that
always describes now (measured while HEAD has not moved, else estimated), and a per-category
breakdown that always sums to it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .render import RenderedMessage
from .tokens import REPLY_PRIMING_TOKENS, TokenCounter, message_tokens

Basis = Literal["measured", "estimated"]
USED_CATEGORIES = ("system", "tools", "summaries", "messages", "tool_results", "attachments")
BREAKDOWN_KEYS = (*USED_CATEGORIES, "free")

# A calibration outside this range means a broken measurement, not tokenizer drift.
MIN_CALIBRATION = 0.5
MAX_CALIBRATION = 2.0


@dataclass(frozen=True, slots=True)
class MeasuredUsage:
    """What the provider billed for one request's prompt, and what we estimated for it."""

    head: str
    prompt_tokens: int  # total, cache reads and writes included
    cache_read: int = 0
    cache_write: int = 0
    estimated_tokens: int = 0

    @property
    def calibration(self) -> float | None:
        """measured ÷ estimated for the same graph (None without both)."""
        if self.prompt_tokens <= 0 or self.estimated_tokens <= 0:
            return None
        return self.prompt_tokens / self.estimated_tokens


def trigger_calibration(measured: MeasuredUsage | None) -> float:
    """The factor applied to our estimate before comparing it with a threshold. The last
    measurement's drift applies even after HEAD moved: it describes the tokenizer. A count
    far below the estimate is not drift but a partial count (`undercounted`): ignored."""
    if measured is None or measured.calibration is None or undercounted(measured):
        return 1.0
    return min(MAX_CALIBRATION, measured.calibration)


def undercounted(measured: MeasuredUsage) -> bool:
    """Whether a provider's prompt count is too low to be the whole prompt: a server that
    reuses its cache (Ollama, llama.cpp) may report only the tokens it processed again."""
    calibration = measured.calibration
    return calibration is not None and calibration < MIN_CALIBRATION


@dataclass(frozen=True, slots=True)
class Occupancy:
    window: int
    total_used: int
    basis: Basis
    estimated: int
    calibration: float | None
    breakdown: tuple[tuple[str, int], ...]
    head: str | None = None
    # A provider's count that was not taken: lower than the listed items need.
    reported: int | None = None

    @property
    def fraction(self) -> float:
        return self.total_used / self.window if self.window > 0 else 1.0

    def record(self) -> dict[str, Any]:
        """The spec's record: {window, total_used, basis, estimated, calibration}."""
        return {
            "window": self.window,
            "total_used": self.total_used,
            "basis": self.basis,
            "estimated": self.estimated,
            "calibration": self.calibration,
        }

    def breakdown_dict(self) -> dict[str, int]:
        return dict(self.breakdown)

    def as_dict(self) -> dict[str, Any]:
        out = {**self.record(), "head": self.head, "breakdown": self.breakdown_dict()}
        if self.reported is not None:
            out["reported"] = self.reported
        return out


def estimate_categories(
    parts: Iterable[RenderedMessage], tools_tokens: int, counter: TokenCounter,
    sizes: Sequence[int] | None = None,
) -> dict[str, int]:
    """Estimated tokens per category for a rendered request (framing and priming included),
    summing to exactly what `count_messages` + tools would give, plus the images a text
    count cannot see. `sizes`, when given, are the messages' token counts (images included)."""
    out = dict.fromkeys(USED_CATEGORIES, 0)
    out["tools"] = tools_tokens
    any_message = False
    for i, part in enumerate(parts):
        any_message = True
        size = (sizes[i] if sizes is not None
                else message_tokens(part.message, counter.count) + part.unseen_tokens)
        # A message's files count as attachments, the rest of it under its own category.
        out[part.category] += size - part.attachment_tokens
        out["attachments"] += part.attachment_tokens
    if any_message:
        out["messages"] += REPLY_PRIMING_TOKENS
    return out


def apportion(values: Mapping[str, int], total: int) -> dict[str, int]:
    """Scale non-negative `values` to integers summing exactly to `total` (largest
    remainder), so the panel's rows never contradict its headline."""
    keys = list(values)
    base = sum(max(0, values[k]) for k in keys)
    if total <= 0 or not keys:
        return dict.fromkeys(keys, 0)
    if base <= 0:
        out = dict.fromkeys(keys, 0)
        out[keys[0]] = total
        return out
    exact = {k: max(0, values[k]) * total / base for k in keys}
    out = {k: int(v) for k, v in exact.items()}
    short = total - sum(out.values())
    for k in sorted(keys, key=lambda k: (-(exact[k] - out[k]), keys.index(k)))[:short]:
        out[k] += 1
    return out


def build_occupancy(
    *,
    window: int,
    categories: Mapping[str, int],
    head: str | None,
    measured: MeasuredUsage | None = None,
) -> Occupancy:
    """Measured basis only when the measurement belongs to this very head and counts the
    whole prompt; otherwise the local estimate (a partial count is kept as `reported`, never
    shown as the total). Used categories always sum to `total_used`; `free` is what is
    left."""
    estimated = sum(categories.get(k, 0) for k in USED_CATEGORIES)
    used = {k: categories.get(k, 0) for k in USED_CATEGORIES}
    reported = None
    ours = (
        measured is not None
        and head is not None
        and measured.head == head
        and measured.prompt_tokens > 0
    )
    if ours and measured is not None and (
        undercounted(measured) or measured.prompt_tokens < estimated * MIN_CALIBRATION
    ):
        reported = measured.prompt_tokens
        ours = False
    if ours and measured is not None:
        total = measured.prompt_tokens
        basis: Basis = "measured"
        calibration = measured.calibration
        # Files keep the cost their chips showed (an image's is the provider's own rule,
        # not a tokenizer estimate to scale); the drift is spread over the rest.
        files = min(used["attachments"], total)
        rest = apportion({k: v for k, v in used.items() if k != "attachments"}, total - files)
        used = {k: files if k == "attachments" else rest[k] for k in USED_CATEGORIES}
    else:
        total = estimated
        basis = "estimated"
        calibration = None
    free = max(0, window - total)
    breakdown = (*((k, used[k]) for k in USED_CATEGORIES), ("free", free))
    return Occupancy(
        window=window,
        total_used=total,
        basis=basis,
        estimated=estimated,
        calibration=calibration,
        breakdown=breakdown,
        head=head,
        reported=reported,
    )
