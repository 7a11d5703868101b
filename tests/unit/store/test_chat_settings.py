"""Chat settings revisions, presets and list marks on a real DuckDB file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from treechat.core.chat_settings import ChatParameters, Preset
from treechat.core.model import Session
from treechat.store import chat_settings as table
from treechat.store.database import Store
from treechat.store.schema import MIGRATIONS


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "treechat.duckdb") as opened:
        opened.call(lambda r: r.create_session(
            Session(id="s1", title="t", head=None, model="", created_at=1.0, updated_at=1.0)))
        yield opened


def revise(store: Store, rid: str, at: float, text: str, **params: object) -> object:
    return store.call(lambda r: table.add_settings_revision(
        r, revision_id=rid, session_id="s1", changed_at=at, instructions=text,
        parameters=ChatParameters(**params), preset=""))  # type: ignore[arg-type]


def test_settings_are_revisions_with_their_time_and_the_latest_is_current(store: Store) -> None:
    assert store.call(lambda r: table.current_settings(r, "s1")).revision == 0
    revise(store, "r1", 10.0, "Be brief.", temperature=0.2)
    revise(store, "r2", 20.0, "Be thorough.", temperature=0.2)
    current = store.call(lambda r: table.current_settings(r, "s1"))
    assert (current.revision, current.instructions, current.changed_at) == (2, "Be thorough.", 20)
    assert current.parameters == ChatParameters(temperature=0.2)
    history = store.call(lambda r: table.settings_history(r, "s1"))
    assert [(h.id, h.instructions) for h in history] == [("r1", "Be brief."),
                                                         ("r2", "Be thorough.")]
    assert store.call(lambda r: table.settings_by_id(r, "r1")).changed_at == 10.0  # type: ignore[union-attr]


def test_setting_the_same_values_again_writes_no_revision(store: Store) -> None:
    revise(store, "r1", 10.0, "Same.")
    again = revise(store, "r2", 20.0, "Same.")
    assert again.id == "r1"  # type: ignore[attr-defined]
    assert len(store.call(lambda r: table.settings_history(r, "s1"))) == 1


def test_user_presets_are_saved_replaced_and_deleted(store: Store) -> None:
    store.call(lambda r: table.save_preset(r, Preset("Mine", system_prompt="a"), 1.0))
    store.call(lambda r: table.save_preset(r, Preset("Mine", system_prompt="b"), 2.0))
    (saved,) = store.call(table.user_presets)
    assert saved.system_prompt == "b"
    assert store.call(lambda r: table.delete_preset(r, "Mine"))
    assert not store.call(lambda r: table.delete_preset(r, "Mine"))
    assert store.call(table.user_presets) == ()


def test_pin_and_favourite_are_set_independently(store: Store) -> None:
    store.call(lambda r: table.set_session_mark(r, "s1", now=1.0, pinned=True))
    store.call(lambda r: table.set_session_mark(r, "s1", now=2.0, favourite=True))
    store.call(lambda r: table.set_session_mark(r, "s1", now=3.0, pinned=False))
    marks = store.call(table.session_marks)["s1"]
    assert (marks.pinned, marks.favourite, marks.changed_at) == (False, True, 3.0)


def test_a_version_1_store_gains_the_settings_tables_and_keeps_its_rows(tmp_path: Path) -> None:
    import duckdb

    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at DOUBLE)")
    (first,) = [m for m in MIGRATIONS if m.version == 1]
    for statement in first.statements:
        con.execute(statement)
    con.execute("INSERT INTO schema_version VALUES (1, 0)")
    con.execute("INSERT INTO settings VALUES ('global_instructions', '\"Be kind.\"')")
    con.close()
    with Store.open(path) as store:
        assert store.call(lambda r: r.get_setting("global_instructions")) == "Be kind."
        assert store.call(lambda r: table.current_settings(r, "any")).revision == 0
        assert store.call(table.session_marks) == {}


def test_a_branched_chat_runs_under_its_source_settings_until_it_sets_its_own(
    store: Store,
) -> None:
    store.call(lambda r: r.create_session(Session(
        id="s2", title="branch", head=None, model="", created_at=2.0, updated_at=2.0,
        forked_from="s1")))
    revise(store, "r1", 10.0, "Source rules.", temperature=0.4)
    inherited = store.call(lambda r: table.current_settings(r, "s2"))
    assert (inherited.id, inherited.instructions) == ("r1", "Source rules.")
    own = store.call(lambda r: table.add_settings_revision(
        r, revision_id="b1", session_id="s2", changed_at=20.0, instructions="Source rules.",
        parameters=ChatParameters(temperature=0.4), preset=""))
    assert (own.id, own.revision, own.session_id) == ("b1", 1, "s2")
    assert store.call(lambda r: table.current_settings(r, "s1")).id == "r1"
