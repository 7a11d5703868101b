"""Pinned and favourite chats in the list: the list's menu pins a chat to the top or makes
it a favourite, and the ★ button beside New chat shows only the favourites."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QHBoxLayout, QMenu, QPushButton

from ...services.turns.chat_settings import ChatSettingsService
from ..sessions.list import SessionList
from .ports import OpenChat, Spawner


class ChatMarks(QObject):
    marksChanged = Signal()
    instructionsRequested = Signal(str)  # session id: the list's menu asked for them

    def __init__(self, parent: QObject, settings: ChatSettingsService, *, chat: OpenChat,
                 tasks: Spawner, session_list: SessionList) -> None:
        super().__init__(parent)
        self._settings = settings
        self._open = chat
        self._tasks = tasks
        self._list = session_list
        self.favourites_only = False
        self._favourites: frozenset[str] = frozenset()
        self.favourites_button = QPushButton("★")
        self.favourites_button.setObjectName("FavouritesFilter")
        self.favourites_button.setCheckable(True)
        self.favourites_button.setFlat(True)
        self.favourites_button.setAccessibleName("Only favourites")
        self.favourites_button.setToolTip("Show only favourite chats")
        self.favourites_button.toggled.connect(self.set_favourites_only)
        layout = session_list.layout()
        first = layout.itemAt(0) if layout is not None else None
        top = first.layout() if first is not None else None
        if isinstance(top, QHBoxLayout):
            top.insertWidget(top.indexOf(session_list.new_button), self.favourites_button)
        session_list.menuRequested.connect(self.session_menu)

    def session_menu(self, session_id: str, menu: QMenu) -> None:
        pinned = self._list.model.is_pinned(session_id)
        menu.addSeparator()
        menu.addAction("Instructions…", lambda: self.instructionsRequested.emit(session_id))
        menu.addAction("Unpin" if pinned else "Pin to top",
                       lambda: self._tasks.spawn(self.set_pinned(session_id, not pinned),
                                                 name="pin"))
        fav = session_id in self._favourites
        menu.addAction("Remove from favourites" if fav else "Add to favourites",
                       lambda: self._tasks.spawn(self.set_favourite(session_id, not fav),
                                                 name="favourite"))

    async def set_pinned(self, session_id: str, pinned: bool) -> None:
        await self._settings.set_pinned(session_id, pinned)
        await self.reload_marks()

    async def set_favourite(self, session_id: str, favourite: bool) -> None:
        await self._settings.set_favourite(session_id, favourite)
        await self.reload_marks()

    def set_favourites_only(self, on: bool) -> None:
        self.favourites_only = on
        self._tasks.spawn(self.reload_marks(), name="favourites")

    async def reload_marks(self) -> None:
        marks = await self._settings.marks()
        pinned = frozenset(k for k, m in marks.items() if m.pinned)
        self._favourites = frozenset(k for k, m in marks.items() if m.favourite)
        self._list.model.set_marks(
            pinned, self._favourites if self.favourites_only else None, self._favourites)
        current = self._open.current_session_id
        if current:
            self._list.select(current)
        self.marksChanged.emit()
