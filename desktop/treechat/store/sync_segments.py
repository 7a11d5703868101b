"""What sync reads from and writes into the store. Outgoing: the nodes, chats, commits and
attachments this file holds that no sync target has yet. Incoming: other devices' records,
merged by set union through the append-only paths (a record already here is skipped, HEADs do
not move). Mutable state is read and written as one flat mapping for the sync document.

Which records a target already has is remembered in `import_sources` under keys starting
`["sync", kind`, for what was sent and for what came in alike."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.chat_settings import ChatParameters
from ..core.model import Annotation, Node, Session
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
    return json.dumps(["sync", kind, ident])


def _known_prefix(kind: str) -> str:
    return json.dumps(["sync", kind])[:-1] + ", "


@dataclass(slots=True)
class Records:
    """Records as they travel: plain lists, JSON columns as their JSON text."""

    nodes: list[list[Any]] = field(default_factory=list)
    sessions: list[list[Any]] = field(default_factory=list)
    commits: list[dict[str, Any]] = field(default_factory=list)
    blobs: list[str] = field(default_factory=list)  # attachment hashes the nodes name

    def __len__(self) -> int:
        return len(self.nodes) + len(self.sessions) + len(self.commits) + len(self.blobs)

    def as_dict(self) -> dict[str, Any]:
        return {"nodes": self.nodes, "sessions": self.sessions, "commits": self.commits,
                "blobs": self.blobs}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Records:
        return cls(list(data.get("nodes", [])), list(data.get("sessions", [])),
                   list(data.get("commits", [])), list(data.get("blobs", [])))


def _unknown(kind: str, column: str) -> str:
    return (f"{column} NOT IN (SELECT node_id FROM import_sources "
            f"WHERE starts_with(source_key, '{_known_prefix(kind)}'))")


def unsent_records(repo: Repository) -> Records:
    """Everything here that no target has yet, oldest first."""
    nodes = repo.con.execute(
        f"SELECT {NODE_FIELDS} FROM nodes WHERE {_unknown('node', 'id')} ORDER BY seq"
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
            "WHERE list_contains(?, commit_id) ORDER BY commit_id, position",
            [[c[0] for c in commits]],
        ).fetchall():
            items.setdefault(cid, []).append([position, op, item])
    names = [c.strip() for c in COMMIT_COLUMNS.split(",")]
    blobs = repo.con.execute(
        f"SELECT sha256 FROM attachments WHERE {_unknown('blob', 'sha256')} ORDER BY sha256"
    ).fetchall()
    return Records(
        nodes=[list(r) for r in nodes],
        sessions=[list(r) for r in sessions],
        commits=[{**dict(zip(names, c, strict=True)), "items": items.get(c[0], [])}
                 for c in commits],
        blobs=[r[0] for r in blobs],
    )


def mark_known(repo: Repository, records: Records, now: float) -> None:
    """Remember that a target holds `records` (sent or received), so they are not sent."""
    rows = [(known_key("node", n[0]), n[0], n[2], now) for n in records.nodes]
    rows += [(known_key("session", s[0]), s[0], s[0], now) for s in records.sessions]
    rows += [(known_key("commit", c["id"]), c["id"], c["session_id"], now)
             for c in records.commits]
    rows += [(known_key("blob", b), b, "", now) for b in records.blobs]
    if not rows:
        return
    keys = [r[0] for r in rows]
    have = {r[0] for r in repo.con.execute(
        "SELECT source_key FROM import_sources WHERE list_contains(?, source_key)", [keys]
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


def merge_records(repo: Repository, records: Records, now: float) -> Merged:
    """Add what this file lacks of `records` (set union: the rest is skipped); HEADs stay."""
    with repo.transaction():
        have_sessions = {r[0] for r in repo.con.execute(
            "SELECT id FROM sessions WHERE list_contains(?, id)",
            [[s[0] for s in records.sessions]]).fetchall()} if records.sessions else set()
        new_sessions = {s[0]: s for s in records.sessions if s[0] not in have_sessions}
        repo.create_sessions([
            Session(id=s[0], title=s[1], head=None, model=s[2] or "", created_at=float(s[3]),
                    forked_from=s[4], updated_at=float(s[3]))
            for s in new_sessions.values()
        ])
        ids = [n[0] for n in records.nodes]
        have = {r[0] for r in repo.con.execute(
            "SELECT id FROM nodes WHERE id IN (SELECT unnest(?))", [ids]).fetchall()
        } if ids else set()
        fresh: dict[str, list[Any]] = {}
        for n in records.nodes:
            if n[0] not in have:
                fresh.setdefault(n[0], n)
        # seq is this file's own order: other devices' nodes are appended as they were made
        ordered = sorted(fresh.values(), key=lambda n: (float(n[1]), n[0]))
        repo.append_nodes([
            Node(id=n[0], seq=0, created_at=float(n[1]), session_id=n[2], role=n[3],
                 name=n[4] or "", input=_loads(n[5]), output=_loads(n[6]), predecessor=n[7],
                 caller=n[8], reads=tuple(n[9] or ()), metadata=_loads(n[10]) or {})
            for n in ordered
        ])
        commits = _merge_commits(repo, records.commits)
        mark_known(repo, records, now)
    return Merged(len(ordered), tuple(new_sessions), commits)


def _merge_commits(repo: Repository, commits: Sequence[Mapping[str, Any]]) -> int:
    if not commits:
        return 0
    have = {r[0] for r in repo.con.execute(
        "SELECT id FROM commits WHERE list_contains(?, id)", [[c["id"] for c in commits]]
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
        "SELECT sha256 FROM attachments WHERE list_contains(?, sha256)", [wanted]).fetchall()}
    return [h for h in wanted if h not in have]


# --- mutable state ------------------------------------------------------------------------

# Field names in the flat view: "<what>/<which>", e.g. "title/<session id>".
SESSION_FIELDS_MUTABLE = ("title", "model", "hidden")


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
    return out


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
    with repo.transaction():
        for key, value in values.items():
            if current.get(key) == value:
                continue
            what, _, which = key.partition("/")
            if what in SESSION_FIELDS_MUTABLE and which in sessions:
                repo.update_session(which, **{what: value})
            elif what == "head" and which in sessions:
                if value is None or repo.get_node(value) is None:
                    continue
                repo.set_head(which, value, now, known=True)
            elif what in ("pinned", "favourite") and which in sessions:
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
            else:
                continue
            written.append(key)
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
