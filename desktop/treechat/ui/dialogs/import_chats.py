"""Import chats from another app's export: pick a file, follow the progress (cancel stops
between conversations), then a summary of what was added and what was skipped, and why."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCloseEvent, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QFileDialog,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QStackedWidget,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from ...core.imports import FORMAT_NAMES, ImportFileError
from ...services.transfer.importing import ImportProgress, ImportSummary
from .import_wording import INTRO, count_of, size_text, summary_text

if TYPE_CHECKING:
    from ...services.transfer.import_jobs import ImportJobs
    from ..common.tasks import BackgroundTasks

log = logging.getLogger(__name__)

FILE_FILTER = "Chat exports (*.json *.zip);;All files (*)"

class ImportDialog(QDialog):
    """Non-modal. `imported` carries the summary once an import stops (finished or
    cancelled); `openRequested` a session id the user asked to open."""

    imported = Signal(object)  # ImportSummary
    openRequested = Signal(str)

    def __init__(self, imports: ImportJobs, tasks: BackgroundTasks,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Import chats")
        self.setModal(False)
        self.setAccessibleName("Import chats")
        self.resize(560, 440)
        self._imports = imports
        self._tasks = tasks
        self._task: asyncio.Task[None] | None = None
        self._cancel: asyncio.Event | None = None
        self._file_dialog: QFileDialog | None = None
        self._summary: ImportSummary | None = None
        self.last_dir = str(Path.home())

        self.pages = QStackedWidget()
        self.pages.addWidget(self._choose_page())
        self.pages.addWidget(self._progress_page())
        self.pages.addWidget(self._result_page())

        self.choose_button = QPushButton("Choose file…")
        self.choose_button.setDefault(True)
        self.choose_button.clicked.connect(self.choose_file)
        self.open_button = QPushButton("Open first chat")
        self.open_button.setAccessibleName("Open the first imported chat")
        self.open_button.clicked.connect(self._open_first)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setAccessibleName("Cancel the import")
        self.cancel_button.clicked.connect(self.cancel)
        self.close_button = QPushButton("Close")
        self.close_button.clicked.connect(self.close)

        buttons = QHBoxLayout()
        buttons.addWidget(self.choose_button)
        buttons.addStretch(1)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.open_button)
        buttons.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(20, 18, 20, 16)
        layout.setSpacing(10)
        layout.addWidget(self.pages, 1)
        layout.addLayout(buttons)
        self._show_choose()

    # --- pages ---------------------------------------------------------------------

    def _choose_page(self) -> QWidget:
        page = QWidget()
        title = QLabel("Import chats")
        title.setObjectName("DialogHeadline")
        self._enlarge(title)
        intro = QLabel(INTRO)
        intro.setObjectName("ImportIntro")
        intro.setWordWrap(True)
        hint = QLabel("Importing the same file again adds only what is new. You can also "
                      "drop an export file onto the chat list.")
        hint.setObjectName("DialogMuted")
        hint.setWordWrap(True)
        box = QVBoxLayout(page)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(10)
        box.addWidget(title)
        box.addWidget(intro)
        box.addWidget(hint)
        box.addStretch(1)
        return page

    def _progress_page(self) -> QWidget:
        page = QWidget()
        self.progress_headline = QLabel("Reading the file…")
        self.progress_headline.setObjectName("DialogHeadline")
        self._enlarge(self.progress_headline)
        self.file_label = QLabel("")
        self.file_label.setObjectName("DialogMuted")
        self.file_label.setWordWrap(True)
        self.progress_bar = QProgressBar()
        self.progress_bar.setAccessibleName("Import progress")
        self.progress_bar.setRange(0, 0)  # busy until the number of conversations is known
        self.progress_bar.setTextVisible(False)
        self.current_title = QLabel("")
        self.current_title.setAccessibleName("Conversation being imported")
        self.current_title.setWordWrap(True)
        self.current_title.setTextFormat(Qt.TextFormat.PlainText)
        box = QVBoxLayout(page)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(10)
        box.addWidget(self.progress_headline)
        box.addWidget(self.file_label)
        box.addSpacing(6)
        box.addWidget(self.progress_bar)
        box.addWidget(self.current_title)
        box.addStretch(1)
        return page

    def _result_page(self) -> QWidget:
        page = QWidget()
        self.headline = QLabel("")
        self.headline.setObjectName("DialogHeadline")
        self.headline.setAccessibleName("Import result")
        self.headline.setWordWrap(True)
        self._enlarge(self.headline)
        self.detail = QLabel("")
        self.detail.setObjectName("DialogMuted")
        self.detail.setWordWrap(True)

        # The error reuses the banner's look (theme.py styles #ErrorBanner by level).
        self.error_box = QFrame()
        self.error_box.setObjectName("ErrorBanner")
        self.error_box.setProperty("level", "error")
        self.error_text = QLabel("")
        self.error_text.setObjectName("ErrorMessage")
        self.error_text.setAccessibleName("Import error")
        self.error_text.setWordWrap(True)
        self.error_text.setTextFormat(Qt.TextFormat.PlainText)
        self.error_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        error_row = QVBoxLayout(self.error_box)
        error_row.setContentsMargins(14, 10, 14, 10)
        error_row.addWidget(self.error_text)

        self.counts = QWidget()
        grid = QGridLayout(self.counts)
        grid.setContentsMargins(0, 4, 0, 4)
        grid.setHorizontalSpacing(18)
        grid.setVerticalSpacing(4)
        self.count_labels: dict[str, QLabel] = {}
        for row, (key, text) in enumerate((
            ("format", "Format"), ("sessions", "New chats"), ("nodes", "Messages"),
            ("branches", "Branches"), ("skipped", "Skipped"),
        )):
            name = QLabel(text)
            name.setObjectName("DialogMuted")
            value = QLabel("")
            value.setAccessibleName(text)
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            grid.addWidget(name, row, 0)
            grid.addWidget(value, row, 1)
            self.count_labels[key] = value
        grid.setColumnStretch(1, 1)

        # What the import wants the user to know (e.g. HEAD kept), in its own words.
        self.notes_label = QLabel("")
        self.notes_label.setAccessibleName("Import notes")
        self.notes_label.setWordWrap(True)
        self.notes_label.setTextFormat(Qt.TextFormat.PlainText)
        self.notes_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        # Chats that got a new branch while their HEAD stayed where the user had it.
        self.kept_title = QLabel("New branches, HEAD kept where you left it")
        self.kept_title.setObjectName("DialogHeadline")
        self.kept_list = QListWidget()
        self.kept_list.setAccessibleName("Chats with new branches")
        self.kept_list.setMaximumHeight(110)
        self.kept_list.itemActivated.connect(self._open_kept)
        self.open_kept_button = QPushButton("Open chat")
        self.open_kept_button.setAccessibleName("Open the selected chat with a new branch")
        self.open_kept_button.clicked.connect(lambda: self._open_kept(self.kept_list.currentItem()))
        self.kept_box = QWidget()
        kept_row = QHBoxLayout(self.kept_box)
        kept_row.setContentsMargins(0, 0, 0, 0)
        kept_row.addWidget(self.kept_list, 1)
        kept_row.addWidget(self.open_kept_button, 0, Qt.AlignmentFlag.AlignTop)

        self.skipped_title = QLabel("Skipped")
        self.skipped_title.setObjectName("DialogHeadline")
        self.skipped_model = QStandardItemModel(0, 3, self)
        self.skipped_model.setHorizontalHeaderLabels(["Conversation", "Item", "Reason"])
        self.skipped_table = QTableView()
        self.skipped_table.setAccessibleName("Skipped items")
        self.skipped_table.setModel(self.skipped_model)
        self.skipped_table.verticalHeader().setVisible(False)
        self.skipped_table.setShowGrid(False)
        # cells line up with the header's padding (theme.py pads QHeaderView sections 8px)
        self.skipped_table.setStyleSheet("QTableView::item { padding: 2px 4px; }")
        self.skipped_table.verticalHeader().setDefaultSectionSize(26)
        self.skipped_table.setWordWrap(False)
        self.skipped_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.skipped_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        header = self.skipped_table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)

        box = QVBoxLayout(page)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(8)
        box.addWidget(self.headline)
        box.addWidget(self.detail)
        box.addWidget(self.error_box)
        box.addWidget(self.counts)
        box.addWidget(self.notes_label)
        box.addWidget(self.kept_title)
        box.addWidget(self.kept_box)
        box.addWidget(self.skipped_title)
        box.addWidget(self.skipped_table, 1)
        self.result_stretch = QWidget()
        box.addWidget(self.result_stretch, 1)
        return page

    @staticmethod
    def _enlarge(label: QLabel) -> None:
        font = label.font()
        font.setPointSizeF(font.pointSizeF() * 1.3)
        label.setFont(font)

    def _buttons(self, *, choose: bool, cancel: bool, open_chat: bool) -> None:
        self.choose_button.setVisible(choose)
        self.cancel_button.setVisible(cancel)
        self.cancel_button.setEnabled(cancel)
        self.open_button.setVisible(open_chat)
        self.close_button.setVisible(not cancel)
        default = self.open_button if open_chat else self.choose_button
        default.setDefault(True)
        (self.choose_button if open_chat else self.open_button).setDefault(False)

    def _show_choose(self) -> None:
        self.pages.setCurrentIndex(0)
        self.choose_button.setText("Choose file…")
        self._buttons(choose=True, cancel=False, open_chat=False)

    # --- choosing a file -----------------------------------------------------------

    def choose_file(self) -> None:
        """A file dialog opened with open(): nothing waits for it; picking starts the import."""
        if self.running:
            return
        if self._file_dialog is None:
            dialog = QFileDialog(self, "Import chats", self.last_dir, FILE_FILTER)
            dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
            dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptOpen)
            dialog.fileSelected.connect(self.start_import)
            self._file_dialog = dialog
        self._file_dialog.open()

    @property
    def file_dialog(self) -> QFileDialog | None:
        return self._file_dialog

    # --- importing -----------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def summary(self) -> ImportSummary | None:
        return self._summary

    def start_import(self, path: str | Path) -> bool:
        """Import `path` unless an import is already running (then False)."""
        if self.running or not str(path):
            return False
        file = Path(path)
        self.last_dir = str(file.parent)
        self._summary = None
        self._cancel = asyncio.Event()
        self.progress_headline.setText("Reading the file…")
        self.file_label.setText(file.name)
        self.progress_bar.setRange(0, 0)
        self.current_title.setText("")
        self.cancel_button.setText("Cancel")
        self.pages.setCurrentIndex(1)
        self._buttons(choose=False, cancel=True, open_chat=False)
        self._task = self._tasks.spawn(self._run(file, self._cancel), name="import")
        return True

    async def _run(self, path: Path, cancel: asyncio.Event) -> None:
        try:
            summary = await self._imports.run(path, progress=self._progress, cancel=cancel)
        except ImportFileError as exc:
            self._show_error(str(exc))
            return
        except Exception as exc:  # a whole conversation is rolled back; say what happened
            log.exception("import of %s failed", path)
            self._show_error(f"The import stopped: {exc}. Chats imported before this "
                             "point are kept; importing the file again adds the rest.")
            self.imported.emit(None)
            return
        titles: dict[str, str] = {}
        if summary.kept_head:
            try:
                titles = await self._imports.titles(summary.kept_head)
            except Exception:  # the list then shows the ids; the import itself is done
                log.exception("reading the titles of imported chats failed")
        self._show_summary(summary, titles)
        self.imported.emit(summary)

    def _progress(self, p: ImportProgress) -> None:
        if p.stage == "reading":
            return
        self.progress_headline.setText(
            f"Importing {count_of(p.total, 'conversation')}…" if p.total else "Importing…")
        if not p.total and p.bytes_total:
            # A large file is read as it is written: how many conversations it holds is not
            # known, how far through its bytes the import is, is.
            self.current_title.setText(
                f"{size_text(p.bytes_done)} of {size_text(p.bytes_total)} read · "
                f"{count_of(p.done, 'conversation')} imported, last: {p.title or 'Untitled'}")
            self.progress_bar.setRange(0, 1000)
            self.progress_bar.setValue(min(1000, p.bytes_done * 1000 // p.bytes_total))
            return
        if p.done:
            self.current_title.setText(f"{p.done} of {p.total}: {p.title or 'Untitled'}")
        self.progress_bar.setRange(0, max(p.total, 1))
        self.progress_bar.setValue(p.done)

    def cancel(self) -> None:
        """Stop after the conversation being written (each is all-or-nothing)."""
        if self._cancel is None or not self.running:
            return
        self._cancel.set()
        self.cancel_button.setEnabled(False)
        self.cancel_button.setText("Cancelling…")
        self.progress_headline.setText("Stopping after this conversation…")

    # --- results -------------------------------------------------------------------

    def _show_error(self, message: str) -> None:
        self.headline.setText("This file can't be imported")
        self.detail.setText("Nothing was written.")
        self.error_text.setText(message)
        self.error_box.show()
        self.counts.hide()
        self.notes_label.hide()
        self.kept_title.hide()
        self.kept_box.hide()
        self.skipped_title.hide()
        self.skipped_table.hide()
        self.result_stretch.show()
        self.pages.setCurrentIndex(2)
        self.choose_button.setText("Choose another file…")
        self._buttons(choose=True, cancel=False, open_chat=False)

    def _show_summary(self, summary: ImportSummary,
                      titles: dict[str, str] | None = None) -> None:
        self._summary = summary
        self.notes_label.setText("\n".join(summary.notes))
        self.notes_label.setVisible(bool(summary.notes))
        self.kept_list.clear()
        for session_id in summary.kept_head:
            entry = QListWidgetItem((titles or {}).get(session_id, session_id))
            entry.setData(Qt.ItemDataRole.UserRole, session_id)
            entry.setToolTip("A new branch was added; double-click to open the chat")
            self.kept_list.addItem(entry)
        if self.kept_list.count():
            self.kept_list.setCurrentRow(0)
        self.kept_title.setVisible(bool(summary.kept_head))
        self.kept_box.setVisible(bool(summary.kept_head))
        name = FORMAT_NAMES.get(summary.source_format, summary.source_format)
        headline, detail = summary_text(summary)
        self.headline.setText(headline)
        self.detail.setText(detail)
        values = {
            "format": name,
            "sessions": f"{summary.sessions:,}",
            "nodes": f"{summary.nodes:,}",
            "branches": f"{summary.branches:,}",
            "skipped": f"{len(summary.skipped):,}",
        }
        for key, text in values.items():
            self.count_labels[key].setText(text)
        self.skipped_model.removeRows(0, self.skipped_model.rowCount())
        for item in summary.skipped:
            row = [QStandardItem(item.conversation or "—"), QStandardItem(item.source_id or "—"),
                   QStandardItem(item.reason)]
            for cell in row:
                cell.setToolTip(item.reason)
            self.skipped_model.appendRow(row)
        self.skipped_table.resizeColumnsToContents()
        for column, cap in ((0, 180), (1, 120)):
            self.skipped_table.setColumnWidth(
                column, min(self.skipped_table.columnWidth(column), cap))
        has_skipped = bool(summary.skipped)
        self.error_box.hide()
        self.counts.show()
        self.skipped_title.setVisible(has_skipped)
        self.skipped_table.setVisible(has_skipped)
        self.result_stretch.setVisible(not has_skipped)
        self.pages.setCurrentIndex(2)
        self.choose_button.setText("Import another file…")
        self._buttons(choose=True, cancel=False, open_chat=bool(summary.session_ids))

    def skipped_rows(self) -> list[tuple[str, str, str]]:
        """The skipped table as the user reads it: (conversation, item, reason)."""
        m = self.skipped_model
        return [(m.item(r, 0).text(), m.item(r, 1).text(), m.item(r, 2).text())
                for r in range(m.rowCount())]

    def kept_rows(self) -> list[tuple[str, str]]:
        """The chats whose HEAD was kept, as listed: (title, session id)."""
        return [(it.text(), str(it.data(Qt.ItemDataRole.UserRole)))
                for it in (self.kept_list.item(r) for r in range(self.kept_list.count()))]

    def _open_kept(self, item: QListWidgetItem | None) -> None:
        if item is None:
            return
        self.openRequested.emit(str(item.data(Qt.ItemDataRole.UserRole)))
        self.close()

    def _open_first(self) -> None:
        if self._summary is not None and self._summary.session_ids:
            self.openRequested.emit(self._summary.session_ids[0])
            self.close()

    # --- closing -------------------------------------------------------------------

    def reject(self) -> None:
        # Esc while importing cancels (between conversations) instead of hiding the dialog.
        if self.running:
            self.cancel()
            return
        super().reject()

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.running:
            self.cancel()
            event.ignore()
            return
        super().closeEvent(event)

    def reset(self) -> None:
        """Back to the first page for another import (keeps the last folder)."""
        if not self.running:
            self._show_choose()
