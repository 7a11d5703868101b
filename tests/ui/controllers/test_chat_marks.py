"""Pinned chats first in the list, and the favourites filter."""

from __future__ import annotations

from PySide6.QtWidgets import QMenu

from treechat.store.database import Store

from ..conftest import Aio, chat_session
from .controls_desk import controls, shoot


def test_pinned_chats_come_first_and_favourites_filter(desk_with: object, aio: Aio) -> None:
    def seed(store: Store) -> None:
        chat_session(store, "old", "Oldest chat", 1_600_000_000.0, ["a", "b"])
        chat_session(store, "mid", "Middle chat", 1_650_000_000.0, ["a", "b"])
        chat_session(store, "new", "Newest chat", 1_700_000_000.0, ["a", "b"])

    desk = desk_with(seed)  # type: ignore[operator]
    c = controls(desk)
    model = desk.window.sessions.model

    def titles() -> list[str]:
        return [str(model.index(i).data()) for i in range(model.rowCount())]

    menu = QMenu()
    desk.window.sessions.menuRequested.emit("old", menu)
    next(a for a in menu.actions() if a.text() == "Pin to top").trigger()
    aio.run(aio.until(lambda: titles()[:2] == ["Pinned", "Oldest chat"], what="pinned"))
    menu = QMenu()
    desk.window.sessions.menuRequested.emit("old", menu)
    assert "Unpin" in [a.text() for a in menu.actions()]
    menu = QMenu()
    desk.window.sessions.menuRequested.emit("mid", menu)
    next(a for a in menu.actions() if a.text() == "Add to favourites").trigger()
    aio.run(desk.controller.tasks.idle())
    shoot(desk, "pinned")
    c.marks.favourites_button.setChecked(True)
    aio.run(aio.until(lambda: "Newest chat" not in titles(), what="filter"))
    assert [t for t in titles() if t.endswith("chat")] == ["★ Middle chat"]
    c.marks.favourites_button.setChecked(False)
    aio.run(aio.until(lambda: "Newest chat" in titles(), what="filter off"))
    assert aio.run(desk.services.chat.settings.listed())[0].session.id == "old"
