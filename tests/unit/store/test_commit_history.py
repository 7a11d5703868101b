"""A branch's commit history as listed: for each head, its newest commit's record, read in one
query from a real DuckDB file."""

from __future__ import annotations

from pathlib import Path

from tests.unit.store.test_commits import _build

from treechat.core.model import Session
from treechat.store.commit_history import CommitRecord, newest_commits_for_heads
from treechat.store.database import Store


def test_each_head_lists_its_newest_commit_and_heads_without_one_are_left_out(
    tmp_path: Path,
) -> None:
    store = Store.open(tmp_path / "history.duckdb")
    try:
        store.call(lambda r: r.create_session(Session("s", "t", None, "m", 0.0)))
        _, made = _build(store, 14, budget=2_000)
        heads = sorted({c.head_node_id for c in made})
        records = store.call(lambda r: newest_commits_for_heads(r, [*heads, "no-such-node"]))
        assert sorted(records) == heads
        for head, record in records.items():
            newest = max((c for c in made if c.head_node_id == head), key=lambda c: c.depth)
            assert record == CommitRecord(
                id=newest.id,
                head_node_id=head,
                parent_ids=tuple(newest.parent_ids),
                created_at=newest.created_at,
                total_tokens=newest.total_tokens,
                item_count=len(newest.items),
                depth=newest.depth,
            )
        # A compacted head lists the compaction, the deeper of its two commits.
        compacted = [c for c in made if c.summary.startswith("compaction")]
        assert compacted and records[compacted[-1].head_node_id].id == compacted[-1].id
        assert store.call(lambda r: newest_commits_for_heads(r, [])) == {}
    finally:
        store.close()
