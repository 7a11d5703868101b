"""Writing an imported conversation as a session and its nodes: one transaction per
conversation, in bulk, remembered in `import_sources` so the same file twice adds nothing
(and a later export of the same conversation adds only what is new).

An import never takes a session away from the user: it writes only into sessions it created
itself, moves their HEAD only while it is still where the last import of the file put it, and
never changes a title. A Treechat file that names a session already in the store (its own
export coming back, or a file crafted to look like it) gets a new session for what is new in
it, branched from the one it names."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from ..core.imports.model import ImportedConversation, ImportedMessage
from ..core.model import Node, Session
from .repository import Repository, bulk_insert

SOURCE_COLUMNS = "source_key, node_id, session_id, imported_at"

# Treechat's own exports carry real node ids, which are kept so a round trip is exact.
KEEPS_IDS = frozenset({"treechat"})


@dataclass(frozen=True, slots=True)
class WrittenConversation:
    """What writing one conversation changed."""

    session_id: str
    created_session: bool
    nodes: int
    branches: int
    head: str | None
    head_kept: bool = False  # new nodes were added but HEAD stayed where the user had it
    note: str = ""  # what the user should be told about this conversation, if anything


# DuckDB keeps the blocks it writes cached up to its memory limit (by default 80% of RAM), so
# a long bulk import would grow the process with the store it writes: while importing, the
# cache is held to this, and given its previous limit back after.
IMPORT_MEMORY_LIMIT = "256MB"


def hold_cache(repo: Repository, limit: str = IMPORT_MEMORY_LIMIT) -> str:
    """Lower DuckDB's memory limit for a bulk import; returns the limit to restore."""
    row = repo.con.execute("SELECT current_setting('memory_limit')").fetchone()
    previous = str(row[0]) if row is not None else ""
    repo.con.execute(f"SET memory_limit = '{limit}'")
    return previous


def release_cache(repo: Repository, previous: str) -> None:
    """Give DuckDB back the memory limit `hold_cache` found."""
    # The default comes back exactly by RESET (a size DuckDB renders is rounded); a limit
    # someone set is set again as DuckDB rendered it.
    repo.con.execute("RESET memory_limit")
    row = repo.con.execute("SELECT current_setting('memory_limit')").fetchone()
    if previous and (row is None or str(row[0]) != previous):
        # SET takes no parameters; the value is DuckDB's own rendering of a size.
        repo.con.execute(f"SET memory_limit = '{previous.replace(chr(39), '')}'")


def conversation_key(fmt: str, conversation_id: str) -> str:
    return json.dumps([fmt, conversation_id], ensure_ascii=False)


def message_key(fmt: str, conversation_id: str, message_id: str) -> str:
    return json.dumps([fmt, conversation_id, message_id], ensure_ascii=False)


def imported_messages(repo: Repository, fmt: str, conversation_id: str) -> set[str]:
    """The ids (in the file) of a conversation's messages an earlier import wrote and the
    store still holds: what `write_conversation` will not write again."""
    prefix = conversation_key(fmt or "import", conversation_id)[:-1] + ", "
    rows = repo.con.execute(
        "SELECT s.source_key FROM import_sources s JOIN nodes n ON n.id = s.node_id "
        "WHERE starts_with(s.source_key, ?)",
        [prefix],
    ).fetchall()
    return {str(json.loads(r[0])[2]) for r in rows}


