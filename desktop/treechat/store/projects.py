"""Projects (groups of chats with shared instructions, knowledge and memory across chats), which
chat is in which, and each chat's own memory switch. Runs on the store's worker thread."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .repository import Repository

_COLUMNS = "id, name, instructions, knowledge, memory, created_at, changed_at"


@dataclass(frozen=True, slots=True)
class Project:
    id: str
    name: str
    instructions: str = ""
    knowledge: tuple[str, ...] = ()  # knowledge base names its chats search
    memory: bool = False  # its chats may search the user's other chats
    created_at: float = 0.0
    changed_at: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "instructions": self.instructions,
                "knowledge": list(self.knowledge), "memory": self.memory,
                "created_at": self.created_at}


def _project(row: Sequence[Any]) -> Project:
    return Project(str(row[0]), str(row[1]), str(row[2] or ""), tuple(str(k) for k in row[3]),
                   bool(row[4]), float(row[5]), float(row[6]))


def projects(repo: Repository) -> tuple[Project, ...]:
    rows = repo.con.execute(
        f"SELECT {_COLUMNS} FROM projects ORDER BY lower(name), name, id").fetchall()
    return tuple(_project(r) for r in rows)


def project(repo: Repository, project_id: str) -> Project | None:
    row = repo.con.execute(f"SELECT {_COLUMNS} FROM projects WHERE id = ?",
                           [project_id]).fetchone()
    return _project(row) if row else None


def save_project(repo: Repository, p: Project) -> Project:
    """Insert or replace the project's row (last writer wins)."""
    repo.con.execute(
        f"INSERT INTO projects ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO "
        "UPDATE SET name = excluded.name, instructions = excluded.instructions, "
        "knowledge = excluded.knowledge, memory = excluded.memory, "
        "changed_at = excluded.changed_at",
        [p.id, p.name, p.instructions, list(p.knowledge), p.memory, p.created_at,
         p.changed_at])
    return p


def delete_project(repo: Repository, project_id: str) -> bool:
    """The project and its memberships go; its chats stay, outside any project."""
    with repo.transaction():
        found = project(repo, project_id) is not None
        repo.con.execute("UPDATE project_chats SET project_id = '' WHERE project_id = ?",
                         [project_id])
        repo.con.execute("DELETE FROM projects WHERE id = ?", [project_id])
    return found


def members(repo: Repository, *, with_none: bool = False) -> dict[str, str]:
    """session id -> the project it is in; `with_none`: with "" for each chat that was
    taken out of one (a change sync carries, like a move in)."""
    rows = repo.con.execute("SELECT session_id, project_id FROM project_chats").fetchall()
    return {str(r[0]): str(r[1]) for r in rows if with_none or r[1]}


def project_of(repo: Repository, session_id: str) -> Project | None:
    row = repo.con.execute(
        f"SELECT {', '.join('p.' + c.strip() for c in _COLUMNS.split(','))} FROM projects p "
        "JOIN project_chats m ON m.project_id = p.id WHERE m.session_id = ?",
        [session_id]).fetchone()
    return _project(row) if row else None


def move_chat(repo: Repository, session_id: str, project_id: str | None, now: float) -> None:
    """Put the chat in `project_id` (None: out of any project, kept as a row naming none
    so that sync carries the move out)."""
    repo.con.execute("INSERT OR REPLACE INTO project_chats VALUES (?, ?, ?)",
                     [session_id, project_id or "", now])


def chat_memory(repo: Repository) -> dict[str, bool]:
    rows = repo.con.execute("SELECT session_id, enabled FROM chat_memory").fetchall()
    return {str(r[0]): bool(r[1]) for r in rows}


def set_chat_memory(repo: Repository, session_id: str, enabled: bool, now: float) -> None:
    repo.con.execute("INSERT OR REPLACE INTO chat_memory VALUES (?, ?, ?)",
                     [session_id, enabled, now])
