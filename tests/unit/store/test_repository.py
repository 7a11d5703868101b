"""What the repository writes and reads back, on a real DuckDB file: nodes with every kind of
content, sessions found by id, prefix or title, HEAD moves, annotations, drafts, settings, and
transactions that write all or nothing."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from treechat.core.dag import Change, Graph, active_path
from treechat.core.model import Annotation, GraphError, Node, Session
from treechat.store.database import Store
from treechat.store.repository import Draft


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
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "t.duckdb")
    s.call(lambda r: r.create_session(Session("s1", "First", None, "m", 1.0, updated_at=1.0)))
    yield s
    s.close()


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


def test_sessions_are_found_by_id_unique_prefix_or_exact_title(store: Store) -> None:
    store.call(lambda r: r.create_sessions([
        Session("abc123", "Taxes 2026", None, "m", 2.0),
        Session("abd456", "Garden", None, "m", 3.0),
    ]))
    assert store.call(lambda r: r.find_session("abc123")).title == "Taxes 2026"  # type: ignore[union-attr]
    assert store.call(lambda r: r.find_session("abd")).id == "abd456"  # type: ignore[union-attr]
    assert store.call(lambda r: r.find_session("Garden")).id == "abd456"  # type: ignore[union-attr]
    assert store.call(lambda r: r.find_session("zzz")) is None
    with pytest.raises(GraphError, match="more than one chat"):
        store.call(lambda r: r.find_session("ab"))


def test_the_list_is_newest_first_and_hidden_sessions_only_on_request(store: Store) -> None:
    store.call(lambda r: r.create_session(Session("s2", "Second", None, "m", 2.0, updated_at=5.0)))
    store.call(lambda r: r.create_session(Session("s3", "Third", None, "m", 3.0, updated_at=3.0)))
    store.call(lambda r: r.update_session("s3", hidden=True))
    assert [s.id for s in store.call(lambda r: r.list_sessions())] == ["s2", "s1"]
    everything = store.call(lambda r: r.list_sessions(include_hidden=True))
    assert [s.id for s in everything] == ["s2", "s3", "s1"]
    with pytest.raises(ValueError, match="cannot update session fields"):
        store.call(lambda r: r.update_session("s1", head="u1"))


def test_a_finished_draft_becomes_its_node_and_moves_head_at_once(store: Store) -> None:
    store.call(lambda r: r.apply_change("s1", Change((msg("u1", None),), "u1"), 2.0))
    store.call(lambda r: r.write_draft(Draft("d1", "s1", "u1", "m", "part", 2.0, 2.5, {"k": 1})))
    store.call(lambda r: r.write_draft(Draft("d1", "s1", "u1", "m", "partial", 2.0, 3.0, {"k": 1})))
    (draft,) = store.call(lambda r: r.drafts("s1"))
    assert (draft.text, draft.updated_at, draft.metadata) == ("partial", 3.0, {"k": 1})
    reply = msg("a1", "u1", "assistant")
    (stored,) = store.call(lambda r: r.finish_draft("d1", [reply], "s1", "a1", 4.0))
    assert stored.seq == 2
    assert store.call(lambda r: r.drafts()) == ()
    session = store.call(lambda r: r.get_session("s1"))
    assert session is not None and (session.head, session.updated_at) == ("a1", 4.0)


def test_annotations_read_back_in_time_order_and_go_with_a_purge(store: Store) -> None:
    store.call(lambda r: r.append_nodes([msg("u1", None), msg("u2", "u1")]))
    store.call(lambda r: r.add_annotation(Annotation("u2", "pin", 5.0, "s1", "")))
    store.call(lambda r: r.add_annotation(Annotation("u1", "pin", 4.0, "s1", "first")))
    assert [a.node_id for a in store.call(lambda r: r.annotations())] == ["u1", "u2"]
    assert [a.value for a in store.call(lambda r: r.annotations(["u1"]))] == ["first"]
    assert store.call(lambda r: r.purge_nodes(["u2", "u2"])) == 1
    assert [n.id for n in store.call(lambda r: r.session_nodes("s1"))] == ["u1"]
    assert [a.node_id for a in store.call(lambda r: r.annotations())] == ["u1"]
    assert store.call(lambda r: r.purge_nodes([])) == 0


def test_settings_hold_json_values_across_a_reopen_and_answer_a_default(tmp_path: Path) -> None:
    path = tmp_path / "settings.duckdb"
    value = {"presets": [{"name": "terse", "temperature": 0.2}], "on": True}
    store = Store.open(path)
    try:
        store.call(lambda r: r.set_setting("chat", value))
        store.call(lambda r: r.set_setting("model", "openai/gpt-4o"))
        store.call(lambda r: r.set_setting("model", "anthropic/claude-sonnet-4-5"))
        assert store.call(lambda r: r.get_setting("missing", [])) == []
    finally:
        store.close()
    again = Store.open(path)
    try:
        assert again.call(lambda r: r.get_setting("chat")) == value
        assert again.call(lambda r: r.get_setting("model")) == "anthropic/claude-sonnet-4-5"
    finally:
        again.close()


def test_attachment_bytes_are_written_once_and_survive_a_purge_while_a_node_names_them(
    store: Store,
) -> None:
    data = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
    ref = {"sha256": "h1", "name": "a.png", "media_type": "image/png", "size": len(data)}
    a = replace(msg("u1", None), metadata={"attachments": [ref]})
    b = replace(msg("u2", None), metadata={"attachments": [ref]})
    store.call(lambda r: r.append_nodes([a, b]))
    assert store.call(lambda r: r.put_attachment("h1", "image/png", data, 5.0)) is True
    assert store.call(lambda r: r.put_attachment("h1", "image/png", data, 6.0)) is False
    assert store.call(lambda r: r.attachment_count()) == 1
    assert store.call(lambda r: r.attachment_meta("h1")) == ("image/png", len(data), 5.0)
    # one of the two nodes goes: the other still names the bytes, so they stay
    store.call(lambda r: r.purge_nodes(["u1"]))
    assert store.call(lambda r: r.attachment_bytes("h1")) == data
    # the last one goes: nothing names them any more
    store.call(lambda r: r.purge_nodes(["u2"]))
    assert store.call(lambda r: r.attachment_bytes("h1")) is None
    assert store.call(lambda r: r.attachment_meta("h1")) is None


def test_a_sessions_edges_read_without_content_and_nodes_read_within_seqs(
    store: Store,
) -> None:
    tool = Node("t1", 0, 1.0, "s1", "tool", name="read_file", output="x", caller="a1",
                metadata={"tool_call_id": "c1"})
    nodes = [msg("u1", None), msg("a1", "u1", "assistant"), tool, msg("u2", "a1")]
    stored = store.call(lambda r: r.apply_change("s1", Change(tuple(nodes), "u2"), 1.0))
    seq = {n.id: n.seq for n in stored}
    edges = store.call(lambda r: r.session_edges("s1"))
    assert sorted(edges) == sorted([("u1", None, "user", seq["u1"]),
                                    ("a1", "u1", "assistant", seq["a1"]),
                                    ("t1", "a1", "tool", seq["t1"]),  # hangs from its caller
                                    ("u2", "a1", "user", seq["u2"])])
    ids = ["u1", "t1", "u2"]
    within = store.call(lambda r: r.get_nodes(ids, (seq["t1"], seq["u2"])))
    assert [n.id for n in within] == ["t1", "u2"]  # u1 is before the first seq asked for
    assert within[0] == replace(tool, seq=seq["t1"])
    assert [n.id for n in store.call(lambda r: r.get_nodes(ids))] == ids
