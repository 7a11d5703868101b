"""Restore a backup… in the window's menus: the dialog, and the restore itself, which needs
the store closed: turns are stopped (their text kept), unsent text saved, the services and the
store closed, the backup put in place, then the window says what happened and quits."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

from ...services.backups import Backup, BackupError, BackupService

if TYPE_CHECKING:
    from ..dialogs.restore_backup import RestoreBackupDialog
    from ..shell.main_window import MainWindow
    from .conversation import ConversationController

log = logging.getLogger(__name__)

QUIT_AFTER_MS = 4000


def help_or_file_menu(window: MainWindow) -> QMenu:
    """The Help menu when the window has one, else File."""
    menus = [a.menu() for a in window.menuBar().actions() if isinstance(a.menu(), QMenu)]
    for wanted in ("Help", "File"):
        for menu in menus:
            if isinstance(menu, QMenu) and menu.title().replace("&", "") == wanted:
                return menu
    return window.menuBar().addMenu("&Help")


class BackupsController:
    def __init__(self, window: MainWindow, conversation: ConversationController) -> None:
        self._window = window
        self._c = conversation
        self.service = BackupService(conversation.services.store.path)
        self.dialog: RestoreBackupDialog | None = None
        self.restored: bool = False
        self.action = QAction("Restore a backup…", window)
        self.action.setObjectName("RestoreBackupAction")
        self.action.triggered.connect(lambda *_: self.open_dialog())
        help_or_file_menu(window).addAction(self.action)

    def open_dialog(self) -> RestoreBackupDialog:
        from ..dialogs.restore_backup import RestoreBackupDialog

        if self.dialog is None:
            self.dialog = RestoreBackupDialog(self.service, self._c.tasks, parent=self._window)
            self.dialog.restoreRequested.connect(
                lambda b: asyncio.ensure_future(self.restore(b)))
        self.dialog.refresh()
        self.dialog.show()
        self.dialog.raise_()
        return self.dialog

    async def restore(self, backup: Backup) -> None:
        dialog = self.dialog
        c = self._c
        await c.close()
        await c.services.close()
        await asyncio.to_thread(c.services.close_store)
        try:
            kept = await self.service.restore(backup)
        except (BackupError, OSError) as exc:
            log.error("restoring %s failed: %s", backup.path, exc)
            text = (f"The backup was not restored: {exc}. Nothing was changed; Treechat quits "
                    "now, open it again to go on.")
        else:
            self.restored = True
            log.info("restored %s; the replaced store is %s", backup.path, kept)
            text = f"Restored the backup of {backup.name}."
            if kept is not None:
                text += f" The store it replaced is kept as {kept}."
            text += " Treechat quits now: open it again to see the restored chats."
        if dialog is not None:
            dialog.show_result(text, done=True)
        from PySide6.QtCore import QTimer

        QTimer.singleShot(QUIT_AFTER_MS, self._window.close)
