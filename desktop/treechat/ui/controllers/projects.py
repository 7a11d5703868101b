"""Projects in the chat list: made, renamed, given instructions and memory across chats through
their dialog, chats moved in and out from a chat's menu (all the picked ones) or by dragging
them onto a project, the last move undone from the banner, deleted without their chats; and
the knowledge of a chat or a project from the same menus (the open chat's from the window's
Chat menu too)."""

from __future__ import annotations

import contextlib
from collections.abc import Coroutine
from typing import Any

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMainWindow, QMenu, QWidget

from ...services.projects import Project, ProjectError, ProjectService
from ...services.turns.chat_service import ChatService
from ...services.turns.sessions import SessionView
from ..projects.project_dialog import ProjectDialog, ProjectFields
from ..shell.parts import WindowParts
from .knowledge import KnowledgeController, Target
from .wiring import Spawner, StatusLine


class ProjectsController:
    def __init__(self, chat: ChatService, *, parts: WindowParts, tasks: Spawner,
                 status: StatusLine) -> None:
        self.service: ProjectService = chat.tools.projects
        self._parts = parts
        self._tasks = tasks
        self._status = status
        self._projects: dict[str, Project] = {}
        self._member_of: dict[str, str] = {}
        self.dialog: ProjectDialog | None = None
        self.knowledge = KnowledgeController(chat, self.service, window=parts.window,
                                             status=status, tasks=tasks)
        self._moved: list[tuple[str, str | None]] = []  # the last move: chat, where it was
        parts.sessions.menuRequested.connect(self.chat_menu)
        parts.sessions.projectMenuRequested.connect(self.project_menu)
        parts.sessions.chatsDropped.connect(
            lambda chats, pid: self.move_chats(list(chats), str(pid) or None))
        parts.sessions.dropHint.connect(lambda text: self._status(str(text)))
        parts.banner.actionTriggered.connect(self._banner_action)
        # the window's menus offer what the chat list's menus do, for the chat on screen
        self._shown: Target | None = None
        self.knowledge_action = QAction("Knowledge for this chat…", parts.window)
        self.knowledge_action.setEnabled(False)
        self.knowledge_action.triggered.connect(lambda *_: self._open_shown_knowledge())
        self.new_project_action = QAction("New project…", parts.window)
        self.new_project_action.triggered.connect(lambda *_: self.new_project(None))
        chat_menu = window_menu(parts.window, "Chat")
        if chat_menu is not None:
            chat_menu.addAction(self.knowledge_action)
        file_menu = window_menu(parts.window, "File")
        if file_menu is not None:  # beside "New chat", not after "Quit"
            actions = file_menu.actions()
            new_chat = getattr(parts.window, "new_chat_action", None)
            at = actions.index(new_chat) + 1 if new_chat in actions else len(actions)
            if at < len(actions):
                file_menu.insertAction(actions[at], self.new_project_action)
            else:
                file_menu.addAction(self.new_project_action)

    def _open_shown_knowledge(self) -> None:
        if self._shown is not None:
            self.knowledge.open_panel(self._shown)

    def close(self) -> None:
        self.knowledge.close()

    async def reload(self) -> None:
        found = await self.service.all()
        self._projects = {p.id: p for p in found.projects}
        self._member_of = dict(found.member_of or {})
        self._parts.sessions.set_projects([(p.id, p.name) for p in found.projects],
                                          self._member_of)

    def chat_opened(self, view: SessionView | None) -> None:
        self._shown = None if view is None else Target(
            "chat", view.session.id, view.session.title or "Untitled")
        self.knowledge_action.setEnabled(view is not None)
        if view is not None:
            self.knowledge.chat_opened(view.session.id, view.session.title or "Untitled")

    # --- menus ---------------------------------------------------------------------------

    def chat_menu(self, session_id: str, menu: object) -> None:
        if not isinstance(menu, QMenu):
            return
        title = self._title(session_id)
        picked = self._parts.sessions.selected_session_ids()
        # the menu of one of several picked chats moves them all
        chats = picked if session_id in picked and len(picked) > 1 else [session_id]
        several = f" ({len(chats)} chats)" if len(chats) > 1 else ""
        menu.addSeparator()
        into = menu.addMenu(f"Move to project{several}")
        into.setObjectName("MoveToProjectMenu")
        current = {self._member_of.get(s, "") for s in chats}
        for p in sorted(self._projects.values(), key=lambda p: p.name.lower()):
            act = QAction(p.name, into)
            act.setCheckable(True)
            act.setChecked(current == {p.id})
            act.triggered.connect(lambda *_, pid=p.id: self.move_chats(chats, pid))
            into.addAction(act)
        if self._projects:
            into.addSeparator()
        into.addAction("New project…", lambda: self.new_project(session_id))
        if current - {""}:
            menu.addAction(f"Take out of its project{several}",
                           lambda: self.move_chats(chats, None))
        menu.addAction("Knowledge…",
                       lambda: self.knowledge.open_panel(Target("chat", session_id, title)))
        memory = QAction("Search my other chats (memory)", menu)
        memory.setCheckable(True)
        memory.setToolTip("Let this chat's model search your other chats")
        memory.triggered.connect(lambda on: self.set_chat_memory(session_id, bool(on)))
        menu.addAction(memory)
        self._tasks.spawn(self._check_memory(session_id, memory), name="memory-mark")

    async def _check_memory(self, session_id: str, action: QAction) -> None:
        on = await self.service.chat_memory(session_id)
        with contextlib.suppress(RuntimeError):  # the menu closed before the answer came
            action.setChecked(on)

    def project_menu(self, project_id: str, menu: object) -> None:
        if not isinstance(menu, QMenu):
            return
        project = self._projects.get(project_id)
        if project is None:
            menu.addAction("New project…", lambda: self.new_project(None))
            return
        menu.addAction("Edit project…", lambda: self.edit_project(project_id))
        menu.addAction("Knowledge…", lambda: self.knowledge.open_panel(
            Target("project", project_id, project.name)))
        memory = QAction("Its chats search my other chats (memory)", menu)
        memory.setCheckable(True)
        memory.setChecked(project.memory)
        memory.triggered.connect(lambda on: self.update(project_id, memory=bool(on)))
        menu.addAction(memory)
        menu.addSeparator()
        menu.addAction("New project…", lambda: self.new_project(None))
        menu.addAction("Delete project (its chats are kept)",
                       lambda: self.delete(project_id))

    # --- what they do ----------------------------------------------------------------------

    def new_project(self, move_in: str | None) -> ProjectDialog:
        dialog = ProjectDialog(self._parts.window)
        dialog.saved.connect(lambda fields: self._spawn(self._create(fields, move_in)))
        self.dialog = dialog
        dialog.open()  # not exec(): no nested event loop under qasync
        return dialog

    async def _create(self, fields: ProjectFields, move_in: str | None) -> None:
        made = await self.service.create(fields.name, fields.instructions)
        if fields.memory:
            await self.service.update(made.id, memory=True)
        if move_in is not None:
            await self.service.move(move_in, made.id)
        await self.reload()
        self._status(f"Project “{made.name}” made" + (" with this chat in it" if move_in
                                                      else ""))

    def edit_project(self, project_id: str) -> ProjectDialog | None:
        p = self._projects.get(project_id)
        if p is None:
            return None
        dialog = ProjectDialog(self._parts.window, ProjectFields(p.name, p.instructions,
                                                                 p.memory),
                               title=f"Project “{p.name}”")
        dialog.saved.connect(lambda f: self.update(project_id, name=f.name,
                                                   instructions=f.instructions,
                                                   memory=f.memory))
        self.dialog = dialog
        dialog.open()
        return dialog

    def update(self, project_id: str, *, name: str | None = None,
               instructions: str | None = None, memory: bool | None = None) -> None:
        async def work() -> None:
            await self.service.update(project_id, name=name, instructions=instructions,
                                      memory=memory)
            await self.reload()

        self._spawn(work())

    def move_chats(self, chats: list[str], project_id: str | None) -> None:
        """Put `chats` in the project (None: out of any); the banner offers to undo it."""
        def was(s: str) -> str | None:
            return self._member_of.get(s) or None

        moving = [(s, was(s)) for s in chats if was(s) != project_id]
        if not moving:
            return

        async def work() -> None:
            done: list[tuple[str, str | None]] = []
            try:
                for session_id, before in moving:
                    await self.service.move(session_id, project_id)
                    done.append((session_id, before))
            finally:  # what did move can be put back, even when a later one failed
                self._moved = done
            await self.reload()
            where = self._projects.get(project_id or "")
            what = (f"“{self._title(moving[0][0])}”" if len(moving) == 1
                    else f"{len(moving)} chats")
            out_of = "its project" if len(moving) == 1 else "their projects"
            said = (f"Moved {what} to “{where.name}”" if where
                    else f"Took {what} out of {out_of}")
            # the list keeps the open chat current: the moved ones were not opened
            self._parts.banner.show_notice(said, "", ("undo_move",), hide_after_ms=10_000)

        self._spawn(work())

    def undo_move(self) -> None:
        """Put the chats of the last move back where they were."""
        moved, self._moved = self._moved, []
        if not moved:
            return

        async def work() -> None:
            for session_id, project_id in moved:
                await self.service.move(session_id, project_id)
            await self.reload()
            said = f"Put back {len(moved)} chat{'s' if len(moved) != 1 else ''}"
            self._parts.banner.show_notice(said, "", (), hide_after_ms=4_000)

        self._spawn(work())

    def _banner_action(self, key: str) -> None:
        if key == "undo_move":
            self.undo_move()

    def _title(self, session_id: str) -> str:
        session = self._parts.sessions.session(session_id)
        return (session.title if session is not None else "") or "Untitled"

    def delete(self, project_id: str) -> None:
        p = self._projects.get(project_id)

        async def work() -> None:
            await self.service.remove(project_id)
            await self.reload()
            self._status(f"Project “{p.name if p else ''}” deleted; its chats are kept")

        self._spawn(work())

    def set_chat_memory(self, session_id: str, enabled: bool) -> None:
        async def work() -> None:
            await self.service.set_chat_memory(session_id, enabled)
            self._status("This chat may search your other chats" if enabled
                         else "This chat no longer searches your other chats")

        self._spawn(work())

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        async def guarded() -> None:
            try:
                await coro
            except ProjectError as exc:
                self._status(str(exc))

        self._tasks.spawn(guarded(), name="projects")


def window_menu(window: QWidget, title: str) -> QMenu | None:
    """The window's menu named `title` ("Chat"), if it has a menu bar with one."""
    bar = window.menuBar() if isinstance(window, QMainWindow) else None
    for action in bar.actions() if bar is not None else ():
        menu = action.menu()
        if isinstance(menu, QMenu) and menu.title().replace("&", "") == title:
            return menu
    return None
