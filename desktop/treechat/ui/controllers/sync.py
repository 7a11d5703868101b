"""Sync in the window's background: once the window is up, then after each finished reply
or change to a chat, and every few minutes; the chat list and the open chat are redrawn when
something came in, and a first sync's progress is shown in the status line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...services.sync.engine import SyncReport
    from .conversation import ConversationController


class SyncController:
    def __init__(self, conversation: ConversationController) -> None:
        self._c = conversation
        self.service = conversation.services.sync
        if self.service is None:
            return
        conversation.turnFinished.connect(self._changed)
        conversation.viewChanged.connect(self._changed)
        self.service.listeners.append(self._synced)
        self.service.progress_listeners.append(self._progress)

    def _changed(self, *_: Any) -> None:
        if self.service is not None:
            self.service.changed()

    def start(self) -> None:
        if self.service is not None:
            self.service.start()

    async def close(self) -> None:
        if self.service is None:
            return
        await self.service.stop()
        self.service.listeners.remove(self._synced)
        self.service.progress_listeners.remove(self._progress)

    def _progress(self, phase: str, done: int, total: int) -> None:
        if total > 1:  # a first sync or a long absence: say how far it is
            self._c.parts.status(f"Sync: {phase} {done} of {total}")

    def _synced(self, report: SyncReport | None, error: str) -> None:
        if report is None or not (report.received_nodes or report.changed or report.new_chats):
            return
        c = self._c
        c.parts.status(f"Sync: {report.received_nodes} message"
                       f"{'s' * (report.received_nodes != 1)} from other computers")
        c.spawn(c.session_list.reload(), name="sync-reload-list")
        c.spawn(self._redraw_open(), name="sync-redraw")

    async def _redraw_open(self) -> None:
        """The open chat with what came in (a reply streaming here is left alone)."""
        from .conversation import differs

        c = self._c
        shown = c.current_view
        if shown is None or c.chat_service.is_running(shown.session.id):
            return
        fresh = await c.sessions.view(shown.session.id)
        if c.current_view is shown and differs(shown, fresh):
            c.show_updated(fresh)
