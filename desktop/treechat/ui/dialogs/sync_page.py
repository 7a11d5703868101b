"""Settings → Sync: where this computer syncs its history (a folder or a WebDAV server), the
passphrase that encrypts it, a sync now with its progress, when it last ran and what came in
(new chats, changes made elsewhere with their history, anything refused)."""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ...services.sync.engine import SyncReport
from ...services.sync.service import SyncError, SyncStatus, TargetConfig
from ..common.theme import colors_of

if TYPE_CHECKING:
    from ...services.sync.service import SyncService
    from ..common.tasks import BackgroundTasks

INTRO = (
    "Sync keeps one history on every computer you use, with no account: each computer adds "
    "its own files to a folder your sync tool carries (Syncthing, Dropbox, iCloud Drive, a "
    "network share) or to a WebDAV server, and reads the others'. Everything is encrypted "
    "with your passphrase before it leaves this computer; the folder or server sees only "
    "sizes and times. Use the same passphrase on every computer."
)
KINDS = (("folder", "A folder"), ("webdav", "A WebDAV server"))
WHAT = {"title": "renamed", "hidden": "deleted or restored", "pinned": "pinned or unpinned",
        "favourite": "marked or unmarked as a favourite", "settings": "chat settings changed",
        "model": "model changed", "preset": "preset changed", "setting": "connections changed"}


def when(at: float) -> str:
    return datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M")


