"""The extractive summarizer: what the user says of themselves and the constraints they set
survive in plain words, every user message is represented before any gets a second line,
assistant conclusions leading a paragraph are kept, the output is the same bytes for the same
input and stays within its target."""

from __future__ import annotations

from treechat.core.summarize import (
    DeterministicSummarizer,
    SummaryEntry,
    SummaryRequest,
    fence,
    summary_body,
)
from treechat.providers.tokenizer import counter_for

COUNTER = counter_for("gpt-4o")
CHATTER = ("The module provides a number of helper functions that are used by the other "
           "parts of the library when the input has been read in full. ")


def _request(entries: list[tuple[str, str]], target: int = 120) -> SummaryRequest:
    return SummaryRequest(entries=tuple(SummaryEntry(r, t) for r, t in entries),
                          target_tokens=target)


def test_first_person_facts_and_constraints_survive_in_plain_words() -> None:
    entries = [("assistant", CHATTER * 3) for _ in range(6)]
    entries[2] = ("user", "ok thanks. my sister lives in tromso and she tests the app")
    entries[4] = ("user", "sure. never put olives in the examples, whatever the dish.")
    text = DeterministicSummarizer(COUNTER).summarize(_request(entries))
    assert "my sister lives in tromso" in text
    assert "never put olives in the examples" in text
    assert COUNTER.count(text) <= 120


def test_every_user_message_is_represented_before_seconds() -> None:
    users = [("user", f"We keep the {w} notes here. " + CHATTER * 2)
             for w in ("alpha", "bravo", "charlie", "delta", "echo")]
    entries = [e for u in users for e in (u, ("assistant", CHATTER))]
    text = DeterministicSummarizer(COUNTER).summarize(_request(entries, target=160))
    for w in ("alpha", "bravo", "charlie", "delta", "echo"):
        assert f"{w} notes" in text


def test_assistant_conclusions_leading_a_paragraph_are_kept() -> None:
    reply = ("The slowness comes from the hashing step, not the parser.\n\n" + CHATTER * 4)
    entries = [("user", "why is it slow?"), ("assistant", reply)] + [
        ("assistant", CHATTER * 2) for _ in range(4)]
    text = DeterministicSummarizer(COUNTER).summarize(_request(entries, target=80))
    assert "hashing step, not the parser" in text


def test_same_input_same_bytes_and_rollups_reread_their_lines() -> None:
    entries = [e for k in range(3)
               for e in (("user", f"I prefer option {k} for the layout."), ("assistant", CHATTER))]
    s = DeterministicSummarizer(COUNTER)
    first = s.summarize(_request(entries))
    assert first == s.summarize(_request(entries))
    rolled = s.summarize(SummaryRequest(
        entries=(SummaryEntry("summary", fence(first, count=6)),), target_tokens=60, level=1))
    assert "I prefer option" in rolled
    assert summary_body(fence(first)) == first.strip()
