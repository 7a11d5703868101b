"""Money in the one wording every surface uses (the window's header, the estimate by Send, a
reply's tooltip, a compare column, the Usage tables, the command line): "free" for a model on
this computer, "unpriced" for one with no known price, else dollars ("$0.0012", "$1.25"),
and "≈" before what is only an estimate."""

from __future__ import annotations

FREE = "free"
UNPRICED = "unpriced"


def money(usd: float, priced: bool = True) -> str:
    """A known sum as people read it: cents for sums of a cent or more, four decimals below,
    "< $0.0001" rather than a row of zeros; "unpriced" when no price is known."""
    if not priced:
        return UNPRICED
    if usd <= 0:
        return "$0"
    if usd < 0.00005:
        return "< $0.0001"
    if usd < 0.01:
        return f"${usd:.4f}"
    return f"${usd:.2f}"


def cost_text(usd: float | None, *, priced: bool, free: bool = False) -> str:
    """One request's (or one reply's) cost: "free", "unpriced" or its sum; "" when nothing
    was measured (`usd` None on a priced model: no request wrote it)."""
    if free:
        return FREE
    if not priced:
        return UNPRICED
    return "" if usd is None else money(usd)


def spend_text(cost_usd: float, requests: int, unpriced: int, free: int = 0) -> str:
    """A group of requests' cost: "free" when all ran on this computer, "unpriced" when none
    had a known price, "free + 2 unpriced" when those are all there is, else the known sum
    and how many had none ("$0.12 + 4 unpriced"); free requests add nothing to the sum and
    are not named beside one. "" for no requests."""
    if requests <= 0:
        return ""
    free = min(max(free, 0), requests)
    unpriced = min(max(unpriced, 0), requests - free)
    priced = requests - free - unpriced
    if priced > 0:
        text = money(cost_usd)
        return f"{text} + {unpriced} {UNPRICED}" if unpriced else text
    if not unpriced:
        return FREE
    return f"{FREE} + {unpriced} {UNPRICED}" if free else UNPRICED


def estimate_text(cost_usd: float, requests: int, unpriced: int, free: int = 0) -> str:
    """The next send's cost before it goes (one request per model asked), in `spend_text`'s
    words: "next ≈ $0.0012", "next ≈ $0.01 + 1 unpriced", "next: free", "next: unpriced"."""
    said = spend_text(cost_usd, requests, unpriced, free)
    if requests - min(max(free, 0), requests) - max(unpriced, 0) > 0:
        return f"next ≈ {said}"
    return f"next: {said}" if said else ""
