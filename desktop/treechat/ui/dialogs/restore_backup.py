"""Help → Restore a backup…: the store's backups, newest first (when, why, how big), each
read through before it is offered, and the chosen one restored once the user confirms: the
window lets go of its store, puts the backup in place (the replaced store is kept beside it)
and opens it again, and the dialog says what happened. Non-modal; `restoreRequested` asks the
window to do the restore."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

if TYPE_CHECKING:
    from ...services.store_life.backups import Backup, BackupService
    from ..common.tasks import BackgroundTasks

INTRO = (
    "Restoring puts the chosen backup in place of the conversation store: the chats become "
    "what they were when it was made. The current store is kept beside it, not deleted. "
    "Replies being written are stopped first (what they wrote is kept in the current store)."
)


def describe(backup: Backup) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(backup.created_at))
    return f"{when} — {backup.reason} — {backup.size / 1_000_000:.1f} MB"


class RestoreBackupDialog(QDialog):
    restoreRequested = Signal(object)  # Backup

    def __init__(self, backups: BackupService, tasks: BackgroundTasks,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Restore a backup")
        self.setAccessibleName("Restore a backup")
        self.resize(520, 360)
        self._backups = backups
        self._tasks = tasks
        self.items: list[Backup] = []
        self.confirmation: QMessageBox | None = None
        intro = QLabel(INTRO)
        intro.setWordWrap(True)
        intro.setObjectName("DialogMuted")
        self.list = QListWidget()
        self.list.setAccessibleName("Backups")
        self.list.currentRowChanged.connect(lambda _r: self._selected())
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.restore_button = QPushButton("Restore")
        self.restore_button.setAutoDefault(False)  # Enter never starts a restore
        self.restore_button.setEnabled(False)
        self.restore_button.clicked.connect(self._restore)
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(close)
        buttons.addWidget(self.restore_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 14, 16, 14)
        layout.addWidget(intro)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.message)
        layout.addLayout(buttons)

    def refresh(self) -> None:
        self._tasks.spawn(self._load(), name="backups")

    async def _load(self) -> None:
        self.items = list(await self._backups.list())
        self.list.clear()
        for backup in self.items:
            item = QListWidgetItem(describe(backup))
            item.setToolTip(str(backup.path))
            self.list.addItem(item)
        if not self.items:
            self.message.setText(f"No backups yet in {self._backups.folder}.")
        else:
            self.list.setCurrentRow(0)

    def chosen(self) -> Backup | None:
        row = self.list.currentRow()
        return self.items[row] if 0 <= row < len(self.items) else None

    def _selected(self) -> None:
        self.restore_button.setEnabled(False)
        backup = self.chosen()
        if backup is None:
            return
        self.message.setText("Reading the backup through…")

        async def check() -> None:
            report = await self._backups.verify(backup)
            if self.chosen() is not backup:
                return
            if report.ok:
                self.message.setText("This backup reads whole.")
                self.restore_button.setEnabled(True)
            else:
                self.message.setText(f"This backup is damaged and cannot be restored: "
                                     f"{report.problem or 'a table could not be read'}")

        self._tasks.spawn(check(), name="verify-backup")

    def _restore(self) -> None:
        """Ask first: restoring replaces every chat with the backup's."""
        backup = self.chosen()
        if backup is None:
            return
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            "Restore this backup?",
            f"Restore the backup of {describe(backup)}?",
            QMessageBox.StandardButton.Cancel,
            self,
        )
        box.setInformativeText(
            "The chats become what they were when it was made; anything written since is "
            "not in it. The current store is kept beside the restored one, so nothing is "
            "deleted."
        )
        confirm = box.addButton("Restore", QMessageBox.ButtonRole.AcceptRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.setObjectName("RestoreBackupConfirmation")

        def answered() -> None:
            self.confirmation = None
            if box.clickedButton() is confirm and self.chosen() is backup:
                self._start_restore(backup)

        box.finished.connect(lambda _code: answered())
        self.confirmation = box
        box.open()  # not exec(): this may run inside the window's event loop coroutine

    def _start_restore(self, backup: Backup) -> None:
        self.restore_button.setEnabled(False)
        self.list.setEnabled(False)
        self.message.setText("Stopping replies, closing the store and restoring…")
        self.restoreRequested.emit(backup)

    def show_result(self, text: str, *, done: bool) -> None:
        self.message.setText(text)
        self.list.setEnabled(not done)
        self.restore_button.setEnabled(not done and self.chosen() is not None)
