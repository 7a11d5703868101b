"""Opening, refusing and writing the DuckDB store, with real files."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import duckdb
import pytest

from treechat.core.dag import Change, Graph, active_path
from treechat.core.model import GraphError, Node, Session
from treechat.store.database import (
    Store,
    StoreCorruptError,
    StoreLockedError,
    StoreTooNewError,
)
from treechat.store.repository import Draft
from treechat.store.schema import SCHEMA_VERSION


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def msg(nid: str, pred: str | None, role: str = "user", session: str = "s1") -> Node:
    return Node(
        id=nid,
        seq=0,
        created_at=1.0,
        session_id=session,
        role=role,  # type: ignore[arg-type]
        output=f"text of {nid}",
        predecessor=pred,
    )


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store.open(tmp_path / "t.duckdb")
    s.call(lambda r: r.create_session(Session("s1", "First", None, "m", 1.0, updated_at=1.0)))
    yield s  # type: ignore[misc]
    s.close()


def test_new_store_is_at_current_schema(store: Store) -> None:
    assert store.call(lambda r: r.schema_version()) == SCHEMA_VERSION


def test_append_assigns_increasing_seq_and_round_trips_content(store: Store) -> None:
    nodes = [msg("u1", None), msg("a1", "u1", "assistant")]
    stored = store.call(lambda r: r.apply_change("s1", Change(tuple(nodes), "a1"), 2.0))
    assert [n.seq for n in stored] == [1, 2]
    more = store.call(lambda r: r.append_nodes([msg("u2", "a1")]))
    assert more[0].seq == 3
    loaded = store.call(lambda r: r.session_nodes("s1"))
    assert [n.output for n in loaded] == ["text of u1", "text of a1", "text of u2"]
    assert store.call(lambda r: r.get_session("s1")).head == "a1"  # type: ignore[union-attr]


def test_bulk_append_keeps_every_field(store: Store) -> None:
    nodes = [msg(f"n{i}", f"n{i - 1}" if i else None) for i in range(100)]
    nodes.append(
        Node(
            id="t",
            seq=0,
            created_at=2.0,
            session_id="s1",
            role="tool",
            name="read_file",
            input={"path": "a.txt", "n": [1, 2]},
            output="x" * 10,
            caller="n99",
            reads=("n1", "n2"),
            metadata={"tool_call_id": "c1", "ok": True},
        )
    )
    store.call(lambda r: r.append_nodes(nodes))
    loaded = {n.id: n for n in store.call(lambda r: r.session_nodes("s1"))}
    assert len(loaded) == 101
    tool = loaded["t"]
    assert tool.input == {"path": "a.txt", "n": [1, 2]}
    assert tool.reads == ("n1", "n2") and tool.caller == "n99" and tool.predecessor is None
    assert tool.metadata == {"tool_call_id": "c1", "ok": True}
    assert [n.seq for n in sorted(loaded.values(), key=lambda n: n.seq)] == list(range(1, 102))


def test_every_kind_of_content_reads_back_as_written(store: Store) -> None:
    texts = ['quotes " and \\ backslashes', "lines\nand\ttabs", "ünïcødé ✓ 😀", "", "null"]
    nodes = [
        Node(id=f"n{i}", seq=0, created_at=float(i), session_id="s1", role="user",
             output=text, predecessor=f"n{i - 1}" if i else None,
             metadata={"nested": {"list": [1, None, "x"]}, "i": i} if i % 2 else {})
        for i, text in enumerate(texts)
    ]
    nodes.append(Node(id="a", seq=0, created_at=9.0, session_id="s1", role="assistant",
                      output={"text": "structured", "parts": [1, 2.5, True, None]},
                      predecessor="n4", name="gpt"))
    nodes.append(Node(id="t", seq=0, created_at=10.0, session_id="s1", role="tool",
                      input="plain arguments", output=None, caller="a"))
    store.call(lambda r: r.append_nodes(nodes))
    loaded = store.call(lambda r: r.session_nodes("s1"))
    assert [replace(n, seq=0) for n in loaded] == nodes
    assert store.call(lambda r: r.get_nodes(["t", "n1"])) == (loaded[1], loaded[-1])


def test_a_session_is_read_in_one_scan_and_a_node_through_the_index(store: Store) -> None:
    # fetching each of a long session's rows through the index is many times slower than
    # scanning the table; a single node is still looked up by its key
    store.call(lambda r: r.create_session(Session("s2", "Other", None, "m", 1.0)))
    store.call(lambda r: r.append_nodes([msg(f"n{i}", f"n{i - 1}" if i else None)
                                         for i in range(200)]))
    store.call(lambda r: r.append_nodes([msg(f"o{i}", None, session="s2") for i in range(50)]))

    def plan(sql: str, value: str) -> str:
        rows = store.call(lambda r: r.con.execute("EXPLAIN ANALYZE " + sql, [value]).fetchall())
        return "\n".join(str(row[-1]) for row in rows)

    assert "Index Scan" not in plan("SELECT id FROM nodes WHERE session_id = ?", "s1")
    assert "Index Scan" in plan("SELECT id FROM nodes WHERE id = ?", "n7")


def test_the_file_itself_refuses_predecessor_and_caller_together(store: Store) -> None:
    with pytest.raises(duckdb.ConstraintException):
        store.call(
            lambda r: r.con.execute(
                "INSERT INTO nodes (id, seq, created_at, session_id, role, predecessor, caller) "
                "VALUES ('x', 99, 0, 's1', 'tool', 'a', 'b')"
            )
        )


def test_set_head_refuses_unknown_node(store: Store) -> None:
    with pytest.raises(GraphError):
        store.call(lambda r: r.set_head("s1", "nope", 1.0))


def test_failed_transaction_writes_nothing(store: Store) -> None:
    def work(r):  # type: ignore[no-untyped-def]
        with r.transaction():
            r.append_nodes([msg("u1", None)])
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        store.call(work)
    assert store.call(lambda r: r.node_count()) == 0
    assert store.call(lambda r: r.append_nodes([msg("u1", None)]))[0].seq == 1


def test_branched_session_sees_shared_history_not_a_copy(store: Store) -> None:
    store.call(
        lambda r: r.apply_change(
            "s1",
            Change(
                (
                    msg("u1", None),
                    msg("a1", "u1", "assistant"),
                    msg("u2", "a1"),
                    msg("a2", "u2", "assistant"),
                ),
                "a2",
            ),
            2.0,
        )
    )
    store.call(lambda r: r.create_session(Session("s2", "Fork", "a1", "m", 3.0, forked_from="s1")))
    store.call(lambda r: r.apply_change("s2", Change((msg("x", "a1", session="s2"),), "x"), 4.0))
    nodes = store.call(lambda r: r.session_nodes("s2"))
    assert [n.id for n in active_path(Graph(nodes), "x")] == ["u1", "a1", "x"]
    assert {n.id for n in nodes} == {"u1", "a1", "x"}
    assert store.call(lambda r: r.node_count()) == 5


def test_drafts_are_recovered_as_interrupted_replies(store: Store) -> None:
    store.call(lambda r: r.apply_change("s1", Change((msg("u1", None),), "u1"), 2.0))
    store.call(lambda r: r.write_draft(Draft("d1", "s1", "u1", "m", "partial", 2.0, 3.0, {})))
    recovered = store.call(lambda r: r.recover_drafts(lambda: "rec", 5.0))
    assert [(n.id, n.output, n.interrupted) for n in recovered] == [("rec", "partial", True)]
    assert store.call(lambda r: r.drafts()) == ()
    assert store.call(lambda r: r.get_session("s1")).head == "rec"  # type: ignore[union-attr]


def test_newer_schema_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "new.duckdb"
    Store.open(path).close()
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO schema_version VALUES (?, 0)", [SCHEMA_VERSION + 1])
    con.close()
    before = digest(path)
    with pytest.raises(StoreTooNewError, match="newer Treechat"):
        Store.open(path)
    assert digest(path) == before


@pytest.mark.parametrize("content", [b"", b"not a database at all" * 100, None])
def test_corrupt_file_is_reported_with_its_path_and_left_untouched(
    tmp_path: Path, content: bytes | None
) -> None:
    path = tmp_path / "bad.duckdb"
    if content is None:  # a real store whose blocks were damaged after the header
        Store.open(path).close()
        raw = bytearray(path.read_bytes())
        raw[4096:] = b"\xff" * (len(raw) - 4096)
        path.write_bytes(bytes(raw))
    else:
        path.write_bytes(content)
    before = digest(path)
    with pytest.raises(StoreCorruptError) as info:
        Store.open(path)
    assert str(path) in str(info.value)
    assert digest(path) == before


def test_a_foreign_duckdb_file_is_not_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "other.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE accounts (x INTEGER)")
    con.close()
    before = digest(path)
    with pytest.raises(StoreCorruptError, match="not a Treechat store"):
        Store.open(path)
    assert digest(path) == before


def test_second_process_gets_a_clear_error_naming_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "held.duckdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys
            from treechat.store.database import Store
            s = Store.open(__import__("pathlib").Path({str(path)!r}))
            print("ready", flush=True)
            sys.stdin.readline()
            s.close()
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreLockedError) as info:
            Store.open(path)
        assert f"process {holder.pid}" in str(info.value)
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        holder.wait(timeout=30)
        holder.stdin.close()
        holder.stdout.close()  # type: ignore[union-attr]
    Store.open(path).close()  # usable again once the holder is gone
