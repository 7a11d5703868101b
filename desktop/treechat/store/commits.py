"""Persisting ContextCommits: each stored as a delta against its first parent, with a full
keyframe whenever the delta chain since the last one would outweigh a full copy, so storage
grows linearly with the conversation. Full items reference node content instead of copying it.
Every function takes a `Repository` and runs on the store's worker."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..core.commit import (
    RECORD_DEFAULTS,
    ContextCommit,
    ContextItem,
    apply_delta,
    item_from_record,
    item_record,
    live_positions,
    tool_args_text,
)
from ..core.dag import pinned_set
from ..core.model import Annotation, GraphError, Node
from .repository import NODE_COLUMNS, Repository, node_from_row

COMMIT_COLUMNS = (
    "id, session_id, head_node_id, parent_ids, created_at, rules_version, total_tokens, "
    "keyframe, depth, item_count, summary, meta"
)
# Bounds how many deltas a load replays even when every delta is tiny.
MAX_CHAIN_LENGTH = 2048
PURGED_TEXT = "[content no longer in the store]"


def encode_item(item: ContextItem) -> str:
    """Compact JSON for one item: defaults omitted, node content referenced, not copied."""
    rec = item_record(item)
    if item.text_ref == "node":
        rec["x"] = ""
    if item.args_ref:
        rec["ta"] = ""
    out = {k: v for k, v in rec.items() if k in ("n", "r") or RECORD_DEFAULTS.get(k, object()) != v}
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def decode_item(text: str | Mapping[str, Any]) -> ContextItem:
    rec = json.loads(text) if isinstance(text, str) else dict(text)
    return item_from_record(rec)


def _resolve_refs(repo: Repository, items: list[ContextItem]) -> list[ContextItem]:
    """Fill in the text and args of items that reference their node."""
    ids = {it.source_node_id for it in items if it.text_ref == "node" or it.args_ref}
    if not ids:
        return items
    nodes = {n.id: n for n in repo.get_nodes(ids)}
    out: list[ContextItem] = []
    for it in items:
        if it.text_ref != "node" and not it.args_ref:
            out.append(it)
            continue
        node = nodes.get(it.source_node_id)
        changes: dict[str, Any] = {}
        if it.text_ref == "node":
            changes["rendered"] = node.text if node is not None else PURGED_TEXT
        if it.args_ref:
            changes["tool_args"] = tool_args_text(node.input) if node is not None else "{}"
        out.append(replace(it, **changes))
    return out


# --- writing ----------------------------------------------------------------------------


def commit_exists(repo: Repository, commit_id: str) -> bool:
    row = repo.con.execute("SELECT 1 FROM commits WHERE id = ?", [commit_id]).fetchone()
    return row is not None


def _load_meta(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else dict(value or {})


def save_commit(repo: Repository, commit: ContextCommit) -> bool:
    """Store `commit` (its first parent must already be stored, or it becomes a keyframe).
    Returns False when a commit with this id exists (ids are content hashes)."""
    return save_commits(repo, [commit]) == 1


def save_commits(repo: Repository, commits: Iterable[ContextCommit]) -> int:
    """Store a generated chain, oldest first, in one transaction. Each commit is a delta
    against its first parent, or a keyframe when the deltas since the last keyframe would
    outweigh a full copy. Returns how many were new."""
    chain = list(commits)
    if not chain:
        return 0
    wanted = {c.id for c in chain} | {c.parent_ids[0] for c in chain if c.parent_ids}
    metas = {
        str(r[0]): _load_meta(r[1])
        for r in repo.con.execute(
            "SELECT id, meta FROM commits WHERE list_contains(?, id)", [sorted(wanted)]
        ).fetchall()
    }
    commit_rows: list[tuple[Any, ...]] = []
    item_rows: list[tuple[Any, ...]] = []
    for commit in chain:
        if commit.id in metas:
            continue
        first = commit.parent_ids[0] if commit.parent_ids else ""
        parent_meta = metas.get(first) if first else None
        delta = list(commit.changed)
        keyframe = (
            parent_meta is None
            or int(parent_meta.get("chain_rows", 0)) + len(delta) > len(commit.items)
            or int(parent_meta.get("chain_len", 0)) + 1 >= MAX_CHAIN_LENGTH
        )
        chain_rows = chain_len = 0
        if not keyframe and parent_meta is not None:
            chain_rows = int(parent_meta.get("chain_rows", 0)) + len(delta)
            chain_len = int(parent_meta.get("chain_len", 0)) + 1
        meta = {
            "max_seq": commit.max_seq,
            "aged_through": commit.aged_through,
            "chain_rows": chain_rows,
            "chain_len": chain_len,
            "delta_rows": len(delta),
        }
        metas[commit.id] = meta
        commit_rows.append((
            commit.id, commit.session_id, commit.head_node_id, list(commit.parent_ids),
            commit.created_at, commit.rules_version, commit.total_tokens, keyframe,
            commit.depth, len(commit.items), commit.summary, json.dumps(meta),
        ))
        op = "item" if keyframe else "set"
        positions = range(len(commit.items)) if keyframe else delta
        item_rows.extend((commit.id, p, op, encode_item(commit.items[p])) for p in positions)
    if not commit_rows:
        return 0
    with repo.transaction():
        _insert_rows(repo, "commits", COMMIT_COLUMNS, commit_rows)
        _insert_rows(repo, "commit_items", "commit_id, position, op, item", item_rows)
    return len(commit_rows)


def _insert_rows(repo: Repository, table: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
    # One statement per chunk: DuckDB pays per statement, not per row.
    if not rows:
        return
    width = len(rows[0])
    mark = "(" + ", ".join("?" * width) + ")"
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start : start + _CHUNK]
        repo.con.execute(
            f"INSERT INTO {table} ({columns}) VALUES {', '.join([mark] * len(chunk))}",
            [v for row in chunk for v in row],
        )


_CHUNK = 256


# --- reading ----------------------------------------------------------------------------


def latest_commit_for_head(repo: Repository, head_node_id: str) -> str | None:
    """The newest commit generated for a head (a compaction's commit is deeper than the
    one it compacted)."""
    row = repo.con.execute(
        "SELECT id FROM commits WHERE head_node_id = ? ORDER BY depth DESC, created_at DESC "
        "LIMIT 1",
        [head_node_id],
    ).fetchone()
    return str(row[0]) if row else None


def commits_for_heads(repo: Repository, node_ids: Sequence[str]) -> dict[str, str]:
    """For each of `node_ids` that has a commit, the newest one."""
    if not node_ids:
        return {}
    rows = repo.con.execute(
        "SELECT head_node_id, arg_max(id, depth) FROM commits "
        "WHERE list_contains(?, head_node_id) GROUP BY head_node_id",
        [list(node_ids)],
    ).fetchall()
    return {str(r[0]): str(r[1]) for r in rows}


def load_commit(
    repo: Repository, commit_id: str, known: Mapping[str, ContextCommit] | None = None
) -> ContextCommit | None:
    """Materialize a commit: its keyframe (or a `known` materialized ancestor) plus the
    deltas after it, with node references resolved."""
    known = known or {}
    if commit_id in known:
        return known[commit_id]
    stop = list(known)
    chain = repo.con.execute(
        """
        WITH RECURSIVE chain(id, parent, keyframe, n) AS (
            SELECT id, parent_ids[1], keyframe, 0 FROM commits WHERE id = ?
            UNION ALL
            SELECT c.id, c.parent_ids[1], c.keyframe, chain.n + 1
            FROM commits c JOIN chain ON c.id = chain.parent
            WHERE NOT chain.keyframe AND NOT list_contains(?, chain.id)
        )
        SELECT id, n FROM chain ORDER BY n DESC
        """,
        [commit_id, stop],
    ).fetchall()
    if not chain:
        return None
    ids = [str(r[0]) for r in chain]  # oldest first
    rows = repo.con.execute(
        f"SELECT {COMMIT_COLUMNS} FROM commits WHERE list_contains(?, id)", [ids]
    ).fetchall()
    records = {str(r[0]): r for r in rows}
    item_rows = repo.con.execute(
        "SELECT commit_id, position, item FROM commit_items WHERE list_contains(?, commit_id) "
        "ORDER BY position",
        [ids],
    ).fetchall()
    decoded = [(str(cid), int(pos), decode_item(item)) for cid, pos, item in item_rows]
    # One read of the referenced nodes for the whole chain.
    resolved = _resolve_refs(repo, [it for _, _, it in decoded])
    by_commit: dict[str, list[tuple[int, ContextItem]]] = {}
    for (cid, pos, _), it in zip(decoded, resolved, strict=True):
        by_commit.setdefault(cid, []).append((pos, it))

    base: tuple[ContextItem, ...] = ()
    if ids[0] in known:
        base = known[ids[0]].items
        ids = ids[1:]
    for cid in ids:
        rec = records[cid]
        keyframe = bool(rec[7])
        base = apply_delta(() if keyframe else base, by_commit.get(cid, []), int(rec[9]))
    return _commit_from_row(records[commit_id], base)


def _commit_from_row(row: Sequence[Any], items: Sequence[ContextItem]) -> ContextCommit:
    meta_raw = row[11]
    meta = json.loads(meta_raw) if isinstance(meta_raw, str) else dict(meta_raw or {})
    items = tuple(items)
    live = live_positions(items)
    return ContextCommit(
        id=str(row[0]),
        session_id=str(row[1]),
        head_node_id=str(row[2]),
        parent_ids=tuple(str(p) for p in (row[3] or ())),
        created_at=float(row[4]),
        rules_version=str(row[5]),
        total_tokens=sum(items[p].tokens for p in live),
        items=items,
        summary=str(row[10] or ""),
        max_seq=int(meta.get("max_seq", 0)),
        depth=int(row[8]),
        changed=(),
        live=live,
        aged_through=int(meta.get("aged_through", 0)),
    )


def commit_parents(repo: Repository, commit_id: str) -> tuple[str, ...]:
    row = repo.con.execute("SELECT parent_ids FROM commits WHERE id = ?", [commit_id]).fetchone()
    return tuple(str(p) for p in row[0]) if row else ()


def storage_bytes(repo: Repository) -> int:
    """Logical bytes the commit tables hold (item JSON plus each row's keys and meta)."""
    items = repo.con.execute(
        "SELECT coalesce(sum(strlen(CAST(item AS VARCHAR)) + strlen(commit_id) + 12), 0) "
        "FROM commit_items"
    ).fetchone()
    commits = repo.con.execute(
        "SELECT coalesce(sum(strlen(id) + strlen(session_id) + strlen(head_node_id) "
        "+ strlen(array_to_string(parent_ids, ',')) + strlen(rules_version) "
        "+ strlen(summary) + strlen(CAST(meta AS VARCHAR)) + 40), 0) FROM commits"
    ).fetchone()
    return int(items[0] if items else 0) + int(commits[0] if commits else 0)


# --- graph reads the engine needs -------------------------------------------------------


def walk_to_commit(
    repo: Repository, head: str, limit: int
) -> tuple[str | None, list[Node], bool]:
    """Walk from `head` up its parent edges to the nearest node that has a commit, one
    indexed lookup per step. Returns (that commit's id, the nodes after it oldest first,
    whether the walk ended at a commit or a root rather than at `limit`)."""
    chain: list[Node] = []
    node_id: str | None = head
    while node_id is not None and len(chain) < limit:
        row = repo.con.execute(
            f"SELECT (SELECT arg_max(c.id, c.depth) FROM commits c WHERE c.head_node_id = n.id), "
            f"{_NODE_COLUMNS_N} FROM nodes n WHERE n.id = ?",
            [node_id],
        ).fetchone()
        if row is None:
            raise GraphError(f"unknown node {node_id!r}")
        if row[0] is not None:
            chain.reverse()
            return str(row[0]), chain, True
        node = node_from_row(row[1:])
        chain.append(node)
        node_id = node.parent
    chain.reverse()
    return None, chain, node_id is None


_NODE_COLUMNS_N = ", ".join("n." + c.strip() for c in NODE_COLUMNS.split(","))


def nodes_after(repo: Repository, seq: int, limit: int) -> tuple[Node, ...]:
    """Nodes written after `seq` (any session), oldest first, at most `limit`."""
    rows = repo.con.execute(
        f"SELECT {NODE_COLUMNS} FROM nodes WHERE seq > ? ORDER BY seq LIMIT ?", [seq, limit]
    ).fetchall()
    return tuple(node_from_row(r) for r in rows)


def pinned_nodes(repo: Repository) -> frozenset[str]:
    """Node ids the user has pinned (pin/unpin annotations replayed in order)."""
    rows = repo.con.execute(
        "SELECT node_id, kind, created_at FROM annotations WHERE kind IN ('pin', 'unpin') "
        "ORDER BY created_at"
    ).fetchall()
    return pinned_set(Annotation(node_id=r[0], kind=r[1], created_at=float(r[2])) for r in rows)


def tool_children(repo: Repository, callers: Sequence[str], after_seq: int = 0) -> tuple[Node, ...]:
    """Tool nodes called by any of `callers` written after `after_seq`, in seq order."""
    if not callers:
        return ()
    rows = repo.con.execute(
        f"SELECT {NODE_COLUMNS} FROM nodes WHERE seq > ? AND list_contains(?, caller) "
        "ORDER BY seq",
        [after_seq, list(callers)],
    ).fetchall()
    return tuple(node_from_row(r) for r in rows)
