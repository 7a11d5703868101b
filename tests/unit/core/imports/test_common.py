"""What every importer relies on: times in any unit an export uses, attachment placeholders
named in the text, and a conversation checked and ordered before it is written (duplicates,
empty messages, orphans and cycles reported or spliced out; a HEAD and a title found)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from treechat.core.imports._common import (
    Draft,
    assemble,
    attachment,
    attachment_line,
    parse_time,
)
from treechat.core.model import Role

NOON = datetime(2026, 3, 1, 12, 0, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    "value",
    [NOON, int(NOON * 1e3), int(NOON * 1e6), int(NOON * 1e9), str(NOON),
     "2026-03-01T12:00:00Z", "2026-03-01T13:00:00+01:00", "2026-03-01T12:00:00"],
)
def test_a_moment_reads_the_same_in_every_unit_and_form(value: object) -> None:
    assert parse_time(value) == pytest.approx(NOON)


@pytest.mark.parametrize("value", [None, True, -5, float("nan"), "", "yesterday", [1]])
def test_what_is_not_a_time_is_none(value: object) -> None:
    assert parse_time(value) is None


def test_an_attachment_is_a_placeholder_its_card_names() -> None:
    chart = attachment("chart.png", kind="image", ref="file-123", size_bytes=2048)
    assert chart == {"placeholder": True, "kind": "image", "name": "chart.png",
                     "ref": "file-123", "size_bytes": 2048}
    assert attachment("", ref="file-9")["name"] == "file-9"
    assert "size_bytes" not in attachment("x", size_bytes=True)  # a flag, not a size
    assert attachment_line(chart) == "[image: chart.png]"


def test_a_first_message_that_is_only_a_file_is_titled_by_its_name_not_its_line() -> None:
    drafts = [Draft("u1", None, "user", "[image: chart.png]", created_at=1.0),
              Draft("a1", "u1", "assistant", "A chart.", created_at=2.0),
              Draft("u2", "a1", "user", "Explain the   trend", created_at=3.0)]
    conv, _ = assemble("x", source_id="c", title="", created_at=None, updated_at=None,
                       model="", drafts=drafts, head=None)
    assert conv is not None and conv.title == "Explain the trend"
    drafts[0] = Draft("u1", None, "user", "", created_at=1.0, metadata={
        "attachments": [attachment("chart.png", kind="image"), attachment("data.csv")]})
    conv, _ = assemble("x", source_id="c", title="", created_at=None, updated_at=None,
                       model="", drafts=drafts, head=None)
    assert conv is not None and conv.title == "chart.png, data.csv"  # only files: their names


def d(sid: str, parent: str | None, role: Role = "user", text: str = "", at: float = 0.0,
      metadata: dict[str, Any] | None = None) -> Draft:
    return Draft(sid, parent, role, output=text or f"text {sid}", created_at=at,
                 metadata=metadata or {})


def test_a_conversation_is_checked_spliced_and_ordered() -> None:
    drafts = [
        d("a2", "u1", "assistant", at=30, metadata={"model": "gpt-4o"}),
        d("u1", None, text="How do   I plant   tulips?", at=10),
        d("a1", "u1", "assistant", at=20),
        Draft("empty", "a1", "user", output="   ", created_at=40),  # dropped quietly
        d("u2", "empty", at=50),  # hangs from a1 once the empty one is gone
        d("u1", None, at=60),  # a duplicate id
        d("lost", "nowhere", at=70),  # its parent is not in the file
        d("loop1", "loop2", at=80),
        d("loop2", "loop1", at=90),
    ]
    conv, skipped = assemble("test", source_id="c1", title="", created_at=None,
                             updated_at=None, model="", drafts=drafts, head=None)
    assert conv is not None
    # In time order, never a child before its parent.
    assert [n.source_id for n in conv.nodes] == ["u1", "a1", "a2", "u2"]
    assert {n.source_id: n.parent_source_id for n in conv.nodes}["u2"] == "a1"
    reasons = {s.source_id: s.reason for s in skipped}
    assert set(reasons) == {"u1", "lost", "loop1", "loop2"}
    assert "same id" in reasons["u1"]
    assert "empty" not in reasons  # nothing in it to miss
    # HEAD is the newest tip, the model the last assistant's, the title the first question.
    assert conv.head_source_id == "u2"
    assert conv.model == "gpt-4o"
    assert conv.title == "How do I plant tulips?"
    assert (conv.created_at, conv.updated_at) == (10, 50)


def test_nothing_left_to_import_is_said_once() -> None:
    conv, skipped = assemble("test", source_id="c2", title="Empty", created_at=None,
                             updated_at=None, model="", head=None,
                             drafts=[Draft("x", None, "user", output="")])
    assert conv is None
    assert [(s.reason, s.source_id) for s in skipped] == [
        ("conversation has no messages to import", "c2")
    ]


def test_treechats_own_files_are_kept_exactly_as_written() -> None:
    drafts = [d("u1", None, at=10), Draft("e", "u1", "assistant", output="", created_at=5)]
    conv, skipped = assemble("treechat", source_id="c3", title="  Mine  ", created_at=1.0,
                             updated_at=2.0, model="m", drafts=drafts, head="u1", exact=True)
    assert conv is not None and skipped == []
    assert [n.source_id for n in conv.nodes] == ["u1", "e"]
    assert (conv.title, conv.model, conv.head_source_id) == ("  Mine  ", "m", "u1")
