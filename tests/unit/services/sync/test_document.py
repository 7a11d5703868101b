"""The shared mutable state merges in any order, any number of times, to the same values;
the later edit of a field wins and a title keeps every edit."""

from __future__ import annotations

import itertools

from treechat.services.sync.document import SyncDocument


def test_updates_merge_in_any_order_and_twice_to_the_same_state() -> None:
    a, b, c = SyncDocument("a"), SyncDocument("b"), SyncDocument("c")
    a.record({"title/s": "from a", "pinned/s": True}, now=10.0)
    b.record({"title/s": "from b"}, now=20.0)
    c.record({"pinned/s": False, "hidden/t": True}, now=15.0)
    a.add_annotations([["n1", "pin", 5.0, "s", ""]])
    updates = [d.update_since(None) for d in (a, b, c)]
    views = []
    for order in itertools.permutations(updates):
        doc = SyncDocument("reader")
        for update in (*order, *order):  # each one twice
            doc.apply(update)
        views.append((doc.view()[0], doc.annotations()))
    assert all(v == views[0] for v in views)
    values, _ = views[0][0], None
    assert values == {"title/s": "from b", "pinned/s": False, "hidden/t": True}
    assert views[0][1] == [["n1", "pin", 5.0, "s", ""]]


def test_a_title_keeps_every_edit_with_its_device() -> None:
    a, b = SyncDocument("a"), SyncDocument("b")
    a.record({"title/s": "first"}, now=1.0)
    b.record({"title/s": "second"}, now=2.0)
    a.record({"title/s": "third"}, now=3.0)
    a.apply(b.update_since(None))
    assert [(e.value, e.device) for e in a.history("title/s")] == [
        ("first", "a"), ("second", "b"), ("third", "a")]
    assert a.view()[0]["title/s"] == "third"


def test_only_fields_changed_since_the_last_look_are_local_edits() -> None:
    doc = SyncDocument("a")
    doc.record({"title/s": "kept"}, now=1.0)
    shown = doc.view()[0]
    assert doc.local_changes({"title/s": "kept", "hidden/s": False}, shown) == {
        "hidden/s": False}
    assert doc.local_changes({"title/s": "renamed"}, shown) == {"title/s": "renamed"}
