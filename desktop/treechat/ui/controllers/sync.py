"""Sync in the window's background: once the window is up, then a few seconds after each
finished reply or change to a chat, and every few minutes; the chat list and the open chat
are redrawn when something came in, and a long sync's progress is shown in the status line.
Timers, not a task left waiting: between syncs nothing of it runs."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer

from ...services.sync.service import SyncError, SyncService
from ...services.turns.sessions import SessionService
from ..common.tasks import loop_running
from .open_session import differs
from .wiring import ChatScreen, Refresh, Spawner, StatusLine

if TYPE_CHECKING:
    import asyncio

    from ...services.sync.engine import SyncReport

log = logging.getLogger(__name__)


class SyncController:
    """`changed` is to be called after each finished reply or change to the open chat."""

    def __init__(
        self,
        service: SyncService | None,
        *,
        parent: QObject,
        chat: ChatScreen,
        sessions: SessionService,
        is_running: Callable[[str], bool],
        reload_list: Refresh,
        status: StatusLine,
        tasks: Spawner,
    ) -> None:
        self.service = service
        self._chat = chat
        self._sessions = sessions
        self._is_running = is_running
        self._reload_list = reload_list
        self._status = status
        self._tasks = tasks
        self._task: asyncio.Task[Any] | None = None
        self._again = False  # a change came while a sync ran: one more after it
        self._quiet = QTimer(parent)
        self._quiet.setSingleShot(True)
        self._quiet.timeout.connect(self.sync_soon)
        self._every = QTimer(parent)
        self._every.timeout.connect(self.sync_soon)
        if self.service is None:
            return
        self.service.listeners.append(self._synced)
        self.service.progress_listeners.append(self._progress)

    def changed(self, *_: Any) -> None:
        if self.service is not None:  # restarted by each change: sync once things settle
            self._quiet.start(int(self.service.quiet * 1000))

    def start(self) -> None:
        if self.service is not None:
            self.sync_soon()
            self._every.start(int(self.service.every * 1000))

    def sync_soon(self) -> None:
        if not loop_running():
            return
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._again = False
        self._task = self._tasks.spawn(self._sync(), name="sync-background")

    async def _sync(self) -> None:
        service = self.service
        if service is None or await service.target() is None:
            return
        try:
            await service.sync_now()
        except SyncError as exc:  # shown in Settings → Sync; tried again later
            log.info("background sync: %s", exc)
        if self._again:
            self._quiet.start(int(service.quiet * 1000))

    async def close(self) -> None:
        self._quiet.stop()
        self._every.stop()
        if self.service is None:
            return
        if self._synced in self.service.listeners:  # a second close finds them gone
            self.service.listeners.remove(self._synced)
        if self._progress in self.service.progress_listeners:
            self.service.progress_listeners.remove(self._progress)

    def _progress(self, phase: str, done: int, total: int) -> None:
        if total > 1:  # a first sync or a long absence: say how far it is
            self._status(f"Sync: {phase} {done} of {total}")

    def _synced(self, report: SyncReport | None, error: str) -> None:
        if report is None or not (report.received_nodes or report.changed or report.new_chats):
            return
        self._status(f"Sync: {report.received_nodes} message"
                     f"{'s' * (report.received_nodes != 1)} from other computers")
        self._tasks.spawn(self._reload_list(), name="sync-reload-list")
        self._tasks.spawn(self._redraw_open(), name="sync-redraw")

    async def _redraw_open(self) -> None:
        """The open chat with what came in (a reply streaming here is left alone)."""
        chat = self._chat
        shown = chat.current_view
        if shown is None or self._is_running(shown.session.id):
            return
        fresh = await self._sessions.view(shown.session.id)
        if chat.current_view is shown and differs(shown, fresh):
            chat.show_updated(fresh)
