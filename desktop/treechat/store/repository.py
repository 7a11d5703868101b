"""Reads and writes of the conversation graph. Runs only on the store's worker thread.

Nodes are append-only: there is no UPDATE of a node, and DELETE only in an explicit purge.
`seq` is assigned here, in append order, so it is strictly increasing across the file.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import duckdb

from ..core.dag import Change
from ..core.model import Annotation, GraphError, Node, Session

NODE_COLUMNS = (
    "id, seq, created_at, session_id, role, name, input, output, "
    "predecessor, caller, reads, metadata"
)
JSON_COLUMNS = (6, 7, 11)  # input, output, metadata in NODE_COLUMNS
SESSION_COLUMNS = "id, title, head, model, created_at, updated_at, forked_from, hidden"

# Every attachment hash some node's metadata still lists.
_NAMED_ATTACHMENTS = (
    "SELECT DISTINCT unnest(json_extract_string(metadata, '$.attachments[*].sha256')) "
    "FROM nodes WHERE json_exists(metadata, '$.attachments')"
)

# Attachment bytes are read this many at a time.
_BLOB_PIECE = 1 << 20

# Rows whose JSON is parsed in one go when many are read (a 10,000-message session).
JSON_SLICE = 256

# Above this many rows a write goes through one bulk statement instead of row inserts.
BULK_THRESHOLD = 32


@dataclass(frozen=True, slots=True)
class Draft:
    """A reply in flight: the text streamed so far, flushed about once a second."""

    id: str
    session_id: str
    parent_id: str | None
    model: str
    text: str
    started_at: float
    updated_at: float
    metadata: dict[str, Any]


def _dump(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def _load(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, str):
        return json.loads(value)
    return value


def nodes_from_rows(rows: Sequence[Sequence[Any]]) -> list[Node]:
    """`node_from_row` for many rows: each JSON column is parsed once for all of them, a
    fraction of the cost of a parse per value (a 2,000-message session opens on this)."""
    try:
        inputs, outputs, metadata = (_load_all(rows, c) for c in JSON_COLUMNS)
    except TypeError:  # a value that is not JSON text: decode row by row
        return [node_from_row(r) for r in rows]
    return [_node(*decoded) for decoded in zip(rows, inputs, outputs, metadata, strict=True)]


def _load_all(rows: Sequence[Sequence[Any]], column: int) -> list[Any]:
    # every value is JSON text (the column's type guarantees it) or NULL; parsed a slice at
    # a time, as one parse holds the interpreter lock throughout and the window would wait
    out: list[Any] = []
    for at in range(0, len(rows), JSON_SLICE):
        out.extend(json.loads("[" + ",".join("null" if r[column] is None else r[column]
                                             for r in rows[at:at + JSON_SLICE]) + "]"))
    return out


def node_from_row(row: Sequence[Any]) -> Node:
    return _node(row, *(_load(row[c]) for c in JSON_COLUMNS))


def _node(row: Sequence[Any], node_input: Any, node_output: Any, metadata: Any) -> Node:
    """A node from its row, the JSON columns given decoded."""
    return Node(
        id=row[0],
        seq=int(row[1]),
        created_at=float(row[2]),
        session_id=row[3],
        role=row[4],
        name=row[5] or "",
        input=node_input,
        output=node_output,
        predecessor=row[8],
        caller=row[9],
        reads=tuple(row[10] or ()),
        metadata=metadata or {},
    )


def session_from_row(row: Sequence[Any]) -> Session:
    return Session(
        id=row[0],
        title=row[1],
        head=row[2],
        model=row[3] or "",
        created_at=float(row[4]),
        updated_at=float(row[5]),
        forked_from=row[6],
        hidden=bool(row[7]),
    )


class Repository:
    """Typed access to the tables. Not thread-safe: the store's worker is its only user."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        row = con.execute("SELECT coalesce(max(seq), 0) FROM nodes").fetchone()
        self._last_seq = int(row[0]) if row else 0
        self._in_tx = False

    def close(self) -> None:
        self.con.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One all-or-nothing unit; nested use joins the outer transaction."""
        if self._in_tx:
            yield
            return
        saved_seq = self._last_seq
        self.con.execute("BEGIN TRANSACTION")
        self._in_tx = True
        try:
            yield
            self.con.execute("COMMIT")
        except BaseException:
            self._last_seq = saved_seq
            # DuckDB already ended the transaction when its COMMIT failed (a full disk): the
            # error to report is that one, not "no transaction is active".
            with contextlib.suppress(duckdb.TransactionException):
                self.con.execute("ROLLBACK")
            raise
        finally:
            self._in_tx = False

    # --- nodes -----------------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        return self._last_seq

    def append_nodes(self, nodes: Sequence[Node]) -> tuple[Node, ...]:
        """Append nodes in order, assigning each the next `seq`. Returns them as stored."""
        if not nodes:
            return ()
        stored = tuple(replace(n, seq=self._last_seq + 1 + i) for i, n in enumerate(nodes))
        rows = [
            (
                n.id,
                n.seq,
                n.created_at,
                n.session_id,
                n.role,
                n.name,
                _dump(n.input),
                _dump(n.output),
                n.predecessor,
                n.caller,
                list(n.reads),
                json.dumps(n.metadata, ensure_ascii=False),
            )
            for n in stored
        ]
        self._insert("nodes", NODE_COLUMNS, rows)
        self._last_seq = stored[-1].seq
        return stored

    def advance_seq(self, last: int) -> None:
        """After nodes were appended by one statement (a sync's merge): `last` is the `seq`
        of the last of them."""
        self._last_seq = max(self._last_seq, last)

    def _insert(self, table: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
        width = len(rows[0])
        if len(rows) < BULK_THRESHOLD:
            marks = ", ".join("?" * width)
            self.con.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)
            return
        bulk_insert(self.con, table, columns, rows)

    def get_node(self, node_id: str) -> Node | None:
        row = self.con.execute(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE id = ?", [node_id]
        ).fetchone()
        return node_from_row(row) if row else None

    def get_nodes(self, node_ids: Iterable[str], seqs: tuple[int, int] | None = None
                  ) -> tuple[Node, ...]:
        """The nodes by id; `seqs` bounds their seq (first, last), which lets the scan skip
        the rest of the file (the end of a long session is a few blocks of it)."""
        ids = list(dict.fromkeys(node_ids))
        if not ids:
            return ()
        low, high = seqs if seqs is not None else (-(2**62), 2**62)
        rows = self.con.execute(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE seq BETWEEN ? AND ? "
            "AND id IN (SELECT unnest(?)) ORDER BY seq", [low, high, ids]
        ).fetchall()
        return tuple(nodes_from_rows(rows))

    def session_nodes(self, session_id: str, session: Session | None = None) -> tuple[Node, ...]:
        """Every node the session can see: those written in it, the shared history it was
        branched from (ancestors in other sessions) and tool calls hanging off them.
        `session` is the session's record when the caller has just read it."""
        rows = self.con.execute(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE session_id = ? ORDER BY seq", [session_id]
        ).fetchall()
        by_id = {n.id: n for n in nodes_from_rows(rows)}
        if session is None:
            session = self.get_session(session_id)
        if session is not None and session.head is not None and session.head not in by_id:
            head = self.get_node(session.head)
            if head is not None:
                by_id[head.id] = head
        loaded_sessions = {session_id}
        while True:
            missing = {p for n in by_id.values() if (p := n.parent) is not None and p not in by_id}
            if not missing:
                break
            owners = self.con.execute(
                "SELECT DISTINCT session_id FROM nodes WHERE id IN (SELECT unnest(?))",
                [sorted(missing)],
            ).fetchall()
            new_owners = [o[0] for o in owners if o[0] not in loaded_sessions]
            if not new_owners:
                break  # a dangling parent (purged): the node becomes a root
            for owner in new_owners:
                loaded_sessions.add(owner)
                foreign = {
                    n.id: n
                    for n in nodes_from_rows(self.con.execute(
                        f"SELECT {NODE_COLUMNS} FROM nodes WHERE session_id = ?", [owner]
                    ).fetchall())
                }
                _add_ancestors_from(by_id, foreign)
        return tuple(sorted(by_id.values(), key=lambda n: n.seq))

    def session_edges(self, session_id: str) -> list[tuple[str, str | None, str, int]]:
        """(id, parent, role, seq) of every node written in the session, without content:
        enough to walk a long session's path and read only its end in full."""
        return self.con.execute(
            "SELECT id, coalesce(predecessor, caller), role, seq FROM nodes "
            "WHERE session_id = ?",
            [session_id],
        ).fetchall()

    def all_node_ids(self) -> set[str]:
        return {r[0] for r in self.con.execute("SELECT id FROM nodes").fetchall()}

    def node_counts_by_session(self) -> dict[str, int]:
        rows = self.con.execute("SELECT session_id, count(*) FROM nodes GROUP BY 1").fetchall()
        return {r[0]: int(r[1]) for r in rows}

    def node_count(self) -> int:
        row = self.con.execute("SELECT count(*) FROM nodes").fetchone()
        return int(row[0]) if row else 0

    def purge_nodes(self, node_ids: Iterable[str]) -> int:
        """The one deletion of nodes: an explicit, user-requested purge of unreachable ones."""
        ids = sorted(set(node_ids))
        if not ids:
            return 0
        with self.transaction():
            self.con.execute("DELETE FROM annotations WHERE list_contains(?, node_id)", [ids])
            self.con.execute("DELETE FROM nodes WHERE list_contains(?, id)", [ids])
            # Bytes go only when no node left in the file names them (a fork shares them).
            self.con.execute(
                f"DELETE FROM attachments WHERE sha256 NOT IN ({_NAMED_ATTACHMENTS})"
            )
        return len(ids)

    # --- attachments -----------------------------------------------------------------

    def put_attachment(self, sha256: str, media_type: str, data: bytes, created_at: float) -> bool:
        """Store bytes under their hash once; True when they were new. Content-addressed:
        a second put of the same bytes writes nothing."""
        row = self.con.execute(
            "SELECT 1 FROM attachments WHERE sha256 = ?", [sha256]
        ).fetchone()
        if row is not None:
            return False
        self.con.execute(
            "INSERT INTO attachments (sha256, media_type, size, bytes, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [sha256, media_type, len(data), data, created_at],
        )
        return True

    def attachment_bytes(self, sha256: str) -> bytes | None:
        """The stored bytes, read in pieces: DuckDB builds a result value holding the GIL, and
        one of megabytes stalls the GUI thread for a frame or more."""
        row = self.con.execute(
            "SELECT size FROM attachments WHERE sha256 = ?", [sha256]
        ).fetchone()
        if row is None:
            return None
        size = int(row[0])
        parts: list[bytes] = []
        for i in range(0, max(size, 1), _BLOB_PIECE):
            piece = self.con.execute(
                "SELECT array_slice(bytes, ?, ?) FROM attachments WHERE sha256 = ?",
                [i + 1, i + _BLOB_PIECE, sha256],
            ).fetchone()
            parts.append(bytes(piece[0]) if piece is not None and piece[0] is not None else b"")
        return b"".join(parts)

    def attachment_meta(self, sha256: str) -> tuple[str, int, float] | None:
        """(media type, size, created at) of stored bytes, without reading them."""
        row = self.con.execute(
            "SELECT media_type, size, created_at FROM attachments WHERE sha256 = ?", [sha256]
        ).fetchone()
        return None if row is None else (str(row[0]), int(row[1]), float(row[2]))

    def attachment_count(self) -> int:
        row = self.con.execute("SELECT count(*) FROM attachments").fetchone()
        return int(row[0]) if row else 0

    # --- sessions --------------------------------------------------------------------

    def create_session(self, session: Session) -> Session:
        self.con.execute(
            f"INSERT INTO sessions ({SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                session.id,
                session.title,
                session.head,
                session.model,
                session.created_at,
                session.updated_at or session.created_at,
                session.forked_from,
                session.hidden,
            ],
        )
        return session

    def create_sessions(self, sessions: Sequence[Session]) -> None:
        rows = [
            (
                s.id,
                s.title,
                s.head,
                s.model,
                s.created_at,
                s.updated_at or s.created_at,
                s.forked_from,
                s.hidden,
            )
            for s in sessions
        ]
        if rows:
            self._insert("sessions", SESSION_COLUMNS, rows)

    def get_session(self, session_id: str) -> Session | None:
        row = self.con.execute(
            f"SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?", [session_id]
        ).fetchone()
        return session_from_row(row) if row else None

    def find_session(self, prefix: str) -> Session | None:
        """A session by id, unique id prefix, or exact title."""
        exact = self.get_session(prefix)
        if exact is not None:
            return exact
        rows = self.con.execute(
            f"SELECT {SESSION_COLUMNS} FROM sessions WHERE starts_with(id, ?) OR title = ? "
            "ORDER BY updated_at DESC LIMIT 2",
            [prefix, prefix],
        ).fetchall()
        if len(rows) == 1:
            return session_from_row(rows[0])
        if len(rows) > 1:
            raise GraphError(f"{prefix!r} matches more than one chat; give more of the id")
        return None

    def list_sessions(self, include_hidden: bool = False) -> tuple[Session, ...]:
        where = "" if include_hidden else "WHERE NOT hidden"
        rows = self.con.execute(
            f"SELECT {SESSION_COLUMNS} FROM sessions {where} ORDER BY updated_at DESC, id"
        ).fetchall()
        return tuple(session_from_row(r) for r in rows)

    def set_head(
        self, session_id: str, head: str | None, now: float, *, known: bool = False
    ) -> None:
        """Move HEAD; `known` skips the existence check for a node just appended."""
        if head is not None and not known and self.get_node(head) is None:
            raise GraphError(f"cannot move HEAD to unknown node {head!r}")
        self.con.execute(
            "UPDATE sessions SET head = ?, updated_at = ? WHERE id = ?", [head, now, session_id]
        )

    def update_session(self, session_id: str, **fields: Any) -> None:
        allowed = {"title", "model", "hidden", "updated_at"}
        bad = set(fields) - allowed
        if bad:
            raise ValueError(f"cannot update session fields {sorted(bad)}")
        for key, value in fields.items():
            self.con.execute(f"UPDATE sessions SET {key} = ? WHERE id = ?", [value, session_id])

    def apply_change(self, session_id: str, change: Change, now: float) -> tuple[Node, ...]:
        """Append an operation's nodes and move HEAD, all or nothing."""
        with self.transaction():
            stored = self.append_nodes(change.nodes)
            appended = any(n.id == change.head for n in stored)
            self.set_head(session_id, change.head, now, known=appended)
        return stored

    # --- annotations -----------------------------------------------------------------

    def add_annotation(self, annotation: Annotation) -> None:
        self.con.execute(
            "INSERT INTO annotations (node_id, kind, created_at, session_id, value) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                annotation.node_id,
                annotation.kind,
                annotation.created_at,
                annotation.session_id,
                annotation.value,
            ],
        )

    def annotations(self, node_ids: Iterable[str] | None = None) -> tuple[Annotation, ...]:
        if node_ids is None:
            rows = self.con.execute(
                "SELECT node_id, kind, created_at, session_id, value FROM annotations "
                "ORDER BY created_at"
            ).fetchall()
        else:
            rows = self.con.execute(
                "SELECT node_id, kind, created_at, session_id, value FROM annotations "
                "WHERE node_id IN (SELECT unnest(?)) ORDER BY created_at",
                [list(node_ids)],
            ).fetchall()
        return tuple(
            Annotation(node_id=r[0], kind=r[1], created_at=float(r[2]), session_id=r[3], value=r[4])
            for r in rows
        )

    # --- drafts ----------------------------------------------------------------------

    def write_draft(self, draft: Draft) -> None:
        """Insert or refresh the streamed text of a reply in flight (one committed write)."""
        self.con.execute(
            "INSERT OR REPLACE INTO drafts (id, session_id, parent_id, model, text, started_at, "
            "updated_at, metadata) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                draft.id,
                draft.session_id,
                draft.parent_id,
                draft.model,
                draft.text,
                draft.started_at,
                draft.updated_at,
                json.dumps(draft.metadata),
            ],
        )

    def delete_draft(self, draft_id: str) -> None:
        self.con.execute("DELETE FROM drafts WHERE id = ?", [draft_id])

    def drafts(self, session_id: str | None = None) -> tuple[Draft, ...]:
        sql = (
            "SELECT id, session_id, parent_id, model, text, started_at, updated_at, metadata "
            "FROM drafts"
        )
        params: list[Any] = []
        if session_id is not None:
            sql += " WHERE session_id = ?"
            params.append(session_id)
        rows = self.con.execute(sql + " ORDER BY started_at", params).fetchall()
        return tuple(
            Draft(r[0], r[1], r[2], r[3], r[4], float(r[5]), float(r[6]), _load(r[7]) or {})
            for r in rows
        )

    def finish_draft(
        self, draft_id: str, nodes: Sequence[Node], session_id: str, head: str | None, now: float
    ) -> tuple[Node, ...]:
        """Promote a finished (or stopped) reply: append its node(s), drop the draft, move
        HEAD, in one transaction."""
        with self.transaction():
            stored = self.append_nodes(nodes)
            self.delete_draft(draft_id)
            self.set_head(session_id, head, now)
        return stored

    def recover_drafts(
        self, new_id: Callable[[], str], now: float, keep: Collection[str] = ()
    ) -> tuple[Node, ...]:
        """After a crash: each leftover draft becomes an assistant node marked interrupted
        (unless its stream had ended whole: `stream_complete` in its metadata);
        HEAD follows it when HEAD was still at the draft's parent. Drafts named in `keep`
        (replies another live process is still writing) are left as they are."""
        recovered: list[Node] = []
        for draft in self.drafts():
            if draft.id in keep:
                continue
            node = Node(
                id=new_id(),
                seq=0,
                created_at=draft.updated_at,
                session_id=draft.session_id,
                role="assistant",
                name=draft.model,
                output=draft.text,
                predecessor=draft.parent_id,
                metadata={
                    **draft.metadata,
                    # a draft whose stream had ended whole was only not written yet
                    "interrupted": not draft.metadata.get("stream_complete"),
                    "recovered": True,
                    "model": draft.model,
                },
            )
            with self.transaction():
                (stored,) = self.append_nodes([node])
                self.delete_draft(draft.id)
                session = self.get_session(draft.session_id)
                if session is not None and session.head == draft.parent_id:
                    self.set_head(draft.session_id, stored.id, now)
            recovered.append(stored)
        return tuple(recovered)

    # --- settings --------------------------------------------------------------------

    def get_setting(self, key: str, default: Any = None) -> Any:
        row = self.con.execute("SELECT value FROM settings WHERE key = ?", [key]).fetchone()
        return _load(row[0]) if row else default

    def set_setting(self, key: str, value: Any) -> None:
        self.con.execute(
            "INSERT OR REPLACE INTO settings (key, value) VALUES (?, ?)", [key, json.dumps(value)]
        )

    def schema_version(self) -> int:
        row = self.con.execute("SELECT max(version) FROM schema_version").fetchone()
        return int(row[0]) if row and row[0] is not None else 0


