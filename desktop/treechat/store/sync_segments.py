"""What sync reads from and writes into the store. Outgoing: the nodes, chats, commits and
attachments this file holds that no sync target has yet. Incoming: other devices' records,
merged by set union through the append-only paths (a record already here is skipped, HEADs do
not move). Mutable state is read and written as one flat mapping for the sync document.

Which records a target already has is remembered in `import_sources` under keys starting
`["sync", kind`, for what was sent and for what came in alike."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..core.chat_settings import ChatParameters
from ..core.model import Annotation, Session
from . import projects
from .chat_settings import add_settings_revision, set_session_mark
from .commits import COMMIT_COLUMNS
from .repository import Repository, bulk_insert

# Node fields in a segment, in this order (seq is local to each file and never travels).
NODE_FIELDS = (
    "id, created_at, session_id, role, name, input, output, predecessor, caller, reads, metadata"
)
SESSION_FIELDS = "id, title, model, created_at, forked_from"
CONNECTIONS_SETTING = "connections"
_KNOWN_COLUMNS = "source_key, node_id, session_id, imported_at"


def known_key(kind: str, ident: str) -> str:
    return f'["sync", "{kind}", {json.dumps(ident)}]'


def _known_prefix(kind: str) -> str:
    return json.dumps(["sync", kind])[:-1] + ", "


@dataclass(slots=True)
class Records:
    """Records as they travel. Nodes are one JSON array of arrays in NODE_FIELDS order, made
    and read by DuckDB itself: a first sync of a long history spends no time in Python."""

    nodes: str = "[]"
    node_count: int = 0
    sessions: list[list[Any]] = field(default_factory=list)
    commits: list[dict[str, Any]] = field(default_factory=list)
    blobs: list[str] = field(default_factory=list)  # attachment hashes the nodes name

    def __len__(self) -> int:
        return self.node_count + len(self.sessions) + len(self.commits) + len(self.blobs)

    def as_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "node_count": self.node_count, "sessions": self.sessions,
                "commits": self.commits, "blobs": self.blobs}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Records:
        nodes = data.get("nodes", "[]")
        if not isinstance(nodes, str):
            raise ValueError("nodes are not a JSON text")
        return cls(nodes, int(data.get("node_count", 0)), list(data.get("sessions", [])),
                   list(data.get("commits", [])), list(data.get("blobs", [])))


RECEIVED_SETTING = "sync.received"


def _remember_received(repo: Repository, lo: int, hi: int) -> None:
    """Nodes that came in are one run of seqs: remembered as the run and the ids at its
    ends, not a row each (a first sync brings a whole history)."""
    ends = repo.con.execute("SELECT seq, id FROM nodes WHERE seq IN (?, ?)", [lo, hi]
                            ).fetchall()
    ids = dict(ends)
    runs = list(repo.get_setting(RECEIVED_SETTING) or [])
    runs.append([lo, hi, ids.get(lo), ids.get(hi)])
    repo.set_setting(RECEIVED_SETTING, runs)


def _received_runs(repo: Repository) -> list[tuple[int, int]]:
    """The runs still as they came: a run whose end nodes are gone (purged, the seq given to
    another node since) is not trusted, and what it held is sent again, which is harmless."""
    runs = [r for r in (repo.get_setting(RECEIVED_SETTING) or []) if len(r) == 4]
    if not runs:
        return []
    wanted = sorted({int(r[0]) for r in runs} | {int(r[1]) for r in runs})
    at = dict(repo.con.execute("SELECT seq, id FROM nodes WHERE seq IN (SELECT unnest(?))",
                               [wanted]).fetchall())
    return [(int(r[0]), int(r[1])) for r in runs
            if at.get(int(r[0])) == r[2] and at.get(int(r[1])) == r[3]]


def forget_sent(repo: Repository) -> None:
    """Forget which records a target holds: a new target (another folder or server, or the
    same one started again) gets everything this file has."""
    repo.con.execute("DELETE FROM import_sources WHERE starts_with(source_key, ?)",
                     [json.dumps(["sync"])[:-1] + ", "])
    repo.set_setting(RECEIVED_SETTING, [])


def _unknown(kind: str, column: str) -> str:
    return (f"{column} NOT IN (SELECT node_id FROM import_sources "
            f"WHERE starts_with(source_key, '{_known_prefix(kind)}'))")


def unsent_records(repo: Repository, per_chunk: int,
                   bytes_per_chunk: int = 4 << 20) -> list[Records]:
    """Everything here that no target has yet, oldest first, in pieces of at most
    `per_chunk` nodes and about `bytes_per_chunk` of content (a long pasted document
    does not make one huge file); the chats, commits and attachments ride with the first."""
    runs = _received_runs(repo)
    pieces = repo.con.execute(
        f"SELECT CAST(list(json_array({NODE_FIELDS}) ORDER BY seq) AS JSON)::VARCHAR, count(*) "
        f"FROM (SELECT *, greatest((row_number() OVER w - 1) // ?, (sum(200 + "
        "strlen(coalesce(CAST(input AS VARCHAR), '')) + "
        "strlen(coalesce(CAST(output AS VARCHAR), ''))) OVER w - 1) // ?) AS piece "
        f"FROM nodes WHERE {_unknown('node', 'id')} AND NOT EXISTS (SELECT 1 FROM (SELECT "
        "unnest(?) AS lo, unnest(?) AS hi) WHERE seq BETWEEN lo AND hi) "
        "WINDOW w AS (ORDER BY seq)) GROUP BY piece ORDER BY piece",
        [per_chunk, bytes_per_chunk, [r[0] for r in runs], [r[1] for r in runs]],
    ).fetchall()
    sessions = repo.con.execute(
        f"SELECT {SESSION_FIELDS} FROM sessions WHERE {_unknown('session', 'id')} "
        "ORDER BY created_at, id"
    ).fetchall()
    commits = repo.con.execute(
        f"SELECT {COMMIT_COLUMNS} FROM commits WHERE {_unknown('commit', 'id')} "
        "ORDER BY created_at, id"
    ).fetchall()
    items: dict[str, list[list[Any]]] = {}
    if commits:
        for cid, position, op, item in repo.con.execute(
            "SELECT commit_id, position, op, item FROM commit_items "
            "WHERE commit_id IN (SELECT unnest(?)) ORDER BY commit_id, position",
            [[c[0] for c in commits]],
        ).fetchall():
            items.setdefault(cid, []).append([position, op, item])
    names = [c.strip() for c in COMMIT_COLUMNS.split(",")]
    blobs = repo.con.execute(
        f"SELECT sha256 FROM attachments WHERE {_unknown('blob', 'sha256')} ORDER BY sha256"
    ).fetchall()
    out = [Records(str(text), int(count)) for text, count in pieces] or [Records()]
    out[0].sessions = [list(r) for r in sessions]
    out[0].commits = [{**dict(zip(names, c, strict=True)), "items": items.get(c[0], [])}
                      for c in commits]
    out[0].blobs = [r[0] for r in blobs]
    return out if len(out[0]) or len(out) > 1 else []


# The nodes of a JSON array of records as rows (r is one record).
_NODE_ROWS = (
    "SELECT r->>'$[0]' AS id, CAST(r->'$[1]' AS DOUBLE) AS created_at, "
    "r->>'$[2]' AS session_id, r->>'$[3]' AS role, coalesce(r->>'$[4]', '') AS name, "
    "CASE WHEN json_type(r->'$[5]') = 'NULL' THEN NULL ELSE r->'$[5]' END AS input, "
    "CASE WHEN json_type(r->'$[6]') = 'NULL' THEN NULL ELSE r->'$[6]' END AS output, "
    "r->>'$[7]' AS predecessor, r->>'$[8]' AS caller, "
    "coalesce(CAST(r->'$[9]' AS VARCHAR[]), []) AS reads, "
    "CASE WHEN json_type(r->'$[10]') = 'OBJECT' THEN r->'$[10]' ELSE '{}' END AS metadata "
    "FROM (SELECT unnest(CAST(? AS JSON[])) AS r)"
)


def mark_known(repo: Repository, records: Records, now: float) -> None:
    """Remember that a target holds `records` (sent or received), so they are not sent."""
    if records.node_count:
        repo.con.execute(
            "INSERT INTO import_sources (source_key, node_id, session_id, imported_at) "
            f"SELECT DISTINCT '{_known_prefix('node')}' || to_json(id) || ']', id, "
            f"session_id, ? FROM ({_NODE_ROWS}) WHERE '{_known_prefix('node')}' || "
            "to_json(id) || ']' NOT IN (SELECT source_key FROM import_sources)",
            [now, records.nodes])
    rows = [(known_key("session", s[0]), s[0], s[0], now) for s in records.sessions]
    rows += [(known_key("commit", c["id"]), c["id"], c["session_id"], now)
             for c in records.commits]
    rows += [(known_key("blob", b), b, "", now) for b in records.blobs]
    if not rows:
        return
    keys = [r[0] for r in rows]
    have = {r[0] for r in repo.con.execute(
        "SELECT source_key FROM import_sources WHERE source_key IN (SELECT unnest(?))", [keys]
    ).fetchall()}
    fresh = list({r[0]: r for r in rows if r[0] not in have}.values())
    if fresh:
        bulk_insert(repo.con, "import_sources", _KNOWN_COLUMNS, fresh)


@dataclass(frozen=True, slots=True)
class Merged:
    nodes: int = 0
    sessions: tuple[str, ...] = ()  # chats new here
    commits: int = 0


def _loads(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def merge_records(repo: Repository, batches: Sequence[Records], now: float) -> Merged:
    """Add what this file lacks of `batches` (set union: the rest is skipped); HEADs stay.
    Other devices' nodes are appended in the order they were made (seq is each file's own)."""
    added = 0
    new_sessions: dict[str, list[Any]] = {}
    with repo.transaction():
        sessions = [s for b in batches for s in b.sessions]
        have_sessions = {r[0] for r in repo.con.execute(
            "SELECT id FROM sessions WHERE id IN (SELECT unnest(?))",
            [[s[0] for s in sessions]]).fetchall()} if sessions else set()
        new_sessions = {s[0]: s for s in sessions if s[0] not in have_sessions}
        repo.create_sessions([
            Session(id=s[0], title=s[1], head=None, model=s[2] or "", created_at=float(s[3]),
                    forked_from=s[4], updated_at=float(s[3]))
            for s in new_sessions.values()
        ])
        texts = [b.nodes for b in batches if b.node_count]
        if texts:
            every = " UNION ALL ".join([_NODE_ROWS] * len(texts))
            first = repo.last_seq + 1
            row = repo.con.execute(
                "INSERT INTO nodes (id, seq, created_at, session_id, role, name, input, "
                "output, predecessor, caller, reads, metadata) "
                "SELECT id, ? - 1 + row_number() OVER (ORDER BY created_at, id), created_at, "
                "session_id, role, name, input, output, predecessor, caller, reads, metadata "
                f"FROM (SELECT * FROM ({every}) WHERE id NOT IN (SELECT id FROM nodes) "
                "QUALIFY row_number() OVER (PARTITION BY id) = 1)",  # once each, then numbered
                [first, *texts]).fetchone()
            added = int(row[0]) if row else 0
            if added:
                repo.advance_seq(first + added - 1)
                _remember_received(repo, first, first + added - 1)
        commits = _merge_commits(repo, [c for b in batches for c in b.commits])
        for batch in batches:
            mark_known(repo, replace(batch, nodes="[]", node_count=0), now)
    return Merged(added, tuple(new_sessions), commits)


def _merge_commits(repo: Repository, commits: Sequence[Mapping[str, Any]]) -> int:
    if not commits:
        return 0
    have = {r[0] for r in repo.con.execute(
        "SELECT id FROM commits WHERE id IN (SELECT unnest(?))", [[c["id"] for c in commits]]
    ).fetchall()}
    names = [c.strip() for c in COMMIT_COLUMNS.split(",")]
    rows: list[tuple[Any, ...]] = []
    items: list[tuple[Any, ...]] = []
    for c in {c["id"]: c for c in commits if c["id"] not in have}.values():
        meta = dict(_loads(c["meta"]) or {})
        # `max_seq` is in the writer's own order: here it is the newest node of the chat that
        # existed when the commit was made, in this file's order.
        row = repo.con.execute(
            "SELECT coalesce(max(seq), 0) FROM nodes WHERE session_id = ? AND created_at <= ?",
            [c["session_id"], float(c["created_at"])],
        ).fetchone()
        meta["max_seq"] = int(row[0]) if row else 0
        values = {**c, "meta": json.dumps(meta)}
        rows.append(tuple(values[n] for n in names))
        items.extend((c["id"], int(p), op, item) for p, op, item in c.get("items", []))
    if rows:
        bulk_insert(repo.con, "commits", COMMIT_COLUMNS, rows)
    if items:
        bulk_insert(repo.con, "commit_items", "commit_id, position, op, item", items)
    return len(rows)


def missing_attachments(repo: Repository, hashes: Iterable[str]) -> list[str]:
    wanted = sorted(set(hashes))
    if not wanted:
        return []
    have = {r[0] for r in repo.con.execute(
        "SELECT sha256 FROM attachments WHERE sha256 IN (SELECT unnest(?))", [wanted]).fetchall()}
    return [h for h in wanted if h not in have]


# --- mutable state ------------------------------------------------------------------------

# Field names in the flat view: "<what>/<which>", e.g. "title/<session id>".
SESSION_FIELDS_MUTABLE = ("title", "model", "hidden")
PROJECT_FIELDS = ("project", "inproject", "memory")


def mutable_state(repo: Repository) -> dict[str, Any]:
    """Every mutable value sync carries, flat: titles, models, deleted chats, pins,
    favourites, chat settings, user presets, connections (their keys are in the keychain, never
    here) and each chat's HEAD."""
    out: dict[str, Any] = {}
    for sid, title, model, hidden, head in repo.con.execute(
        "SELECT id, title, model, hidden, head FROM sessions"
    ).fetchall():
        out[f"title/{sid}"] = title
        out[f"model/{sid}"] = model or ""
        out[f"hidden/{sid}"] = bool(hidden)
        if head is not None:
            out[f"head/{sid}"] = head
    for sid, pinned, favourite in repo.con.execute(
        "SELECT session_id, pinned, favourite FROM session_marks"
    ).fetchall():
        out[f"pinned/{sid}"] = bool(pinned)
        out[f"favourite/{sid}"] = bool(favourite)
    for sid, instructions, parameters, preset in repo.con.execute(
        "SELECT session_id, instructions, parameters, preset FROM session_settings "
        "QUALIFY row_number() OVER (PARTITION BY session_id ORDER BY revision DESC) = 1"
    ).fetchall():
        out[f"settings/{sid}"] = {"instructions": instructions or "",
                                  "parameters": _loads(parameters) or {}, "preset": preset or ""}
    for name, data in repo.con.execute("SELECT name, data FROM presets").fetchall():
        out[f"preset/{name}"] = _loads(data)
    connections = repo.get_setting(CONNECTIONS_SETTING)
    if connections is not None:
        out["setting/connections"] = connections
    out.update(project_state(repo))
    return out


