"""The schema as ordered migrations: numbered 1..N without a gap, each a step a file at the
version before can take, so a store made by any earlier release opens at the current version
with its rows intact."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from treechat.core.model import Node
from treechat.store.database import Store
from treechat.store.schema import MIGRATIONS, SCHEMA_VERSION


def test_migrations_are_numbered_from_one_without_a_gap_and_say_what_they_do() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
    assert MIGRATIONS[-1].version == SCHEMA_VERSION
    assert all(m.description.strip() and m.statements for m in MIGRATIONS)


def store_at(path: Path, version: int) -> None:
    """A file as the release whose schema was `version` left it, with one chat in it."""
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at DOUBLE)")
    for migration in MIGRATIONS[:version]:
        for statement in migration.statements:
            con.execute(statement)
        con.execute("INSERT INTO schema_version VALUES (?, 0)", [migration.version])
    con.execute("INSERT INTO sessions (id, title, head, model, created_at, updated_at) "
                "VALUES ('s1', 'Old chat', 'n1', 'm', 1.0, 2.0)")
    con.execute("INSERT INTO nodes (id, seq, created_at, session_id, role, output) "
                "VALUES ('n1', 1, 1.0, 's1', 'user', '\"kept\"')")
    con.close()


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION + 1))
def test_a_store_at_any_earlier_version_opens_at_the_current_one_with_its_rows(
    tmp_path: Path, version: int
) -> None:
    path = tmp_path / f"v{version}.duckdb"
    store_at(path, version)
    store = Store.open(path)
    try:
        assert store.call(lambda r: r.schema_version()) == SCHEMA_VERSION
        (session,) = store.call(lambda r: r.list_sessions())
        assert (session.title, session.head) == ("Old chat", "n1")
        (node,) = store.call(lambda r: r.session_nodes("s1"))
        assert node.output == "kept"
        # and it takes writes: the next node continues the old numbering
        more = Node(id="n2", seq=0, created_at=3.0, session_id="s1", role="assistant",
                    output="new", predecessor="n1")
        assert [n.seq for n in store.call(lambda r: r.append_nodes([more]))] == [2]
    finally:
        store.close()
