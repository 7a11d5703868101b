"""Opening the store for use: a file that cannot be opened is refused and left as it was, and
replies that were streaming when the process died come back as interrupted replies."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from tests.support.clock import FakeClock

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.services.recovery import open_and_recover, recover_drafts
from treechat.store.database import Store, StoreCorruptError
from treechat.store.repository import Draft


def user(nid: str, pred: str | None = None) -> Node:
    return Node(id=nid, seq=0, created_at=1.0, session_id="s1", role="user", output=nid,
                predecessor=pred)


def test_a_file_that_is_not_a_store_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "treechat.duckdb"
    path.write_bytes(b"not a database, but the user's bytes" * 100)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(StoreCorruptError):
        open_and_recover(path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_head_follows_a_recovered_reply_only_where_it_still_pointed(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "t.duckdb")
    try:
        store.call(lambda r: r.create_session(Session("s1", "Chat", None, "m", 1.0)))
        store.call(lambda r: r.apply_change("s1", Change((user("u1"),), "u1"), 1.0))
        # One reply was streaming under u1 (HEAD); another under u1 too, but the user had
        # since moved HEAD on to u2: that one is kept as a branch, HEAD stays on u2.
        store.call(lambda r: r.write_draft(Draft("d1", "s1", "u1", "m", "first", 2.0, 3.0, {})))
        clock = FakeClock()
        (first,) = recover_drafts(store, clock=clock, make_id=lambda: "r1")
        assert store.call(lambda r: r.get_session("s1")).head == "r1"  # type: ignore[union-attr]

        store.call(lambda r: r.apply_change("s1", Change((user("u2", "r1"),), "u2"), 4.0))
        store.call(lambda r: r.write_draft(Draft("d2", "s1", "r1", "m", "second", 5.0, 6.0, {})))
        clock.advance(10)
        (second,) = recover_drafts(store, clock=clock, make_id=lambda: "r2")
        session = store.call(lambda r: r.get_session("s1"))
        assert session is not None and session.head == "u2"
        assert (first.output, second.output) == ("first", "second")
        assert second.predecessor == "r1" and second.interrupted
        assert recover_drafts(store, clock=clock) == ()
    finally:
        store.close()


def test_open_and_recover_hands_back_an_open_store_with_nothing_left_over(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.duckdb"
    store = Store.open(path)
    store.call(lambda r: r.create_session(Session("s1", "Chat", None, "m", 1.0)))
    store.call(lambda r: r.write_draft(Draft("d1", "s1", None, "m", "text", 2.0, 3.0, {})))
    store.close()
    clock = FakeClock()
    reopened = open_and_recover(path, clock=clock, make_id=lambda: "rec")
    try:
        assert reopened.call(lambda r: r.drafts()) == ()
        session = reopened.call(lambda r: r.get_session("s1"))
        assert session is not None and (session.head, session.updated_at) == ("rec", clock.now())
    finally:
        reopened.close()