def project_state(repo: Repository) -> dict[str, Any]:
    """Projects, which project each chat is in ("" for one taken out of its project: a
    change like a move in) and each chat's memory switch."""
    out: dict[str, Any] = {f"project/{p.id}": p.as_dict() for p in projects.projects(repo)}
    for sid, pid in projects.members(repo, with_none=True).items():
        out[f"inproject/{sid}"] = pid
    for sid, enabled in projects.chat_memory(repo).items():
        out[f"memory/{sid}"] = enabled
    return out


def _apply_project(repo: Repository, what: str, which: str, value: Any, now: float) -> bool:
    if what == "project":
        if value is None:
            projects.delete_project(repo, which)
        elif isinstance(value, dict):
            projects.save_project(repo, projects.Project(
                which, str(value.get("name") or "Project"),
                str(value.get("instructions") or ""),
                tuple(str(k) for k in value.get("knowledge") or ()), bool(value.get("memory")),
                float(value.get("created_at") or now), now))
        return True
    if what == "inproject":
        projects.move_chat(repo, which, str(value) or None, now)
        return True
    if what == "memory":
        projects.set_chat_memory(repo, which, bool(value), now)
        return True
    return False


def annotation_rows(repo: Repository) -> list[list[Any]]:
    return [[a.node_id, a.kind, a.created_at, a.session_id, a.value]
            for a in repo.annotations()]


