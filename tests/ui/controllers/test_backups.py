"""Backups from the window itself: Help → Back up now writes one and says where; the
window's schedule, once started, makes the start-up backup when none is recent."""

from __future__ import annotations

import time

from PySide6.QtWidgets import QMenu

from treechat.store.backup import list_backups

from ..conftest import Aio, Desk


def help_menu(desk: Desk) -> QMenu:
    for action in desk.window.menuBar().actions():
        menu = action.menu()
        if isinstance(menu, QMenu) and menu.title().replace("&", "") == "Help":
            return menu
    raise AssertionError("no Help menu")


def test_help_back_up_now_writes_a_backup(desk: Desk, aio: Aio) -> None:
    backups = desk.controller.backups
    assert backups is not None
    store = desk.services.store
    (action,) = [a for a in help_menu(desk).actions() if a.text() == "Back up now"]

    async def scenario() -> None:
        await desk.services.chat.sessions.create(title="Worth keeping")
        assert list_backups(store.path) == ()
        action.trigger()
        await aio.until(lambda: len(list_backups(store.path)) == 1, what="the backup")
        await desk.controller.tasks.idle()
        (made,) = list_backups(store.path)
        assert made.reason == "manual"
        assert "Backed up" in desk.window.statusBar().currentMessage()
        # Help says when the newest backup was made
        (last,) = [a for a in help_menu(desk).actions() if a.text().startswith("Last backup")]
        assert last.text().endswith(time.strftime("%H:%M", time.localtime(made.created_at)))
        assert not last.isEnabled()

    aio.run(scenario())


def test_the_schedule_backs_up_at_start_when_none_is_recent(desk: Desk, aio: Aio) -> None:
    backups = desk.controller.backups
    assert backups is not None
    store = desk.services.store

    async def scenario() -> None:
        backups.start()
        await aio.until(lambda: len(list_backups(store.path)) == 1, what="the start backup")
        await aio.until(lambda: backups.last_action.text() != "Last backup: looking…"
                        and "none" not in backups.last_action.text(), what="the line in Help")
        assert list_backups(store.path)[0].reason == "start"
        assert backups.schedule.running
        await backups.close()
        assert not backups.schedule.running

    aio.run(scenario())
