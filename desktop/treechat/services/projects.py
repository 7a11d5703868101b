"""Projects: a group of chats with shared instructions, knowledge and memory across chats.
A chat is in one project or none; deleting a project leaves its chats where they were, outside
any project. The chat list, the knowledge panel and `treechat projects` call this; the turn
engine reads a chat's project before each request (its instructions go before the chat's own,
its knowledge bases join the chat's, its memory switch lets the chat search the others)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..core.chat_settings import check_instructions
from ..core.clock import SYSTEM_CLOCK, Clock
from ..store import projects as table
from ..store.database import Store
from ..store.projects import Project
from ..store.repository import Repository
from .turns.sessions import new_id

__all__ = ["Project", "ProjectError", "ProjectService", "Projects"]

MAX_NAME = 120


class ProjectError(ValueError):
    """A bad name or an unknown project or chat (one line, for the user)."""


@dataclass(frozen=True, slots=True)
class Projects:
    """What the chat list shows: every project, and which project each chat is in."""

    projects: tuple[Project, ...] = ()
    member_of: dict[str, str] | None = None

    def of(self, session_id: str) -> Project | None:
        pid = (self.member_of or {}).get(session_id)
        return next((p for p in self.projects if p.id == pid), None)


class ProjectService:
    def __init__(self, store: Store, *, clock: Clock = SYSTEM_CLOCK,
                 make_id: Callable[[], str] = new_id) -> None:
        self.store = store
        self.clock = clock
        self.make_id = make_id

    async def all(self) -> Projects:
        def read(repo: Repository) -> Projects:
            return Projects(table.projects(repo), table.members(repo))

        return await self.store.run(read)

    async def find(self, name_or_id: str) -> Project:
        """A project by id or by name (case-insensitive)."""
        wanted = name_or_id.strip()
        found = (await self.all()).projects
        for p in found:
            if p.id == wanted:
                return p
        named = [p for p in found if p.name.lower() == wanted.lower()]
        if len(named) == 1:
            return named[0]
        if named:
            raise ProjectError(f"{len(named)} projects are named {wanted!r}: give its id")
        raise ProjectError(f"no project {wanted!r}")

    async def create(self, name: str, instructions: str = "") -> Project:
        now = self.clock.now()
        p = Project(self.make_id(), _name(name), check_instructions(instructions), (), False,
                    now, now)
        return await self.store.run(lambda r: table.save_project(r, p))

    async def update(self, project_id: str, *, name: str | None = None,
                     instructions: str | None = None, memory: bool | None = None,
                     knowledge: tuple[str, ...] | None = None) -> Project:
        old = await self._get(project_id)
        new = replace(
            old,
            name=old.name if name is None else _name(name),
            instructions=(old.instructions if instructions is None
                          else check_instructions(instructions)),
            memory=old.memory if memory is None else memory,
            knowledge=old.knowledge if knowledge is None else tuple(dict.fromkeys(knowledge)),
            changed_at=self.clock.now(),
        )
        return await self.store.run(lambda r: table.save_project(r, new))

    async def remove(self, project_id: str) -> None:
        """The project goes; its chats stay, outside any project."""
        await self._get(project_id)
        await self.store.run(lambda r: table.delete_project(r, project_id))

    async def move(self, session_id: str, project_id: str | None) -> None:
        """Put the chat in the project (None: take it out of its project)."""
        if project_id is not None:
            await self._get(project_id)
        session = await self.store.run(lambda r: r.get_session(session_id))
        if session is None:
            raise ProjectError(f"no chat {session_id!r}")
        now = self.clock.now()
        await self.store.run(lambda r: table.move_chat(r, session_id, project_id, now))

    async def project_of(self, session_id: str) -> Project | None:
        return await self.store.run(lambda r: table.project_of(r, session_id))

    # --- memory across chats -------------------------------------------------------------

    async def chat_memory(self, session_id: str) -> bool:
        """The chat's own switch (off unless turned on)."""
        found = await self.store.run(table.chat_memory)
        return bool(found.get(session_id, False))

    async def set_chat_memory(self, session_id: str, enabled: bool) -> None:
        now = self.clock.now()
        await self.store.run(lambda r: table.set_chat_memory(r, session_id, enabled, now))

    async def memory_for(self, session_id: str) -> bool:
        """Whether the chat may search the user's other chats: its own switch, or its
        project's."""
        if await self.chat_memory(session_id):
            return True
        p = await self.project_of(session_id)
        return p is not None and p.memory

    async def _get(self, project_id: str) -> Project:
        found = await self.store.run(lambda r: table.project(r, project_id))
        if found is None:
            raise ProjectError(f"no project {project_id!r}")
        return found


def _name(name: str) -> str:
    clean = " ".join(str(name).split())
    if not clean:
        raise ProjectError("a project needs a name")
    if len(clean) > MAX_NAME:
        raise ProjectError(f"a project's name is at most {MAX_NAME} characters")
    return clean
