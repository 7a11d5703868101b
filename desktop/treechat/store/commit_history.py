"""Commit records without their items: what a branch's commit history lists (one query)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .repository import Repository


@dataclass(frozen=True, slots=True)
class CommitRecord:
    id: str
    head_node_id: str
    parent_ids: tuple[str, ...]
    created_at: float
    total_tokens: int
    item_count: int
    depth: int


def newest_commits_for_heads(repo: Repository, head_ids: Sequence[str]) -> dict[str, CommitRecord]:
    """For each head in `head_ids` that has a commit, the newest one (a compaction's commit
    is deeper than the one it compacted)."""
    if not head_ids:
        return {}
    rows = repo.con.execute(
        "SELECT head_node_id, arg_max(id, depth), arg_max(parent_ids, depth), "
        "arg_max(created_at, depth), arg_max(total_tokens, depth), arg_max(item_count, depth), "
        "max(depth) FROM commits WHERE list_contains(?, head_node_id) GROUP BY head_node_id",
        [list(head_ids)],
    ).fetchall()
    return {
        str(r[0]): CommitRecord(
            id=str(r[1]),
            head_node_id=str(r[0]),
            parent_ids=tuple(str(p) for p in (r[2] or ())),
            created_at=float(r[3]),
            total_tokens=int(r[4]),
            item_count=int(r[5]),
            depth=int(r[6]),
        )
        for r in rows
    }