class SyncPage(QWidget):
    def __init__(self, sync: SyncService, tasks: BackgroundTasks,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("SyncPage")
        self._sync = sync
        self._tasks = tasks
        intro = QLabel(INTRO)
        intro.setWordWrap(True)

        self.status_label = QLabel("Loading…")
        self.status_label.setWordWrap(True)
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.progress = QProgressBar()
        self.progress.setAccessibleName("Sync progress")
        self.progress.hide()
        self.sync_button = QPushButton("Sync now")
        self.sync_button.clicked.connect(self.sync_now)
        self.remove_button = QPushButton("Stop syncing")
        self.remove_button.setToolTip("Forget the target and its passphrase here; what came "
                                      "in stays, and the target is left as it is")
        self.remove_button.clicked.connect(self.remove)
        buttons = QHBoxLayout()
        buttons.addWidget(self.sync_button)
        buttons.addWidget(self.remove_button)
        buttons.addStretch(1)
        self.came_in = QListWidget()
        self._listing = 0  # which status the list of what came in is being made for
        self.came_in.setAccessibleName("What came in")
        self.came_in.setWordWrap(True)
        self.came_in.setMinimumHeight(90)
        status_box = QGroupBox("This computer")
        status_layout = QVBoxLayout(status_box)
        status_layout.addWidget(self.status_label)
        status_layout.addWidget(self.progress)
        status_layout.addLayout(buttons)
        self.came_in_label = QLabel("What came in at the last sync:")
        status_layout.addWidget(self.came_in_label)
        status_layout.addWidget(self.came_in, 1)

        self.kind = QComboBox()
        self.kind.setAccessibleName("Kind of target")
        for value, label in KINDS:
            self.kind.addItem(label, value)
        self.kind.currentIndexChanged.connect(self._kind_changed)
        self.location = QLineEdit()
        self.location.setAccessibleName("Folder or URL")
        self.browse = QPushButton("Choose…")
        self.browse.clicked.connect(self._browse)
        where = QHBoxLayout()
        where.addWidget(self.location, 1)
        where.addWidget(self.browse)
        self.user = QLineEdit()
        self.user.setAccessibleName("WebDAV user")
        self.password = QLineEdit()
        self.password.setAccessibleName("WebDAV password")
        self.password.setEchoMode(QLineEdit.EchoMode.Password)
        self.passphrase = QLineEdit()
        self.passphrase.setAccessibleName("Passphrase")
        self.passphrase.setEchoMode(QLineEdit.EchoMode.Password)
        self.passphrase.setPlaceholderText("Kept in the system keychain, never in Treechat's "
                                           "files")
        self.add_button = QPushButton("Start syncing")
        self.add_button.clicked.connect(self.add)
        self.add_error = QLabel("")
        self.add_error.setWordWrap(True)
        self.add_error.setObjectName("SyncError")
        add_box = QGroupBox("Sync through")
        self.add_box = add_box
        form = QFormLayout(add_box)
        form.addRow("Kind", self.kind)
        form.addRow("Where", where)
        form.addRow("User", self.user)
        form.addRow("Password", self.password)
        form.addRow("Passphrase", self.passphrase)
        form.addRow("", self.add_button)
        form.addRow("", self.add_error)
        self._form = form

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addWidget(status_box, 1)
        layout.addWidget(add_box)
        self._kind_changed()
        sync.listeners.append(self._synced)
        sync.progress_listeners.append(self._progress)
        self.destroyed.connect(lambda: self._forget(sync))
        self._tasks.spawn(self.refresh(), name="sync-status")

    def _forget(self, sync: SyncService) -> None:
        if self._synced in sync.listeners:
            sync.listeners.remove(self._synced)
        if self._progress in sync.progress_listeners:
            sync.progress_listeners.remove(self._progress)

    def _kind_changed(self) -> None:
        dav = self.kind.currentData() == "webdav"
        self.browse.setVisible(not dav)
        for field in (self.user, self.password):
            field.setEnabled(dav)
        self.location.setPlaceholderText("https://cloud.example.org/remote.php/dav/files/me/"
                                         "treechat" if dav else "A folder your sync tool "
                                         "carries")

    def _browse(self) -> None:
        dialog = QFileDialog(self, "Sync folder")
        dialog.setFileMode(QFileDialog.FileMode.Directory)
        dialog.fileSelected.connect(self.location.setText)
        dialog.open()

    # --- what the page shows ------------------------------------------------------------

    async def refresh(self) -> None:
        self.show_status(await self._sync.status())

    def show_status(self, status: SyncStatus) -> None:
        target = status.target
        self.sync_button.setEnabled(target is not None and not status.running)
        self.remove_button.setEnabled(target is not None)
        # one target at a time: the form is for setting one up (Stop syncing to change it)
        self.add_box.setVisible(target is None)
        for widget in (self.sync_button, self.remove_button, self.came_in_label,
                       self.came_in):
            widget.setVisible(target is not None)
        if target is None:
            self.status_label.setText("Not syncing. Choose a folder or a WebDAV server below.")
        else:
            kind = "folder" if target.kind == "folder" else "WebDAV"
            last = ("never yet" if status.last is None
                    else f"{when(status.last.at)}: {self._summary(status.last)}")
            text = f"Syncing through the {kind} {target.location}\nLast sync: {last}"
            if status.error:
                text += f"\nThe last try failed: {status.error}"
            self.status_label.setText(text)
        self._listing += 1
        self._tasks.spawn(self._list(status.last, self._listing), name="sync-came-in")

    @staticmethod
    def _summary(report: SyncReport) -> str:
        return (f"sent {report.sent_nodes} message{'s' * (report.sent_nodes != 1)}, "
                f"received {report.received_nodes}")

    async def _list(self, report: SyncReport | None, listing: int) -> None:
        """What came in at the last sync, once its renames' histories are read; a list made
        for an earlier status (its reads still out) is not shown over a newer one."""
        lines: list[tuple[str, bool]] = []
        if report is not None:
            lines += [(f"New chat: {title}", False) for title in report.new_chats]
            for field in report.changed:
                what, _, which = field.partition("/")
                if what == "title":
                    history = await self._sync.title_history(which)
                    edits = " → ".join(f"“{t}” ({who}, {when(at)})" for at, who, t in history)
                    lines.append((f"Renamed: {edits}", False))
                else:
                    lines.append((f"A chat was {WHAT.get(what, what)} on another computer"
                                  if what not in ("preset", "setting")
                                  else WHAT.get(what, what).capitalize(), False))
            lines += [(f"Refused {r.path}: {r.reason}", True) for r in report.refused]
        if listing != self._listing:
            return
        self.came_in.clear()
        for text, bad in lines or [("Nothing", False)]:
            item = QListWidgetItem(text)
            if bad:
                item.setForeground(QColor(colors_of(self.palette()).danger))
                item.setToolTip("This file did not open with the passphrase or was damaged; "
                                "nothing in it was imported")
            self.came_in.addItem(item)

    def _progress(self, phase: str, done: int, total: int) -> None:
        self.progress.setVisible(done < total)
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setFormat(f"{phase.capitalize()} %v of %m")

    def _synced(self, report: SyncReport | None, error: str) -> None:
        self.progress.hide()
        self._tasks.spawn(self.refresh(), name="sync-status")

    # --- what the user does -------------------------------------------------------------

    def sync_now(self) -> None:
        self.sync_button.setEnabled(False)

        async def work() -> None:
            with contextlib.suppress(SyncError):  # shown by `_synced` with the status
                await self._sync.sync_now()
            await self.refresh()

        self._tasks.spawn(work(), name="sync-now")

    def add(self) -> None:
        kind = str(self.kind.currentData())
        config = TargetConfig(kind, self.location.text().strip(),
                              self.user.text().strip() if kind == "webdav" else "")
        passphrase = self.passphrase.text()
        password = self.password.text() if kind == "webdav" else ""
        if not config.location:
            self.add_error.setText("Choose a folder or enter the server's URL.")
            return
        self.add_button.setEnabled(False)
        self.add_error.setStyleSheet("")
        self.add_error.setText("Checking…")

        async def work() -> None:
            try:
                await self._sync.add(config, passphrase, password)
            except SyncError as exc:
                self.add_error.setStyleSheet(f"color: {colors_of(self.palette()).danger};")
                self.add_error.setText(str(exc))
                self.add_button.setEnabled(True)
                return
            self.passphrase.clear()
            self.password.clear()
            self.add_error.setText("")
            self.add_button.setEnabled(True)
            await self.refresh()
            with contextlib.suppress(SyncError):  # shown by `_synced` with the status
                await self._sync.sync_now()  # the first sync, its progress on this page

        self._tasks.spawn(work(), name="sync-add")

    def remove(self) -> None:
        async def work() -> None:
            await self._sync.remove()
            await self.refresh()

        self._tasks.spawn(work(), name="sync-remove")
