"""Opening the store for use: a file that cannot be opened is refused and left as it was, and
replies that were streaming when the process died come back as interrupted replies."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.clock import FakeClock

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.services.store_life.drafts import ReplyJournal
from treechat.services.store_life.recovery import (
    CommandReplies,
    adopt_journals,
    has_journals,
    open_and_recover,
    recover_drafts,
)
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


HOLD_JOURNAL = (
    "import sys\n"
    "from pathlib import Path\n"
    "from treechat.services.store_life.drafts import ReplyJournal\n"
    "journal = ReplyJournal(Path(sys.argv[1]), sys.argv[2])\n"
    "assert journal.claim()\n"
    "print('claimed', flush=True)\n"
    "sys.stdin.read()\n"
)


def test_a_reply_another_process_is_writing_is_left_alone_until_it_dies(
    tmp_path: Path,
) -> None:
    """A command streaming with the store released: its draft row and journal are not
    recovered by whoever opens the store meanwhile; once it is gone, the journal's text is."""
    path = tmp_path / "t.duckdb"
    store = Store.open(path)
    store.call(lambda r: r.create_session(Session("s1", "Chat", None, "m", 1.0)))
    store.call(lambda r: r.apply_change("s1", Change((user("u1"),), "u1"), 1.0))
    store.call(lambda r: r.write_draft(Draft("d1", "s1", "u1", "m", "early", 2.0, 2.0, {})))
    ReplyJournal(path, "d1").write(Draft("d1", "s1", "u1", "m", "early and later", 2.0, 5.0, {}))
    # A journal of a session this store does not hold (a backup restored meanwhile): kept.
    stray = ReplyJournal(path, "d9")
    stray.write(Draft("d9", "gone", None, "m", "elsewhere", 2.0, 5.0, {}))
    writer = subprocess.Popen([sys.executable, "-c", HOLD_JOURNAL, str(path), "d1"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "claimed\n"
        assert recover_drafts(store, clock=FakeClock()) == ()
        assert [d.text for d in store.call(lambda r: r.drafts())] == ["early"]
    finally:
        assert writer.stdin is not None and writer.stdout is not None
        writer.stdin.close()
        writer.wait(timeout=60)
        writer.stdout.close()
    try:
        (reply,) = recover_drafts(store, clock=FakeClock(), make_id=lambda: "r1")
        assert (reply.output, reply.predecessor, reply.interrupted) == (
            "early and later", "u1", True)
        assert store.call(lambda r: r.drafts()) == ()
        assert not ReplyJournal(path, "d1").path.exists()
        assert stray.path.exists()
        assert recover_drafts(store, clock=FakeClock()) == ()  # nothing twice
    finally:
        store.close()


def test_the_window_takes_in_a_commands_journal_but_not_its_own_drafts(tmp_path: Path) -> None:
    """A long-lived holder (the window) adopts what a command left journaled; the draft of a
    reply it is streaming itself stays a draft."""
    path = tmp_path / "t.duckdb"
    store = Store.open(path)
    try:
        store.call(lambda r: r.create_session(Session("s1", "Chat", None, "m", 1.0)))
        store.call(lambda r: r.apply_change("s1", Change((user("u1"),), "u1"), 1.0))
        store.call(lambda r: r.apply_change("s1", Change((user("u2", "u1"),), "u2"), 1.0))
        store.call(lambda r: r.write_draft(Draft("mine", "s1", "u2", "m", "streaming", 2.0,
                                                 2.0, {})))
        store.call(lambda r: r.write_draft(Draft("cli", "s1", "u1", "m", "", 2.0, 2.0, {})))
        ReplyJournal(path, "cli").write(Draft("cli", "s1", "u1", "m", "the command's reply",
                                              2.0, 4.0, {}))
        assert has_journals(store)
        (reply,) = adopt_journals(store, clock=FakeClock(), make_id=lambda: "r1")
        assert (reply.output, reply.predecessor) == ("the command's reply", "u1")
        assert [d.id for d in store.call(lambda r: r.drafts())] == ["mine"]
        assert not has_journals(store)
        assert adopt_journals(store, clock=FakeClock()) == ()
    finally:
        store.close()


@pytest.mark.asyncio
async def test_command_replies_are_adopted_for_the_window_off_its_loop(tmp_path: Path) -> None:
    """The window's way in: `CommandReplies.adopt` takes the journal in on a thread, and
    while the store has let go of its file it looks at nothing."""
    path = tmp_path / "t.duckdb"
    store = Store.open(path)
    try:
        store.call(lambda r: r.create_session(Session("s1", "Chat", None, "m", 1.0)))
        store.call(lambda r: r.apply_change("s1", Change((user("u1"),), "u1"), 1.0))
        ReplyJournal(path, "cli").write(Draft("cli", "s1", "u1", "m", "from the terminal",
                                              2.0, 4.0, {}))
        replies = CommandReplies(store, FakeClock())
        await store.arelease()
        assert await replies.adopt() == ()  # released: the journal waits
        await store.areopen()
        (reply,) = await replies.adopt()
        assert (reply.output, reply.session_id) == ("from the terminal", "s1")
        assert await replies.adopt() == ()
    finally:
        store.close()
