"""The banner a damaged store keeps above the composer for as long as the window is open:
what is wrong (the store's own words), that nothing is written, and the ways out (restore a
backup, export what can still be read). It has no close button: the store stays read-only
until a backup is restored, so the reason stays in sight."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

TITLE = "The conversation store is damaged: nothing is being saved"
WITHOUT_RESTORE_ACTION = " Restore a backup from Help → Restore a backup…."


class DamagedStoreBanner(QFrame):
    """`restoreRequested` / `exportRequested` when their buttons are pressed; the restore
    button is shown only once `offer_restore(True)` says the window can restore."""

    restoreRequested = Signal()
    exportRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # the failed-turn banner's look (theme.py styles #ErrorBanner by level)
        self.setObjectName("ErrorBanner")
        self.setProperty("level", "error")
        self.setAccessibleName("The conversation store is damaged")
        self._can_restore = False
        self._message = ""

        self.title = QLabel(TITLE)
        self.title.setObjectName("ErrorTitle")
        self.message = QLabel("")
        self.message.setObjectName("ErrorMessage")
        self.message.setWordWrap(True)
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        text = QVBoxLayout()
        text.setSpacing(2)
        text.addWidget(self.title)
        text.addWidget(self.message)

        self.restore_button = QPushButton("Restore a backup…")
        self.restore_button.setObjectName("BannerAction")
        self.restore_button.setAccessibleName("Restore a backup")
        self.restore_button.clicked.connect(self.restoreRequested)
        self.export_button = QPushButton("Export readable chats…")
        self.export_button.setObjectName("BannerAction")
        self.export_button.setAccessibleName("Export the chats that can still be read")
        self.export_button.clicked.connect(self.exportRequested)
        actions = QVBoxLayout()
        actions.setSpacing(6)
        actions.addWidget(self.restore_button)
        actions.addWidget(self.export_button)
        actions.addStretch(1)

        row = QHBoxLayout(self)
        row.setContentsMargins(14, 10, 14, 10)
        row.setSpacing(10)
        row.addLayout(text, 1)
        row.addLayout(actions)
        self.restore_button.hide()
        self.hide()

    def show_damage(self, message: str) -> None:
        """Show (or keep showing) the store's message."""
        self._message = message
        self._fill()
        self.show()

    def offer_restore(self, available: bool) -> None:
        """Whether the window has a Restore a backup… command the button can run; without it
        the text says where to find it instead."""
        self._can_restore = available
        self._fill()

    def _fill(self) -> None:
        self.restore_button.setVisible(self._can_restore)
        text = self._message
        if not self._can_restore and "Help → Restore a backup" not in text:
            text += WITHOUT_RESTORE_ACTION
        self.message.setText(text)
        self.setAccessibleDescription(f"{TITLE}. {text}")
