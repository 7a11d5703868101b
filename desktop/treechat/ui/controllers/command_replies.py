"""Replies a `treechat send` could not write while this window held the store: the command
keeps such a reply in a journal beside the store and gives up after a while; the window
looks for those every few seconds, takes them into the store (as recovered replies) and
shows them in their chats."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer

from ...services.store_life.recovery import adopt_journals, has_journals
from ..common.tasks import loop_running

if TYPE_CHECKING:
    from ...core.model import Node
    from .conversation import ConversationController

log = logging.getLogger(__name__)

LOOK_EVERY_MS = 5000


class CommandReplies(QObject):
    """Owned by the controller (its Qt child)."""

    def __init__(self, c: ConversationController, interval_ms: int = LOOK_EVERY_MS) -> None:
        super().__init__(c)
        self.setObjectName("CommandReplies")
        self._c = c
        self._busy = False
        self.adopted: list[Node] = []
        self.timer = QTimer(self)
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self.look)
        self.timer.start()

    def look(self) -> None:
        if self._busy or not loop_running():
            return
        self._busy = True
        self._c.spawn(self._adopt(), name="command-replies")

    async def _adopt(self) -> None:
        c = self._c
        store = c.services.store
        try:
            if store.released or not await asyncio.to_thread(has_journals, store):
                return
            nodes = await asyncio.to_thread(adopt_journals, store, clock=c.clock)
        finally:
            self._busy = False
        if not nodes:
            return
        self.adopted.extend(nodes)
        log.info("took in %d reply(s) written by a command while the window held the store",
                 len(nodes))
        await c.session_list.reload()
        sessions = {n.session_id for n in nodes}
        for session_id in sessions:
            c.forget_view(session_id)
        opened = c.current_session_id
        if opened in sessions and not c.chat_service.is_running(opened):
            await c.load_session(opened)
        count = "A reply" if len(nodes) == 1 else f"{len(nodes)} replies"
        c.parts.status(f"{count} written by `treechat send` while this window held the store "
                       "was added to its chat.")


def connect_command_replies(c: ConversationController) -> CommandReplies:
    return CommandReplies(c)
