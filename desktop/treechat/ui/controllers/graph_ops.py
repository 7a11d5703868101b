"""Operations on the graph from the chat view: switch to another version of a message
(drawn from the graph on screen, the chat not read again), branch into a new chat, pin or
unpin. HEAD moves; nothing is sent."""

from __future__ import annotations

from ...core.clock import Clock
from ...core.model import GraphError
from ...services.turns.sessions import SessionService
from ..chat.view import ChatView
from ..sessions.list import SessionList
from .turn_views import moved_view
from .wiring import ChatNavigator, OccupancyRefresh, Spawner, StatusLine


class GraphOperations:
    def __init__(
        self,
        nav: ChatNavigator,
        *,
        chat: ChatView,
        listed: SessionList,
        sessions: SessionService,
        occupancy: OccupancyRefresh,
        status: StatusLine,
        tasks: Spawner,
        clock: Clock,
    ) -> None:
        self._nav = nav
        self._listed = listed
        self._sessions = sessions
        self._occupancy = occupancy
        self._status = status
        self._tasks = tasks
        self._clock = clock
        chat.branchRequested.connect(self.branch)
        chat.pinRequested.connect(self.pin)
        chat.versionRequested.connect(self.switch_version)
        chat.copyRequested.connect(lambda _node_id: status("Copied to the clipboard"))

    def switch_version(self, node_id: str, index: int) -> None:
        """Show another version of a message: HEAD moves, nothing is sent."""
        nav = self._nav
        view = nav.current_view
        if view is None:
            return

        async def work() -> None:
            try:
                moved = await self._sessions.switch_version_of(view, node_id, index)
            except GraphError as exc:
                self._status(str(exc))
                return
            if nav.current_session_id != view.session.id:
                return
            shown = nav.current_view
            if shown is not None and shown.graph is view.graph:
                nav.redraw(moved_view(view, moved))  # the graph on screen is the one moved in
            else:
                # the chat on screen moved on while HEAD moved (a reply landed): read it
                fresh = await self._sessions.view(view.session.id)
                if nav.current_session_id != view.session.id:
                    return
                nav.redraw(fresh)
            await self._occupancy.refresh()

        self._tasks.spawn(work(), name="switch-version")

    def step_version(self, delta: int) -> None:
        """Alt+Left / Alt+Right: the previous or next version of the last message that has
        more than one."""
        view = self._nav.current_view
        if view is None:
            return
        for node in reversed(view.path):
            if node.role == "tool":
                continue
            n, m = view.version(node.id)
            if m > 1:
                target = n + delta
                if 1 <= target <= m:
                    self.switch_version(node.id, target)
                return

    def branch(self, node_id: str) -> None:
        view = self._nav.current_view
        if view is None:
            return

        async def work() -> None:
            session = await self._sessions.branch(view.session.id, node_id)
            self._listed.upsert(session, self._clock.now())
            self._listed.select(session.id)
            await self._nav.load_session(session.id)
            self._status(f"Branched into “{session.title}”")

        self._tasks.spawn(work(), name="branch")

    def pin(self, node_id: str, pinned: bool) -> None:
        nav = self._nav
        view = nav.current_view
        if view is None:
            return

        async def work() -> None:
            updated = await self._sessions.annotate(
                view.session.id, node_id, "pin" if pinned else "unpin"
            )
            if nav.current_session_id == view.session.id:
                nav.redraw(updated)
                await self._occupancy.refresh()

        self._tasks.spawn(work(), name="pin")
