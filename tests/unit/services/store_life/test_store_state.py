"""The store's health as the window asks after it, on a real DuckDB file: a whole store has
no damage to tell, its background check finishes, and every chat that can be read is
exported to its own Treechat JSON file without overwriting one already in the folder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from treechat.core.model import Session
from treechat.services.store_life.store_state import StoreHealth
from treechat.store.database import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    store = Store.open(tmp_path / "t.duckdb")
    for sid, t in (("a", 1.0), ("b", 2.0), ("c", 3.0)):
        store.call(lambda r, sid=sid, t=t: r.create_session(
            Session(sid, "Notes" if sid != "c" else "Plans", None, "m", t)))
    yield store
    store.close()


def test_a_whole_store_has_no_damage_once_its_check_is_done(store: Store) -> None:
    health = StoreHealth(store)
    assert store.integrity(60) is not None  # the background check's answer
    assert health.check_finished()
    assert health.damage_message() is None


@pytest.mark.asyncio
async def test_every_chat_is_exported_to_a_file_of_its_own(store: Store, tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "Notes.json").write_text("kept", encoding="utf-8")  # already there: not replaced
    done = await StoreHealth(store).export_readable(folder)
    assert done.unreadable == ()
    assert sorted(p.name for p in done.written) == ["Notes (2).json", "Notes (3).json",
                                                    "Plans.json"]
    assert (folder / "Notes.json").read_text(encoding="utf-8") == "kept"
    titles = sorted(json.loads(p.read_text(encoding="utf-8"))["session"]["title"]
                    for p in done.written)
    assert titles == ["Notes", "Notes", "Plans"]
