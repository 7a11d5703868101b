"""Money in the one wording every surface uses: "free" for a model on this computer,
"unpriced" for one with no known price, dollars otherwise, "≈" for an estimate."""

from __future__ import annotations

import pytest

from treechat.core.money import cost_text, estimate_text, money, spend_text


@pytest.mark.parametrize(("usd", "said"), [
    (0.0, "$0"), (0.00001, "< $0.0001"), (0.00012, "$0.0001"), (0.0042, "$0.0042"),
    (0.01, "$0.01"), (1.254, "$1.25"),
])
def test_a_sum_reads_as_people_say_it_never_a_row_of_zeros(usd: float, said: str) -> None:
    assert money(usd) == said
    assert money(usd, priced=False) == "unpriced"


def test_free_requests_are_free_beside_unpriced_ones_never_zero_dollars() -> None:
    assert spend_text(0.0, 3, 2, free=1) == "free + 2 unpriced"
    assert spend_text(0.0, 2, 0, free=2) == "free"
    assert spend_text(0.0, 4, 4) == "unpriced"
    assert spend_text(0.12, 3, 1, free=1) == "$0.12 + 1 unpriced"  # free adds nothing
    assert spend_text(0.12, 2, 0, free=1) == "$0.12"
    assert spend_text(0.0, 0, 0) == ""


def test_one_reply_and_the_next_send_say_the_same_words() -> None:
    assert cost_text(0.0, priced=True, free=True) == "free"
    assert cost_text(0.0, priced=False) == "unpriced"  # not "$0.0000"
    assert cost_text(0.0012, priced=True) == "$0.0012"
    assert cost_text(None, priced=True) == ""
    assert estimate_text(0.0012, 1, 0) == "next ≈ $0.0012"
    assert estimate_text(0.0, 1, 0, free=1) == "next: free"
    assert estimate_text(0.0, 1, 1) == "next: unpriced"
    assert estimate_text(0.0012, 3, 1, free=1) == "next ≈ $0.0012 + 1 unpriced"
    assert estimate_text(0.0, 2, 1, free=1) == "next: free + 1 unpriced"