def write_conversation(
    repo: Repository,
    conv: ImportedConversation,
    *,
    now: float,
    make_id: Callable[[], str],
) -> WrittenConversation:
    """Store `conv` (all or nothing). Messages already imported from the same source are
    reused as parents, not written again; HEAD moves only when something was added."""
    fmt = conv.source_format or "import"
    keep_ids = fmt in KEEPS_IDS
    conv_key = conversation_key(fmt, conv.source_id)
    prefix = conv_key[:-1] + ", "  # every message key of this conversation starts so
    with repo.transaction():
        rows = repo.con.execute(
            "SELECT source_key, node_id, session_id FROM import_sources "
            "WHERE source_key = ? OR starts_with(source_key, ?)",
            [conv_key, prefix],
        ).fetchall()
        session_id: str | None = None
        import_head: str | None = None  # where the last import of this conversation put HEAD
        stale: list[str] = []
        remembered: dict[str, tuple[str, str]] = {}  # message id -> (key, node id)
        for key, node_id, owner in rows:
            if key == conv_key:
                session_id = owner
                import_head = node_id or None
            else:
                remembered[json.loads(key)[2]] = (key, node_id)
        session = repo.get_session(session_id) if session_id is not None else None
        if session_id is not None and session is None:
            stale.append(conv_key)
            session_id = None
        conv_row_needed = session_id is None
        # A purge may have deleted nodes an earlier import wrote: those come back.
        alive = _existing_node_ids(repo, [node_id for _, node_id in remembered.values()])
        existing: dict[str, str] = {}
        for message_id, (key, node_id) in remembered.items():
            if node_id in alive:
                existing[message_id] = node_id
            else:
                stale.append(key)
        forked_from: str | None = None
        if keep_ids:
            for node_id in _existing_node_ids(repo, [m.source_id for m in conv.nodes]):
                existing.setdefault(node_id, node_id)
            named = session if session is not None else repo.get_session(conv.source_id)
            if named is not None:
                # Never write into a session that is already here: what is new goes to a
                # session of its own, branched from it.
                forked_from = named.id
                session_id, session, conv_row_needed = None, None, True
                if conv_key not in stale:
                    stale.append(conv_key)

        fresh = [m for m in conv.nodes if m.source_id not in existing]
        if not fresh:
            owner = session_id or forked_from
            if owner is not None:
                return WrittenConversation(owner, False, 0, 0, None)

        id_of = dict(existing)
        for message in fresh:
            id_of[message.source_id] = message.source_id if keep_ids else make_id()
        created = session_id is None
        if session_id is None:
            free = keep_ids and forked_from is None and repo.get_session(conv.source_id) is None
            session_id = conv.source_id if free else make_id()

        nodes = [_node(m, id_of, session_id, now) for m in fresh]
        branches = _new_branches(repo, conv, fresh, existing)
        repo.append_nodes(nodes)
        if stale:
            repo.con.execute(
                "DELETE FROM import_sources WHERE source_key IN (SELECT unnest(?))", [stale]
            )
        head = id_of.get(conv.head_source_id) if conv.head_source_id is not None else None
        source_rows = [
            (message_key(fmt, conv.source_id, m.source_id), id_of[m.source_id], session_id, now)
            for m in fresh
        ]
        bulk_insert(repo.con, "import_sources", SOURCE_COLUMNS, source_rows)

        updated = conv.updated_at or now
        created_at = conv.created_at if conv.created_at > 0 else now
        note = ""
        head_kept = False
        if created:
            title = conv.title
            if forked_from is not None:
                title = f"{conv.title} (imported)" if conv.title else "Imported chat"
                note = (f"“{conv.title or forked_from}” is already here: what the file adds "
                        f"is in a new chat, “{title}”.")
            repo.create_session(
                Session(
                    id=session_id,
                    title=title,
                    head=head,
                    model=conv.model,
                    created_at=created_at,
                    updated_at=max(updated, created_at),
                    forked_from=forked_from,
                )
            )
        else:
            assert session is not None
            if head is not None and head != session.head:
                if session.head is None or session.head == import_head:
                    repo.set_head(session_id, head, updated)
                else:
                    # The user has moved HEAD since the last import: leave it, and say where
                    # the new messages are.
                    head, head_kept = session.head, True
                    note = (f"“{session.title or conv.title}”: the new messages are on a new "
                            "branch; HEAD stays where you left it.")
            if session.hidden and fresh:
                # Importing a deleted conversation again is asking for it back.
                repo.update_session(session_id, hidden=False)
        # Remember where this import left HEAD, to know later whether the user moved it.
        recorded = head if not head_kept else import_head
        if conv_row_needed:
            bulk_insert(repo.con, "import_sources", SOURCE_COLUMNS,
                        [(conv_key, recorded or "", session_id, now)])
        elif not head_kept:
            repo.con.execute("UPDATE import_sources SET node_id = ? WHERE source_key = ?",
                             [recorded or "", conv_key])

    return WrittenConversation(session_id, created, len(fresh), branches, head,
                               head_kept, note)


def _new_branches(
    repo: Repository, conv: ImportedConversation, fresh: list[ImportedMessage],
    existing: dict[str, str],
) -> int:
    """Branch ends the write adds to the store: new messages nothing in the file follows,
    less the old ends they grow (a branch that got longer is not a new one)."""
    followed = {m.parent_source_id for m in conv.nodes if m.edge == "predecessor"}
    fresh_tips = sum(1 for m in fresh if m.edge == "predecessor" and m.source_id not in followed)
    grown = {existing[m.parent_source_id] for m in fresh
             if m.edge == "predecessor" and m.parent_source_id in existing}
    if not grown:
        return fresh_tips
    rows = repo.con.execute(
        "SELECT DISTINCT predecessor FROM nodes WHERE predecessor IN (SELECT unnest(?))",
        [sorted(grown)],
    ).fetchall()
    had_children = {r[0] for r in rows}
    return max(fresh_tips - len(grown - had_children), 0)


def _existing_node_ids(repo: Repository, ids: list[str]) -> set[str]:
    if not ids:
        return set()
    rows = repo.con.execute("SELECT id FROM nodes WHERE id IN (SELECT unnest(?))", [ids])
    return {row[0] for row in rows.fetchall()}


def _node(message: ImportedMessage, id_of: dict[str, str], session_id: str, now: float) -> Node:
    parent = id_of[message.parent_source_id] if message.parent_source_id is not None else None
    return Node(
        id=id_of[message.source_id],
        seq=0,
        # Some exports carry no times at all (AI Studio): such a message is as old as its import.
        created_at=message.created_at if message.created_at > 0 else now,
        session_id=session_id,
        role=message.role,
        name=message.name,
        input=message.input,
        output=message.output,
        predecessor=parent if message.edge == "predecessor" else None,
        caller=parent if message.edge == "caller" else None,
        reads=tuple(id_of.get(r, r) for r in message.reads),
        metadata=message.metadata,
    )
