"""Replies a `treechat send` could not write while this window held the store: the command
keeps such a reply in a journal beside the store and gives up after a while; the window
looks for those every few seconds, has the services take them into the store (as recovered
replies) and shows them in their chats."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer

from ..common.tasks import loop_running

if TYPE_CHECKING:
    from ...core.model import Node
    from .collaborators import ShownChats
    from .conversation import ConversationController

log = logging.getLogger(__name__)

LOOK_EVERY_MS = 5000


class CommandReplies(QObject):
    """Owned by the controller (its Qt child). Takes from it only the command-replies
    service, whether a chat's turn is running, the chats on show, the status line and the
    task spawner."""

    def __init__(self, c: ConversationController, interval_ms: int = LOOK_EVERY_MS) -> None:
        super().__init__(c)
        self.setObjectName("CommandReplies")
        self._replies = c.services.command_replies
        self._is_running = c.services.chat.is_running
        self._chats: ShownChats = c
        self._status = c.parts.status
        self._spawn = c.spawn
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
        self._spawn(self._adopt(), name="command-replies")

    async def _adopt(self) -> None:
        try:
            nodes = await self._replies.adopt()
        finally:
            self._busy = False
        if not nodes:
            return
        self.adopted.extend(nodes)
        log.info("took in %d reply(s) written by a command while the window held the store",
                 len(nodes))
        chats = self._chats
        await chats.session_list.reload()
        sessions = {n.session_id for n in nodes}
        for session_id in sessions:
            chats.forget_view(session_id)
        opened = chats.current_session_id
        if opened in sessions and not self._is_running(opened):
            await chats.load_session(opened)
        count = "A reply" if len(nodes) == 1 else f"{len(nodes)} replies"
        self._status(f"{count} written by `treechat send` while this window held the store "
                     "was added to its chat.")


def connect_command_replies(c: ConversationController) -> CommandReplies:
    return CommandReplies(c)
