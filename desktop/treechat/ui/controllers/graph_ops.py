"""Operations on the graph from the chat view: switch to another version of a message,
branch into a new chat, pin or unpin. HEAD moves; nothing is sent."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...core.model import GraphError

if TYPE_CHECKING:
    from .conversation import ConversationController


class GraphOperations:
    def __init__(self, conversation: ConversationController) -> None:
        self._c = conversation
        chat = conversation.parts.chat
        chat.branchRequested.connect(self.branch)
        chat.pinRequested.connect(self.pin)
        chat.versionRequested.connect(self.switch_version)
        chat.copyRequested.connect(lambda _node_id: conversation.parts.status(
            "Copied to the clipboard"))

    def switch_version(self, node_id: str, index: int) -> None:
        """Show another version of a message: HEAD moves, nothing is sent."""
        c = self._c
        view = c.current_view
        if view is None:
            return

        async def work() -> None:
            try:
                updated = await c.sessions.switch_version(view.session.id, node_id, index)
            except GraphError as exc:
                c.parts.status(str(exc))
                return
            if c.current_session_id == view.session.id:
                c.redraw(updated)
                await c.occupancy.refresh()

        c.spawn(work(), name="switch-version")

    def step_version(self, delta: int) -> None:
        """Alt+Left / Alt+Right: the previous or next version of the last message that has
        more than one."""
        view = self._c.current_view
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
        c = self._c
        view = c.current_view
        if view is None:
            return

        async def work() -> None:
            session = await c.sessions.branch(view.session.id, node_id)
            c.parts.sessions.upsert(session, c.clock.now())
            c.parts.sessions.select(session.id)
            await c.load_session(session.id)
            c.parts.status(f"Branched into “{session.title}”")

        c.spawn(work(), name="branch")

    def pin(self, node_id: str, pinned: bool) -> None:
        c = self._c
        view = c.current_view
        if view is None:
            return

        async def work() -> None:
            updated = await c.sessions.annotate(
                view.session.id, node_id, "pin" if pinned else "unpin"
            )
            if c.current_session_id == view.session.id:
                c.redraw(updated)
                await c.occupancy.refresh()

        c.spawn(work(), name="pin")
