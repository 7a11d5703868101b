"""The occupancy record: measured only while HEAD has not moved, calibration = measured /
estimated, and a per-category breakdown that always sums to the total."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from treechat.core.occupancy import (
    BREAKDOWN_KEYS,
    USED_CATEGORIES,
    MeasuredUsage,
    apportion,
    build_occupancy,
    estimate_categories,
    trigger_calibration,
)
from treechat.core.render import Composition, render_parts
from treechat.providers.tokenizer import counter_for

CATS = {"system": 1_200, "tools": 800, "summaries": 400, "messages": 5_000,
        "tool_results": 2_500, "attachments": 100}


def _used(occ) -> int:  # type: ignore[no-untyped-def]
    return sum(v for k, v in occ.breakdown if k != "free")


def test_estimated_when_nothing_measured() -> None:
    occ = build_occupancy(window=32_000, categories=CATS, head="h1")
    assert occ.record() == {"window": 32_000, "total_used": 10_000, "basis": "estimated",
                            "estimated": 10_000, "calibration": None}
    assert [k for k, _ in occ.breakdown] == list(BREAKDOWN_KEYS)
    assert occ.breakdown_dict()["free"] == 22_000
    assert _used(occ) == occ.total_used


def test_measured_only_while_head_has_not_moved() -> None:
    m = MeasuredUsage(head="h1", prompt_tokens=11_000, cache_read=9_000, estimated_tokens=10_000)
    same = build_occupancy(window=32_000, categories=CATS, head="h1", measured=m)
    assert same.basis == "measured" and same.total_used == 11_000
    assert same.calibration == 1.1 and same.estimated == 10_000
    assert _used(same) == 11_000
    moved = build_occupancy(window=32_000, categories=CATS, head="h2", measured=m)
    assert moved.basis == "estimated" and moved.total_used == 10_000
    assert moved.calibration is None


def test_trigger_calibration_applies_after_head_moves_and_is_bounded() -> None:
    assert trigger_calibration(None) == 1.0
    assert trigger_calibration(MeasuredUsage("h", 12_000, estimated_tokens=10_000)) == 1.2
    assert trigger_calibration(MeasuredUsage("h", 90_000, estimated_tokens=10_000)) == 2.0
    assert trigger_calibration(MeasuredUsage("h", 0, estimated_tokens=10_000)) == 1.0


@given(st.dictionaries(st.sampled_from(USED_CATEGORIES), st.integers(0, 50_000)),
       st.integers(0, 200_000), st.integers(1, 200_000))
def test_breakdown_always_sums_to_the_total(values: dict[str, int], total: int,
                                            window: int) -> None:
    scaled = apportion({k: values.get(k, 0) for k in USED_CATEGORIES}, total)
    assert sum(scaled.values()) == total
    m = MeasuredUsage("h", total, estimated_tokens=max(1, sum(values.values())))
    occ = build_occupancy(window=window, categories=values, head="h", measured=m)
    assert _used(occ) == occ.total_used
    assert occ.breakdown_dict()["free"] == max(0, window - occ.total_used)


def test_estimate_categories_match_count_messages() -> None:
    counter = counter_for("gpt-4o")
    parts = render_parts(None, Composition(system_prompt="sys", situation="sit", digest="d"))
    cats = estimate_categories(parts, 321, counter)
    assert cats["tools"] == 321
    assert sum(cats.values()) == counter.count_messages([p.message for p in parts]) + 321


def test_a_measured_request_shows_its_files_at_the_cost_their_chips_showed() -> None:
    """The provider counted 10% more than the local estimate; the drift is the tokenizer's,
    so the files (an image's cost is the provider's own rule) keep their counted cost and
    the rest absorbs it. The rows still sum to what was measured."""
    cats = {"system": 100, "tools": 0, "summaries": 0, "messages": 1_000,
            "tool_results": 0, "attachments": 765}
    estimated = sum(cats.values())
    m = MeasuredUsage(head="h", prompt_tokens=round(estimated * 1.1), estimated_tokens=estimated)
    occ = build_occupancy(window=8_192, categories=cats, head="h", measured=m)
    rows = occ.breakdown_dict()
    assert rows["attachments"] == 765
    assert _used(occ) == occ.total_used == m.prompt_tokens
    assert rows["messages"] > 1_000 and rows["system"] > 100
    # measured far below what the items need: not the whole request, so not the total
    small = MeasuredUsage(head="h", prompt_tokens=500, estimated_tokens=estimated)
    tiny = build_occupancy(window=8_192, categories=cats, head="h", measured=small)
    assert tiny.basis == "estimated" and tiny.reported == 500
    assert tiny.breakdown_dict()["attachments"] == 765 and _used(tiny) == estimated


def test_a_count_below_what_the_items_need_is_not_taken_as_the_total() -> None:
    """A server that reuses its cache reports only what it processed again (12 of ~145):
    the figure shown is the estimate, with the server's count said beside it."""
    small = {"system": 30, "tools": 60, "summaries": 0, "messages": 55,
             "tool_results": 0, "attachments": 0}
    low = MeasuredUsage(head="h1", prompt_tokens=12, estimated_tokens=140)
    occ = build_occupancy(window=6_144, categories=small, head="h1", measured=low)
    assert occ.basis == "estimated" and occ.total_used == 145 and occ.reported == 12
    assert dict(occ.breakdown)["tools"] == 60  # the tool definitions keep their size
    assert occ.as_dict()["reported"] == 12
    assert trigger_calibration(low) == 1.0  # not a tokenizer's drift: compaction ignores it
    # a count too low for this head even without its own estimate
    bare = MeasuredUsage(head="h1", prompt_tokens=12)
    assert build_occupancy(window=6_144, categories=small, head="h1",
                           measured=bare).basis == "estimated"
    # an ordinary drift below the estimate is still the provider's measurement
    near = MeasuredUsage(head="h1", prompt_tokens=130, estimated_tokens=145)
    taken = build_occupancy(window=6_144, categories=small, head="h1", measured=near)
    assert taken.basis == "measured" and taken.total_used == 130 and taken.reported is None
