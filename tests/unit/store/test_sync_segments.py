"""Records leave a store once and come into another by set union: what is already there is
skipped, nodes from elsewhere keep their content and get this file's own order, and a run of
received nodes whose ends were purged is sent again rather than lost."""

from __future__ import annotations

import json
from pathlib import Path

from treechat.core.model import Node, Session
from treechat.store import sync_segments as db
from treechat.store.database import Store


def chat(store: Store, sid: str, texts: list[str], t0: float) -> list[str]:
    def write(repo: db.Repository) -> list[str]:
        repo.create_session(Session(id=sid, title=sid, head=None, model="", created_at=t0))
        nodes, parent = [], None
        for i, text in enumerate(texts):
            nodes.append(Node(id=f"{sid}-{i}", seq=0, created_at=t0 + i, session_id=sid,
                              role="user" if i % 2 == 0 else "assistant", output=text,
                              predecessor=parent, metadata={"i": i}))
            parent = nodes[-1].id
        repo.append_nodes(nodes)
        return [n.id for n in nodes]

    return store.call(write)


def test_records_travel_once_and_merge_by_set_union(tmp_path: Path) -> None:
    with Store.open(tmp_path / "a.duckdb") as a, Store.open(tmp_path / "b.duckdb") as b:
        ids = chat(a, "s", ["hello", "hi", "how are you"], 100.0)
        (records,) = a.call(lambda r: db.unsent_records(r, 2))[:1]
        pieces = a.call(lambda r: db.unsent_records(r, 2))
        assert [p.node_count for p in pieces] == [2, 1]
        by_size = a.call(lambda r: db.unsent_records(r, 100, bytes_per_chunk=205))
        assert [p.node_count for p in by_size] == [1, 1, 1]  # about 200 bytes a node
        assert [s[0] for s in records.sessions] == ["s"]
        for piece in pieces:
            a.call(lambda r, p=piece: db.mark_known(r, p, 1.0))
        assert a.call(lambda r: db.unsent_records(r, 2)) == []  # nothing goes twice
        chat(b, "t", ["local only"], 50.0)
        merged = b.call(lambda r: db.merge_records(r, [*pieces, *pieces], 2.0))
        assert (merged.nodes, merged.sessions) == (3, ("s",))
        again = b.call(lambda r: db.merge_records(r, pieces, 3.0))
        assert again.nodes == 0
        rows = b.call(lambda r: r.con.execute(
            "SELECT id, seq, output, metadata FROM nodes ORDER BY seq").fetchall())
        assert [r[0] for r in rows] == ["t-0", *ids]  # appended after what was here
        assert [r[1] for r in rows] == [1, 2, 3, 4]  # one seq each, none skipped
        assert [json.loads(r[2]) for r in rows[1:]] == ["hello", "hi", "how are you"]
        assert [json.loads(r[3]) for r in rows[1:]] == [{"i": 0}, {"i": 1}, {"i": 2}]
        # what came in is not sent back; what was written here is
        unsent = b.call(lambda r: db.unsent_records(r, 100))
        assert [json.loads(p.nodes)[0][0] for p in unsent] == ["t-0"]
        # a purge of the newest nodes that came in: their seqs may be given again, so the
        # run is no longer trusted and what is left of it is sent again (harmless)
        b.call(lambda r: r.purge_nodes([ids[-1]]))
        resent = {n[0] for p in b.call(lambda r: db.unsent_records(r, 100))
                  for n in json.loads(p.nodes)}
        assert resent == {"t-0", ids[0], ids[1]}


def test_state_is_read_flat_and_written_back_only_where_it_differs(tmp_path: Path) -> None:
    with Store.open(tmp_path / "a.duckdb") as a:
        ids = chat(a, "s", ["one", "two"], 100.0)
        state = a.call(db.mutable_state)
        assert state == {"title/s": "s", "model/s": "", "hidden/s": False}
        written = a.call(lambda r: db.apply_state(
            r, {"title/s": "renamed", "hidden/s": False, "head/s": ids[1], "pinned/s": True,
                "title/unknown": "a chat not here yet", "head/s2": "nowhere"},
            now=5.0, revision_id=lambda: "rev"))
        assert sorted(written) == ["head/s", "pinned/s", "title/s"]
        after = a.call(db.mutable_state)
        assert (after["title/s"], after["head/s"], after["pinned/s"]) == ("renamed", ids[1],
                                                                          True)
