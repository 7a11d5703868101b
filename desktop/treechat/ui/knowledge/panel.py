"""The knowledge panel of a chat or a project: the folders and files its model searches, each
knowledge base with its files, passages and state, indexing progress (files/s and time left),
and Add folder / Add files / Re-index / Remove. Folders and files dropped on it are added.
It only shows and asks; the controller does the work, off the GUI thread."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtGui import (
    QDragEnterEvent,
    QDragMoveEvent,
    QDropEvent,
    QStandardItem,
    QStandardItemModel,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListView,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

BASE_ROLE = Qt.ItemDataRole.UserRole + 1


@dataclass(frozen=True, slots=True)
class BaseRow:
    """One knowledge base as the panel lists it."""

    name: str
    paths: tuple[str, ...]
    files: int = 0
    passages: int = 0
    state: str = "indexed"  # "indexed", "indexing", "waiting", or what went wrong
    inherited: str = ""  # the project it comes from, for a chat's panel ("" for its own)


def progress_text(name: str, done: int, total: int, files_per_s: float,
                  seconds_left: float) -> str:
    """How indexing goes, in words: files done, the rate and the time left."""
    if total and done >= total:
        return f"Indexed “{name}”: {total:,} file{'s' if total != 1 else ''}."
    rate = f" · {files_per_s:.1f} files/s" if files_per_s > 0 else ""
    left = ""
    if files_per_s > 0 and done:
        left = (f" · about {seconds_left:.0f} s left" if seconds_left < 90
                else f" · about {seconds_left / 60:.0f} min left")
    return f"Indexing “{name}”: {done:,} of {total:,} files{rate}{left}"


def row_text(row: BaseRow) -> str:
    counts = f"{row.files:,} file{'s' if row.files != 1 else ''}, {row.passages:,} passages"
    origin = f" · from project “{row.inherited}”" if row.inherited else ""
    lines = [f"{row.name} — {counts} · {row.state}{origin}", *row.paths]
    return "\n".join(lines)


class KnowledgePanel(QDialog):
    addRequested = Signal(object)  # list[str]: folders and files to add
    reindexRequested = Signal(str)  # base name
    removeRequested = Signal(str)  # base name
    progressShown = Signal(str)  # what the status line says of indexing, as it changes

    def __init__(self, parent: QWidget | None, title: str, kind: str = "chat") -> None:
        """`kind` is what the knowledge is for: "chat" or "project"."""
        super().__init__(parent)
        self.setObjectName("KnowledgePanel")
        self.setWindowTitle(f"Knowledge — {title}")
        self.setAccessibleName(f"Knowledge of {title}")
        self.setAcceptDrops(True)
        self.target_title = title
        whose = "this project's chats" if kind == "project" else "this chat"
        hint = QLabel(f"Folders and files the model searches for {whose}, by meaning as well "
                      "as by words; a reply cites the passages it used. Drop folders or files "
                      "here to add them. Text, Markdown, code, PDF and HTML are read.")
        hint.setObjectName("EmptyHint")
        hint.setWordWrap(True)
        self.hint = hint
        self.model = QStandardItemModel(self)
        self.list = QListView()
        self.list.setObjectName("KnowledgeBases")
        self.list.setAccessibleName("Knowledge bases")
        self.list.setModel(self.model)
        self.list.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.list.setWordWrap(True)
        self.list.setSpacing(3)
        self.list.selectionModel().currentChanged.connect(self._current_changed)
        self.empty = QLabel("Nothing added yet.")
        self.empty.setObjectName("EmptyHint")
        self.progress = QProgressBar()
        self.progress.setObjectName("KnowledgeProgress")
        self.progress.setAccessibleName("Indexing progress")
        self.progress.setTextVisible(False)
        self.progress.hide()
        self.status = QLabel("")
        self.status.setObjectName("KnowledgeStatus")
        self.status.setWordWrap(True)
        self.add_folder = QPushButton("Add folder…")
        self.add_files = QPushButton("Add files…")
        self.reindex = QPushButton("Re-index")
        self.remove = QPushButton("Remove")
        close = QPushButton("Close")
        self.reindex.setToolTip("Read again the files that changed since they were indexed")
        self.remove.setToolTip("Stop searching it (the files themselves are untouched)")
        self.add_folder.clicked.connect(lambda: self._ask(folder=True))
        self.add_files.clicked.connect(lambda: self._ask(folder=False))
        self.reindex.clicked.connect(lambda: self._for_current(self.reindexRequested.emit))
        self.remove.clicked.connect(lambda: self._for_current(self.removeRequested.emit))
        close.clicked.connect(self.close)
        buttons = QHBoxLayout()
        for b in (self.add_folder, self.add_files, self.reindex, self.remove):
            buttons.addWidget(b)
        buttons.addStretch(1)
        buttons.addWidget(close)
        box = QVBoxLayout(self)
        box.addWidget(hint)
        box.addWidget(self.list, 1)
        box.addWidget(self.empty)
        box.addWidget(self.progress)
        box.addWidget(self.status)
        box.addLayout(buttons)
        self.file_dialog: QFileDialog | None = None
        self.rows: tuple[BaseRow, ...] = ()
        self.set_bases(())
        self.resize(620, 420)

    # --- what it shows -------------------------------------------------------------------

    def set_bases(self, rows: Sequence[BaseRow]) -> None:
        keep = self.current_base()
        self.rows = tuple(rows)
        self.model.clear()
        for row in self.rows:
            item = QStandardItem(row_text(row))
            item.setData(row.name, BASE_ROLE)
            item.setToolTip("\n".join(row.paths))
            item.setAccessibleText(f"{row.name}, {row.files} files, {row.state}")
            self.model.appendRow(item)
        self.empty.setVisible(not self.rows)
        self.list.setVisible(bool(self.rows))
        for r in range(self.model.rowCount()):
            if self.model.item(r).data(BASE_ROLE) == keep:
                self.list.setCurrentIndex(self.model.index(r, 0))
        self._current_changed(self.list.currentIndex(), QModelIndex())

    def set_progress(self, name: str, done: int, total: int, files_per_s: float,
                     seconds_left: float) -> None:
        self.progress.setVisible(done < total)
        self.progress.setRange(0, max(1, total))
        self.progress.setValue(done)
        text = progress_text(name, done, total, files_per_s, seconds_left)
        self.status.setText(text)
        self.progressShown.emit(text)

    def say(self, text: str) -> None:
        self.progress.hide()
        self.status.setText(text)

    def current_base(self) -> str | None:
        index = self.list.currentIndex()
        value = index.data(BASE_ROLE) if index.isValid() else None
        return str(value) if value else None

    def _current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        name = current.data(BASE_ROLE) if current.isValid() else None
        row = next((r for r in self.rows if r.name == name), None)
        self.reindex.setEnabled(row is not None)
        # a project's knowledge is removed from the project, not from one of its chats
        self.remove.setEnabled(row is not None and not row.inherited)

    # --- what it asks ----------------------------------------------------------------------

    def _for_current(self, then: Callable[[str], object]) -> None:
        name = self.current_base()
        if name:
            then(name)

    def _ask(self, *, folder: bool) -> None:
        dialog = QFileDialog(self, "Add a folder" if folder else "Add files")
        dialog.setFileMode(QFileDialog.FileMode.Directory if folder
                           else QFileDialog.FileMode.ExistingFiles)
        dialog.filesSelected.connect(lambda paths: self.addRequested.emit(list(paths)))
        self.file_dialog = dialog
        dialog.open()  # not exec(): no nested event loop under qasync

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if _local_paths(event):
            event.acceptProposedAction()

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:
        if _local_paths(event):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = _local_paths(event)
        if paths:
            event.acceptProposedAction()
            self.addRequested.emit(paths)


def _local_paths(event: QDropEvent) -> list[str]:
    mime = event.mimeData()
    if mime is None or not mime.hasUrls():
        return []
    return [u.toLocalFile() for u in mime.urls() if u.isLocalFile()]
