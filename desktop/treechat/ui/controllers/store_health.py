"""A damaged store in the window: the persistent banner that says what is wrong and how out
(restore a backup, export what can still be read), and the refusal of a send with the same
words instead of a failed write. The store says it is damaged when it opens (it then opens
read-only) or once the integrity check that runs beside the first reads has finished."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QBoxLayout, QFileDialog, QHBoxLayout, QWidget

from ...services.store_life.store_state import StoreError
from ..shell.damaged_store_banner import DamagedStoreBanner

if TYPE_CHECKING:
    from ..shell.main_window import MainWindow
    from .conversation import ConversationController

log = logging.getLogger(__name__)

CHECK_INTERVAL_MS = 1000  # how often the window looks whether the background check is done
RESTORE_TEXT = "Restore a backup"


class StoreHealth(QObject):
    """Owned by the controller (its Qt child); `of(c)` finds it. Takes from the controller
    only the store-health service, the status line and the task spawner."""

    def __init__(self, window: MainWindow, c: ConversationController) -> None:
        super().__init__(c)
        self.setObjectName("StoreHealth")
        self._window = window
        self._health = c.services.store_health
        self._status = c.parts.status
        self._spawn = c.spawn
        self._export_dialog: QFileDialog | None = None
        self.banner = DamagedStoreBanner()
        self.banner.restoreRequested.connect(self._restore)
        self.banner.exportRequested.connect(self.choose_export_folder)
        self._holder = QWidget()
        row = QHBoxLayout(self._holder)
        row.setContentsMargins(16, 6, 16, 0)  # the failed-turn banner's margins
        row.addWidget(self.banner)
        self._holder.hide()
        self._place(self._holder)
        self._timer = QTimer(self)
        self._timer.setInterval(CHECK_INTERVAL_MS)
        self._timer.timeout.connect(self.check)
        self.check()
        if self.message is None and not self._health.check_finished():
            self._timer.start()  # the check is still reading the file

    @classmethod
    def of(cls, owner: QObject) -> StoreHealth | None:
        return owner.findChild(StoreHealth, "StoreHealth")

    def _place(self, banner: QWidget) -> None:
        # Just above the composer, in the centre column beside the failed-turn banner.
        composer = self._window.composer
        holder = composer.parentWidget()
        column = holder.layout() if holder is not None else None
        if isinstance(column, QBoxLayout):
            index = column.indexOf(composer)
            column.insertWidget(index, banner)
            return
        banner.setParent(self._window)  # a window without its column: shown at its top

    @property
    def message(self) -> str | None:
        return self._health.damage_message()

    # --- showing -----------------------------------------------------------------------

    def check(self) -> bool:
        """Show the banner if the store is damaged (True); stop looking once the check is done."""
        if self._health.check_finished():
            self._timer.stop()
        message = self.message
        if message is None:
            return False
        self._timer.stop()
        self.banner.offer_restore(self._restore_action() is not None)
        if self.banner.isHidden():
            log.error("the window's store is damaged: %s", message)
        self.banner.show_damage(message)
        self._holder.show()
        return True

    def refuse_send(self) -> bool:
        """True (and the reason in the banner and the status line) when nothing can be sent."""
        if not self.check():
            return False
        self._status("Not sent: the conversation store is damaged and read-only. "
                     "Your message is still in the box.")
        return True

    # --- the ways out ------------------------------------------------------------------

    def _restore_action(self) -> QAction | None:
        """The window's Help → Restore a backup… command, if it has one."""
        for action in self._window.findChildren(QAction):
            if action.text().replace("&", "").startswith(RESTORE_TEXT):
                return action
        return None

    def _restore(self) -> None:
        action = self._restore_action()
        if action is not None:
            action.trigger()

    def choose_export_folder(self) -> None:
        """A folder dialog opened with open(): picking one starts the export."""
        if self._export_dialog is None:
            dialog = QFileDialog(self._window, "Export readable chats to a folder",
                                 str(Path.home()))
            dialog.setFileMode(QFileDialog.FileMode.Directory)
            dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
            dialog.fileSelected.connect(
                lambda folder: self._spawn(self.export_readable(Path(folder)),
                                           name="export-readable"))
            self._export_dialog = dialog
        self._export_dialog.open()

    @property
    def export_dialog(self) -> QFileDialog | None:
        return self._export_dialog

    async def export_readable(self, folder: Path) -> tuple[list[Path], list[str]]:
        """Every chat that can still be read, one Treechat JSON file each, into `folder`;
        returns the files written and the titles of the chats that could not be read."""
        try:
            done = await self._health.export_readable(folder)
        except StoreError as exc:
            self._status(f"The chats could not be listed: {exc}")
            return [], []
        written, unreadable = list(done.written), list(done.unreadable)
        said = f"Exported {len(written)} chat{'s' if len(written) != 1 else ''} to {folder}"
        if unreadable:
            said += f"; {len(unreadable)} could not be read: " + ", ".join(unreadable)
        self._status(said + ".")
        return written, unreadable


def connect_store_health(window: MainWindow, c: ConversationController) -> StoreHealth:
    return StoreHealth(window, c)
