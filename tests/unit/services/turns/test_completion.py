"""A turn's last event waits for what the turn changed to be read back whole, and nothing
else waits: through a real DuckDB file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.chat import Events

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.services.turns.changes import TurnChanges
from treechat.services.turns.completion import LastEvent, delivered
from treechat.services.turns.events import NodeAdded, TextDelta, TurnError, TurnFailed, TurnFinished
from treechat.store import usage as ledger
from treechat.store.database import Store


def _node(node_id: str) -> Node:
    return Node(id=node_id, seq=0, created_at=5.0, session_id="s", role="assistant",
                output="hi")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    store = Store.open(tmp_path / "t.duckdb")
    store.call(lambda r: r.create_session(Session("s", "Chat", None, "m", 1.0, updated_at=1.0)))
    store.call(lambda r: r.apply_change("s", Change((_node("a"),), "a"), 5.0))
    store.call(lambda r: ledger.record_usage(
        r, ledger.UsageRecord("row", "s", "m", 5.0, output_tokens=3, head="a")))
    try:
        yield store
    finally:
        store.close()


def finished() -> TurnFinished:
    return TurnFinished("s", _node("a"), None, TurnChanges("s", (_node("a"),), "a", ("row",)))


@pytest.mark.asyncio
async def test_the_last_event_waits_for_the_read_back_and_nothing_else_does(
        store: Store) -> None:
    events = Events()
    last = LastEvent(events)
    last(TextDelta("s", "hi"))
    last(finished())
    assert [type(e) for e in events] == [TextDelta]  # the end waits, the text did not
    await last.deliver(store)
    end = events[-1]
    assert isinstance(end, TurnFinished) and end.changes is not None
    assert end.changes.complete and end.changes.session is not None
    assert end.changes.session.head == "a" and [r.id for r in end.changes.records] == ["row"]
    last.release()
    assert len(events) == 2  # delivered once


@pytest.mark.asyncio
async def test_an_event_after_a_held_one_lets_it_go_first(store: Store) -> None:
    events = Events()
    last = LastEvent(events)
    failed = TurnFailed("s", TurnError("server", "no"), None, TurnChanges("s"))
    last(failed)
    later = NodeAdded("s", _node("b"))
    last(later)
    assert list(events) == [failed, later]  # as they came: the held one was not the last


@pytest.mark.asyncio
async def test_an_end_without_changes_passes_at_once(store: Store) -> None:
    events = Events()
    busy = TurnFailed("s", TurnError("busy", "wait"), None)
    LastEvent(events)(busy)
    assert list(events) == [busy]


@pytest.mark.asyncio
async def test_a_read_that_fails_passes_the_end_on_as_it_came(store: Store) -> None:
    events = Events()
    last = LastEvent(events)
    end = finished()
    last(end)
    store.close()
    await last.deliver(store)
    assert list(events) == [end]
    assert end.changes is not None and not end.changes.complete


@pytest.mark.asyncio
async def test_a_turn_that_raises_still_hands_its_end_on(store: Store) -> None:
    events = Events()
    last = LastEvent(events)

    async def turn() -> None:
        last(finished())
        raise RuntimeError("broke after its end")

    with pytest.raises(RuntimeError):
        await delivered(turn(), last, store)
    assert len(events) == 1 and isinstance(events[0], TurnFinished)
