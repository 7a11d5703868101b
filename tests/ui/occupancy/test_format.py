"""How occupancy is worded: token counts, whole percents that never round a sliver away,
the compaction state, and what /compact reports for each way it can end."""

from __future__ import annotations

from treechat.ui.occupancy.format import (
    CompactionState,
    compaction_report,
    percent,
    short_tokens,
    tokens,
)


def test_numbers_read_as_people_read_them() -> None:
    assert tokens(128000) == "128,000"
    assert [short_tokens(n) for n in (950, 1234, 12_345, 128_000, 1_000_000)] == [
        "950", "1.2k", "12k", "128k", "1.0M"]
    assert [percent(f) for f in (0.0, 0.004, 0.5, 0.995, 1.0)] == [
        "0%", "<1%", "50%", ">99%", "100%"]


def test_the_state_counts_the_commit_items_by_state() -> None:
    state = CompactionState.from_states(
        ["summary", "summarized", "summarized", "aged", "live"], trigger=0.7)
    assert (state.summaries, state.summarized, state.aged, state.items) == (1, 2, 1, 5)
    text = state.describe()
    assert text.startswith("1 summary folding 2 earlier items; 1 old tool result shortened.")
    assert "at 70% of the history budget" in text
    assert CompactionState().describe() == "Nothing to compact yet."
    plain = CompactionState.from_states(["live", "live"]).describe()
    assert plain.startswith("Not compacted: every message is sent in full.")


def test_compact_reports_what_it_folded_or_why_it_did_nothing() -> None:
    before = CompactionState(items=6)
    after = CompactionState(summaries=1, summarized=4, items=3)
    assert compaction_report(before, after, keep_recent=2) == (
        "Compacted: 4 items folded into 1 summary")
    short = CompactionState(items=4, foldable=1, foldable_tokens=90)
    assert compaction_report(short, short, keep_recent=1).startswith(
        "Nothing to compact yet: the 1 earlier message (90 tokens) is too short")
    done = CompactionState(items=4, summaries=1)
    assert "already in summaries" in compaction_report(done, done, keep_recent=2)
    empty = CompactionState(items=2)
    assert compaction_report(empty, empty, keep_recent=3).endswith(
        "nothing older to fold into a summary")
