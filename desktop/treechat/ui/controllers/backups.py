"""Backups in the window: made on their own (at start when due, and soon after the first
change of a day), Help → Back up now, and Restore a backup…: the dialog, and the restore
itself, done in place:
turns are stopped (their text kept), unsent text saved, the store lets go of its file, the
backup is put there and opened, and the window shows the restored chats (list, open chat,
graph) without a restart. A restore that fails leaves the store as it was and says why."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

from ...services.store_life.backup_schedule import BackupSchedule
from ...services.store_life.backups import Backup, BackupError

if TYPE_CHECKING:
    from ..dialogs.restore_backup import RestoreBackupDialog
    from ..shell.main_window import MainWindow
    from .collaborators import RestoreHost
    from .conversation import ConversationController

log = logging.getLogger(__name__)


def help_or_file_menu(window: MainWindow) -> QMenu:
    """The Help menu when the window has one, else File."""
    menus = [a.menu() for a in window.menuBar().actions() if isinstance(a.menu(), QMenu)]
    for wanted in ("Help", "File"):
        for menu in menus:
            if isinstance(menu, QMenu) and menu.title().replace("&", "") == wanted:
                return menu
    return window.menuBar().addMenu("&Help")


class BackupsController:
    """Takes from the conversation only what it uses: the status line, its task spawner and
    tasks, the backups service, the preferences that keep unsent text, and the chats on show
    (`RestoreHost`) that a restore stops and starts again."""

    def __init__(self, window: MainWindow, conversation: ConversationController) -> None:
        services = conversation.services
        self._window = window
        self._status = conversation.parts.status
        self._spawn = conversation.spawn
        self._tasks = conversation.tasks
        self._chats: RestoreHost = conversation
        self._preferences = services.preferences
        self.service = services.backups
        self.dialog: RestoreBackupDialog | None = None
        self.restored: bool = False
        self._clock = conversation.clock
        self.schedule = BackupSchedule(self.service, conversation.clock, on_made=self._made)
        self.last_made: Backup | None = None
        self.back_up_action = QAction("Back up now", window)
        self.back_up_action.setObjectName("BackUpNowAction")
        self.back_up_action.triggered.connect(lambda *_: self._spawn(self.back_up_now(),
                                                                     name="backup"))
        self.action = QAction("Restore a backup…", window)
        self.action.setObjectName("RestoreBackupAction")
        self.action.triggered.connect(lambda *_: self.open_dialog())
        # when the newest backup was made, read at a glance (a line to read, not to click)
        self.last_action = QAction("Last backup: looking…", window)
        self.last_action.setEnabled(False)
        menu = help_or_file_menu(window)
        menu.addSeparator()
        menu.addAction(self.back_up_action)
        menu.addAction(self.action)
        menu.addAction(self.last_action)

    def start(self) -> None:
        """Back up on its own from now on (the first look at once)."""
        self.schedule.start()
        self._spawn(self._read_last(), name="last-backup")

    async def _read_last(self) -> None:
        try:
            found = await self.service.list()
        except OSError as exc:
            log.warning("the backups could not be listed: %s", exc)
            found = ()
        if self.last_made is None:  # one made meanwhile is newer
            self._show_last(found[0] if found else None)

    def _show_last(self, backup: Backup | None) -> None:
        self.last_made = backup
        if backup is None:
            self.last_action.setText("Last backup: none yet")
            return
        day = time.strftime("%Y-%m-%d", time.localtime(backup.created_at))
        today = time.strftime("%Y-%m-%d", time.localtime(self._clock.now()))
        when = time.strftime("%H:%M" if day == today else "%Y-%m-%d %H:%M",
                             time.localtime(backup.created_at))
        self.last_action.setText(f"Last backup: {'today ' if day == today else ''}{when}")

    async def close(self) -> None:
        await self.schedule.stop()

    def _made(self, backup: Backup) -> None:
        self._show_last(backup)
        log.info("backed up to %s", backup.path)

    async def back_up_now(self) -> Backup | None:
        self._status("Backing up…")
        try:
            backup = await self.service.create("manual")
        except (BackupError, OSError) as exc:
            self._status(f"The backup was not made: {exc}")
            return None
        self.schedule.note_made(backup)
        self._show_last(backup)
        when = time.strftime("%H:%M", time.localtime(backup.created_at))
        self._status(f"Backed up at {when} to {backup.path}")
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.refresh()
        return backup

    def open_dialog(self) -> RestoreBackupDialog:
        from ..dialogs.restore_backup import RestoreBackupDialog

        if self.dialog is None:
            self.dialog = RestoreBackupDialog(self.service, self._tasks, parent=self._window)
            self.dialog.restoreRequested.connect(
                lambda b: asyncio.ensure_future(self.restore(b)))
        self.dialog.refresh()
        self.dialog.show()
        self.dialog.raise_()
        return self.dialog

    async def restore(self, backup: Backup) -> None:
        dialog = self.dialog
        chats = self._chats
        opened = chats.current_session_id
        chats.stash_composer()
        await chats.turns.stop_all()
        await chats.tasks.cancel_all()
        unsent = dict(chats.drafts)
        shown = [s.id for s in await chats.sessions.list()]
        self.schedule.paused = True
        try:
            kept = await self.service.restore_in_place(backup)
        except (BackupError, OSError) as exc:
            log.error("restoring %s failed: %s", backup.path, exc)
            text = f"The backup was not restored: {exc}. The current store was not changed."
            ok = False
        else:
            ok = True
            log.info("restored %s in place; the replaced store is %s", backup.path, kept)
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(backup.created_at))
            text = f"Restored the backup of {when}: the chats are as they were then."
            if kept is not None:
                text += f" The store it replaced is kept as {kept}."
        finally:
            self.schedule.paused = False
        if ok:
            await self.service.reload_after_restore()
            for session_id in shown:
                chats.forget_view(session_id)
            chats.last_errors.clear()
            # The chat on screen was read from the replaced store: it is opened again from
            # the restored one, or, where the backup predates it, the window shows a new
            # chat holding what was typed into it.
            chats.show(None)
            restored = {s.id for s in await chats.sessions.list()}
            if opened is not None and opened not in restored:
                typed = unsent.pop(opened, "")
                if typed.strip() and not unsent.get("", "").strip():
                    unsent[""] = typed
                opened = None
                text += " The chat that was open is not in this backup."
        # What was typed and not sent stays, in the restored store too.
        await self._preferences.save_drafts(unsent)
        await chats.start(opened)
        if dialog is not None:
            dialog.show_result(text, done=ok)
        self._status(text)
        self.restored = self.restored or ok
