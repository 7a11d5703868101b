"""Chat settings revisions, user presets and pinned/favourite chats in their own tables. Runs
on the store's worker thread."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.chat_settings import ChatParameters, Preset, SessionSettings, preset_from_dict
from .repository import Repository

_SETTINGS_COLUMNS = "id, session_id, revision, changed_at, instructions, parameters, preset"


def _settings_from_row(row: Sequence[Any]) -> SessionSettings:
    params = row[5]
    return SessionSettings(
        id=row[0],
        session_id=row[1],
        revision=int(row[2]),
        changed_at=float(row[3]),
        instructions=row[4] or "",
        parameters=ChatParameters.from_dict(json.loads(params) if isinstance(params, str)
                                            else params),
        preset=row[6] or "",
    )


_MAX_FORK_DEPTH = 64


def current_settings(repo: Repository, session_id: str) -> SessionSettings:
    """The chat's latest revision. A chat branched from another and never set itself runs
    under the settings of the chat it came from (that revision, as it is); an unset chat
    gets revision 0 with nothing set."""
    sid: str | None = session_id
    for _ in range(_MAX_FORK_DEPTH):
        if sid is None:
            break
        row = repo.con.execute(
            f"SELECT {_SETTINGS_COLUMNS} FROM session_settings WHERE session_id = ? "
            "ORDER BY revision DESC LIMIT 1",
            [sid],
        ).fetchone()
        if row:
            return _settings_from_row(row)
        source = repo.get_session(sid)
        sid = source.forked_from if source is not None else None
    return SessionSettings(session_id=session_id)


def settings_history(repo: Repository, session_id: str) -> tuple[SessionSettings, ...]:
    """Every revision of the chat's settings, oldest first."""
    rows = repo.con.execute(
        f"SELECT {_SETTINGS_COLUMNS} FROM session_settings WHERE session_id = ? "
        "ORDER BY revision",
        [session_id],
    ).fetchall()
    return tuple(_settings_from_row(r) for r in rows)


def settings_by_id(repo: Repository, revision_id: str) -> SessionSettings | None:
    row = repo.con.execute(
        f"SELECT {_SETTINGS_COLUMNS} FROM session_settings WHERE id = ?", [revision_id]
    ).fetchone()
    return _settings_from_row(row) if row else None


def add_settings_revision(
    repo: Repository,
    *,
    revision_id: str,
    session_id: str,
    changed_at: float,
    instructions: str,
    parameters: ChatParameters,
    preset: str,
) -> SessionSettings:
    """Append a revision after the chat's latest one; an identical one is not written again
    (the current revision is returned instead)."""
    with repo.transaction():
        current = current_settings(repo, session_id)
        if current.revision and current.session_id == session_id and (
            current.instructions == instructions
            and current.parameters == parameters
            and current.preset == preset
        ):
            return current
        row = repo.con.execute(
            "SELECT max(revision) FROM session_settings WHERE session_id = ?", [session_id]
        ).fetchone()
        revision = int(row[0] or 0) + 1 if row else 1
        repo.con.execute(
            f"INSERT INTO session_settings ({_SETTINGS_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                revision_id,
                session_id,
                revision,
                changed_at,
                instructions,
                json.dumps(parameters.as_dict()),
                preset,
            ],
        )
    return SessionSettings(
        id=revision_id,
        session_id=session_id,
        revision=revision,
        changed_at=changed_at,
        instructions=instructions,
        parameters=parameters,
        preset=preset,
    )


# --- presets ------------------------------------------------------------------------------


def user_presets(repo: Repository) -> tuple[Preset, ...]:
    rows = repo.con.execute("SELECT data FROM presets ORDER BY lower(name), name").fetchall()
    out: list[Preset] = []
    for (data,) in rows:
        out.append(preset_from_dict(json.loads(data) if isinstance(data, str) else data))
    return tuple(out)


def save_preset(repo: Repository, preset: Preset, now: float) -> None:
    repo.con.execute(
        "INSERT INTO presets (name, data, created_at, updated_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (name) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at",
        [preset.name, json.dumps(preset.as_dict(), ensure_ascii=False), now, now],
    )


def delete_preset(repo: Repository, name: str) -> bool:
    found = repo.con.execute("SELECT count(*) FROM presets WHERE name = ?", [name]).fetchone()
    repo.con.execute("DELETE FROM presets WHERE name = ?", [name])
    return bool(found and found[0])


# --- pinned and favourite chats ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionMarks:
    session_id: str
    pinned: bool = False
    favourite: bool = False
    changed_at: float = 0.0


def session_marks(repo: Repository) -> dict[str, SessionMarks]:
    rows = repo.con.execute(
        "SELECT session_id, pinned, favourite, changed_at FROM session_marks"
    ).fetchall()
    return {r[0]: SessionMarks(r[0], bool(r[1]), bool(r[2]), float(r[3])) for r in rows}


def set_session_mark(
    repo: Repository, session_id: str, *, now: float, pinned: bool | None = None,
    favourite: bool | None = None,
) -> SessionMarks:
    """Set the chat's pin and/or favourite flag (None leaves it), last writer wins."""
    with repo.transaction():
        old = session_marks_of(repo, session_id)
        marks = SessionMarks(
            session_id,
            old.pinned if pinned is None else pinned,
            old.favourite if favourite is None else favourite,
            now,
        )
        repo.con.execute(
            "INSERT OR REPLACE INTO session_marks (session_id, pinned, favourite, changed_at) "
            "VALUES (?, ?, ?, ?)",
            [session_id, marks.pinned, marks.favourite, now],
        )
    return marks


def session_marks_of(repo: Repository, session_id: str) -> SessionMarks:
    row = repo.con.execute(
        "SELECT session_id, pinned, favourite, changed_at FROM session_marks "
        "WHERE session_id = ?",
        [session_id],
    ).fetchone()
    return SessionMarks(row[0], bool(row[1]), bool(row[2]), float(row[3])) if row else (
        SessionMarks(session_id)
    )
