"""Projects in the store: made, listed by name, chats moved in and out, a project deleted
without its chats; and sync carries projects, moves (out as well as in) and memory switches
from one store to another."""

from __future__ import annotations

from pathlib import Path

from treechat.core.model import Session
from treechat.store import projects as table
from treechat.store import sync_segments as db
from treechat.store.database import Store
from treechat.store.projects import Project


def _chats(store: Store, *ids: str) -> None:
    for sid in ids:
        store.call(lambda r, s=sid: r.create_session(Session(s, f"chat {s}", None, "m", 1.0)))


def test_a_project_groups_chats_and_its_deletion_keeps_them(tmp_path: Path) -> None:
    with Store.open(tmp_path / "a.duckdb") as store:
        _chats(store, "s1", "s2")
        store.call(lambda r: table.save_project(r, Project("p2", "zeta", created_at=1.0)))
        store.call(lambda r: table.save_project(r, Project("p1", "Alpha", "Be brief.",
                                                           ("notes",), True, 1.0, 1.0)))
        assert [p.name for p in store.call(table.projects)] == ["Alpha", "zeta"]
        store.call(lambda r: table.move_chat(r, "s1", "p1", 2.0))
        store.call(lambda r: table.move_chat(r, "s2", "p1", 2.0))
        assert store.call(table.members) == {"s1": "p1", "s2": "p1"}
        found = store.call(lambda r: table.project_of(r, "s1"))
        assert found is not None and (found.instructions, found.knowledge) == ("Be brief.",
                                                                              ("notes",))
        store.call(lambda r: table.move_chat(r, "s2", None, 3.0))
        assert store.call(table.members) == {"s1": "p1"}
        assert store.call(lambda r: table.project_of(r, "s2")) is None
        assert store.call(lambda r: table.delete_project(r, "p1")) is True
        assert store.call(table.members) == {}
        assert {s.id for s in store.call(lambda r: r.list_sessions())} == {"s1", "s2"}


def test_sync_carries_projects_moves_and_memory(tmp_path: Path) -> None:
    with Store.open(tmp_path / "a.duckdb") as a, Store.open(tmp_path / "b.duckdb") as b:
        for store in (a, b):
            _chats(store, "s1", "s2")
        a.call(lambda r: table.save_project(r, Project("p1", "Trip", "Plan it.", ("maps",),
                                                       False, 1.0, 1.0)))
        a.call(lambda r: table.move_chat(r, "s1", "p1", 2.0))
        a.call(lambda r: table.set_chat_memory(r, "s2", True, 2.0))
        state = a.call(db.mutable_state)
        written = b.call(lambda r: db.apply_state(r, state, now=3.0, revision_id=lambda: "x"))
        assert {"project/p1", "inproject/s1", "memory/s2"} <= set(written)
        (trip,) = b.call(table.projects)
        assert (trip.name, trip.instructions, trip.knowledge) == ("Trip", "Plan it.",
                                                                  ("maps",))
        assert b.call(table.members) == {"s1": "p1"}
        assert b.call(table.chat_memory) == {"s2": True}
        # taken out on one device: out on the other too
        a.call(lambda r: table.move_chat(r, "s1", None, 4.0))
        b.call(lambda r: db.apply_state(r, a.call(db.mutable_state), now=5.0,
                                        revision_id=lambda: "y"))
        assert b.call(table.members) == {}
        # applying the same state again writes nothing
        again = b.call(lambda r: db.apply_state(r, a.call(db.mutable_state), now=6.0,
                                                revision_id=lambda: "z"))
        assert again == []