def add_annotations(repo: Repository, rows: Iterable[Sequence[Any]]) -> int:
    have = {tuple(a) for a in annotation_rows(repo)}
    added = 0
    for r in rows:
        key = (r[0], r[1], float(r[2]), r[3], r[4])
        if key in have:
            continue
        have.add(key)
        repo.add_annotation(Annotation(node_id=r[0], kind=r[1], created_at=float(r[2]),
                                       session_id=r[3], value=r[4]))
        added += 1
    return added


def apply_state(repo: Repository, values: Mapping[str, Any], *, now: float,
                revision_id: Any) -> list[str]:
    """Write the fields of `values` that differ from the store; returns those written.
    A field of a chat this file does not hold (yet), or a HEAD on a node it does not hold,
    is left for a later sync."""
    current = mutable_state(repo)
    sessions = {r[0] for r in repo.con.execute("SELECT id FROM sessions").fetchall()}
    written: list[str] = []
    columns: dict[str, list[tuple[str, Any]]] = {}  # session column -> (session, value)
    with repo.transaction():
        for key, value in values.items():
            if current.get(key) == value:
                continue
            what, _, which = key.partition("/")
            if what in (*SESSION_FIELDS_MUTABLE, "head") and which in sessions:
                if what == "head" and value is None:
                    continue
                columns.setdefault(what, []).append((which, value))
                continue  # written below, a column at a time
            if what in ("pinned", "favourite") and which in sessions:
                set_session_mark(repo, which, now=now, **{what: bool(value)})
            elif what == "settings" and which in sessions and isinstance(value, dict):
                add_settings_revision(
                    repo, revision_id=revision_id(), session_id=which, changed_at=now,
                    instructions=str(value.get("instructions") or ""),
                    parameters=ChatParameters.from_dict(value.get("parameters") or {}),
                    preset=str(value.get("preset") or ""))
            elif what == "preset":
                if value is None:
                    repo.con.execute("DELETE FROM presets WHERE name = ?", [which])
                else:
                    repo.con.execute(
                        "INSERT INTO presets (name, data, created_at, updated_at) "
                        "VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET "
                        "data = excluded.data, updated_at = excluded.updated_at",
                        [which, json.dumps(value, ensure_ascii=False), now, now])
            elif key == "setting/connections":
                repo.set_setting(CONNECTIONS_SETTING, value)
            elif what in PROJECT_FIELDS and (what == "project" or which in sessions):
                _apply_project(repo, what, which, value, now)
            else:
                continue
            written.append(key)
        for column, changes in columns.items():
            # one statement per column: a first sync sets the HEAD of every chat at once
            touch, times = (", updated_at = ?", [now]) if column == "head" else ("", [])
            repo.con.execute(
                f"UPDATE sessions SET {column} = v.value{touch} "
                "FROM (SELECT unnest(?) AS id, unnest(?) AS value) v WHERE sessions.id = v.id",
                [*times, [c[0] for c in changes], [c[1] for c in changes]])
            written.extend(f"{column}/{c[0]}" for c in changes)
    return written


def is_ancestor(repo: Repository, ancestor: str, node_id: str, limit: int = 100_000) -> bool:
    """Whether `ancestor` is on the path from `node_id` back to its root."""
    row = repo.con.execute(
        "WITH RECURSIVE up(id, parent, depth) AS ("
        " SELECT id, coalesce(predecessor, caller), 0 FROM nodes WHERE id = ?"
        " UNION ALL SELECT n.id, coalesce(n.predecessor, n.caller), up.depth + 1"
        " FROM nodes n JOIN up ON n.id = up.parent WHERE up.depth < ?)"
        " SELECT count(*) FROM up WHERE id = ?",
        [node_id, limit, ancestor],
    ).fetchone()
    return bool(row and row[0])