def _add_ancestors_from(by_id: dict[str, Node], pool: dict[str, Node]) -> None:
    """Pull into `by_id` the ancestors found in `pool` of nodes already in it, and the tool
    calls hanging off those ancestors."""
    frontier = [n.parent for n in by_id.values() if n.parent is not None and n.parent not in by_id]
    added: list[str] = []
    while frontier:
        pid = frontier.pop()
        if pid is None or pid in by_id or pid not in pool:
            continue
        node = pool[pid]
        by_id[pid] = node
        added.append(pid)
        if node.parent is not None:
            frontier.append(node.parent)
    added_set = set(added)
    for node in pool.values():
        if node.caller in added_set and node.id not in by_id:
            by_id[node.id] = node


def bulk_insert(
    con: duckdb.DuckDBPyConnection, table: str, columns: str, rows: list[tuple[Any, ...]]
) -> None:
    """Insert many rows with one statement through DuckDB's appender path."""
    names = [c.strip() for c in columns.split(",")]
    # One list per column: DuckDB zips same-length unnests row by row, and converting flat
    # lists is far cheaper than a list of structs.
    column_values = [list(col) for col in zip(*rows, strict=True)]
    select = ", ".join(f"unnest(?) AS {name}" for name in names)
    con.execute(f"INSERT INTO {table} ({columns}) SELECT {select}", column_values)
