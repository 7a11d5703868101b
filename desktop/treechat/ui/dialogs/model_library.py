"""Local models: the recommended ones, a Hugging Face search, the models on disk, downloads
with progress, pause, resume and cancel, running one, removing one, and pulling into a
detected Ollama. Non-modal; every action runs on the window's loop, the work on threads."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ...services.models.catalog import BUNDLED_ID
from ...services.models.model_library import (
    LIBRARY_CONNECTION,
    DownloadStopped,
    LibraryError,
    Progress,
    size_text,
)
from ..common.safe_controls import guard_wheel, never_default
from .model_library_rows import Row, bundled_row, installed_row, progress_text

if TYPE_CHECKING:
    from ...services.models.model_library import BundledModel, DownloadJob, ModelLibraryService
    from ..common.tasks import BackgroundTasks

log = logging.getLogger(__name__)

INTRO = (
    "Models that run on this computer, with no network once downloaded. Bigger models answer "
    "better and need more memory."
)


NOTHING_SELECTED = "Select a model to download it, use it in this chat or remove it."
BundledLookup = Callable[[], Awaitable["BundledModel | None"]]


class ModelLibraryDialog(QDialog):
    """`modelsChanged` fires when a model was downloaded, removed or started (the picker
    refreshes); `useRequested` carries the address of the model the user picked
    (`library/NAME`, or the bundled model's). `bundled` looks up the model shipped with the
    app, listed under "On this computer" with the downloaded ones."""

    modelsChanged = Signal()
    useRequested = Signal(str)

    def __init__(self, library: ModelLibraryService, tasks: BackgroundTasks, *,
                 ollama_url: str | None = None, bundled: BundledLookup | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Local models")
        self.setAccessibleName("Local models")
        self.setModal(False)
        self.resize(720, 520)
        self._library = library
        self._tasks = tasks
        self._ollama_url = ollama_url
        self._bundled = bundled
        self._job: DownloadJob | None = None
        self._confirm_remove: str | None = None
        self._shown_window: Row | None = None

        intro = QLabel(INTRO)
        intro.setWordWrap(True)
        self.search_field = QLineEdit()
        self.search_field.setPlaceholderText("Search Hugging Face for GGUF models…")
        self.search_field.setClearButtonEnabled(True)
        self.search_field.returnPressed.connect(self.search)
        self.search_button = QPushButton("Search")
        self.search_button.clicked.connect(self.search)
        search_row = QHBoxLayout()
        search_row.addWidget(self.search_field, 1)
        search_row.addWidget(self.search_button)

        self.tree = QTreeWidget()
        self.tree.setColumnCount(4)
        self.tree.setHeaderLabels(["Model", "Size", "Memory", "Licence"])
        self.tree.setRootIsDecorated(False)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.setUniformRowHeights(True)
        header = self.tree.header()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for column in (1, 2, 3):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(False)
        self.tree.currentItemChanged.connect(lambda *_: self._update_buttons())

        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setTextVisible(False)
        self.progress.hide()

        self.download_button = QPushButton("Download")
        self.download_button.clicked.connect(self.download)
        self.pause_button = QPushButton("Pause")
        self.pause_button.clicked.connect(self.pause)
        self.cancel_button = QPushButton("Cancel download")
        self.cancel_button.clicked.connect(self.cancel)
        self.window_spin = QSpinBox()
        self.window_spin.setRange(512, 131072)
        self.window_spin.setSingleStep(1024)
        self.window_spin.setSuffix(" tokens")
        self.window_spin.setToolTip("The context window to load the model with: chosen from its "
                                    "trained length and this computer's memory")
        self.window_label = QLabel("Window")
        # until a model is picked, what to do rather than a window for no model
        self.hint = QLabel(NOTHING_SELECTED)
        self.hint.setObjectName("DialogMuted")
        self.use_button = QPushButton("Use in this chat")
        self.use_button.clicked.connect(self.use)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self.remove)
        buttons = QHBoxLayout()
        for button in (self.download_button, self.pause_button, self.cancel_button):
            buttons.addWidget(button)
        buttons.addWidget(self.hint)
        buttons.addStretch(1)
        buttons.addWidget(self.remove_button)
        buttons.addWidget(self.window_label)
        buttons.addWidget(self.window_spin)
        buttons.addWidget(self.use_button)

        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(search_row)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.progress)
        layout.addWidget(self.status)
        layout.addLayout(buttons)
        if ollama_url is not None:
            layout.addLayout(self._ollama_row())
        # Enter never cancels, pauses or removes because focus happened to land there (a
        # button that turns itself off hands the focus to its neighbour)
        never_default(b for b in self.findChildren(QPushButton) if b is not self.search_button)
        guard_wheel(self)  # a passing wheel never changes the window size
        self._update_buttons()

    def _ollama_row(self) -> QHBoxLayout:
        self.ollama_field = QLineEdit()
        self.ollama_field.setPlaceholderText("A model from Ollama's library, e.g. llama3.2:3b")
        self.ollama_button = QPushButton("Pull into Ollama")
        self.ollama_button.clicked.connect(self.ollama_pull)
        row = QHBoxLayout()
        row.addWidget(QLabel("Ollama is running:"))
        row.addWidget(self.ollama_field, 1)
        row.addWidget(self.ollama_button)
        return row

    # --- the list -----------------------------------------------------------------------------

    def refresh(self) -> asyncio.Task[None]:
        self._tasks.spawn(self._check_hub(), name="model hub")
        return self._tasks.spawn(self._refresh(), name="model library")

    async def _check_hub(self) -> None:
        """Say at once when the hub cannot be reached: what is on disk is still listed and
        usable, searching and downloading wait for a network."""
        problem = await self._library.hub_problem()
        if problem is not None and not self.status.text():
            self.status.setText(f"{problem}. The models on this computer are listed and can "
                                "be used; search and download need the hub.")

    async def _refresh(self) -> None:
        recommended = await self._library.recommended()
        installed = await self._library.installed()
        partial = await self._library.partial()
        bundled = await self._bundled() if self._bundled is not None else None
        running = self._library.running
        selected = self.current_row()
        self.tree.clear()
        on_disk = {(m.repo, m.file): m for m in installed}
        windows = {m.name: (self._library.context_for(m), m.context_length or 0)
                   for m in installed}
        stopped = {(p.repo, p.file): p for p in partial}

        picks = self._section("Recommended")
        for rec in recommended:
            m = rec.model
            have = on_disk.get((m.repo, m.file))
            stop = stopped.get((m.repo, m.file))
            note = ("  ✓ downloaded" if have else
                    f"  · stopped at {stop.done * 100 // max(stop.size, 1)}%" if stop else "")
            memory = f"{m.ram_gb:g} GB" + ("" if rec.fits_ram else " (more than this computer)")
            window, trained = windows.get(have.name, (0, 0)) if have else (0, 0)
            self._add(picks, Row(m.repo, m.file, m.title, have.name if have else None,
                                 stop is not None, window, trained),
                      [f"{m.title}{note}\n{m.summary}", size_text(m.size_bytes), memory, m.license])

        mine = self._section("On this computer")
        if bundled is not None:
            self._add(mine, *bundled_row(bundled))
        for model in installed:
            if any(model.repo == r.model.repo and model.file == r.model.file for r in recommended):
                continue
            self._add(mine, *installed_row(model, windows[model.name][0],
                                           running is not None and running.name == model.name))
        for stop in partial:
            if any(stop.repo == r.model.repo and stop.file == r.model.file for r in recommended):
                continue
            self._add(mine, Row(stop.repo, stop.file, stop.file, None, True),
                      [f"{stop.file}  · stopped at {stop.done * 100 // max(stop.size, 1)}%\n"
                       f"{stop.repo}", size_text(stop.size), "", ""])
        if mine.childCount() == 0:
            mine.setHidden(True)
        self.tree.expandAll()
        self._select(selected)
        self._update_buttons()

    def _section(self, title: str) -> QTreeWidgetItem:
        item = QTreeWidgetItem(self.tree, [title])
        item.setFlags(Qt.ItemFlag.ItemIsEnabled)
        font = item.font(0)
        font.setBold(True)
        item.setFont(0, font)
        return item

    def _add(self, parent: QTreeWidgetItem, row: Row, texts: list[str]) -> QTreeWidgetItem:
        item = QTreeWidgetItem(parent, [t.split("\n")[0] for t in texts])
        item.setData(0, Qt.ItemDataRole.UserRole, row)
        if "\n" in texts[0]:
            item.setToolTip(0, texts[0].replace("\n", " — "))
            item.setText(0, texts[0].split("\n")[0] + "  —  " + texts[0].split("\n")[1])
        return item

    def _select(self, row: Row | None) -> None:
        if row is None:
            return
        for item in self._items():
            data = item.data(0, Qt.ItemDataRole.UserRole)
            if isinstance(data, Row) and (data.repo, data.file) == (row.repo, row.file):
                self.tree.setCurrentItem(item)
                return

    def _items(self) -> list[QTreeWidgetItem]:
        out = []
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            if top is not None:
                out += [c for j in range(top.childCount()) if (c := top.child(j)) is not None]
        return out

    def rows(self) -> list[Row]:
        return [d for it in self._items()
                if isinstance(d := it.data(0, Qt.ItemDataRole.UserRole), Row)]

    def current_row(self) -> Row | None:
        item = self.tree.currentItem()
        data = item.data(0, Qt.ItemDataRole.UserRole) if item is not None else None
        return data if isinstance(data, Row) else None

    def select(self, repo: str, file: str) -> None:
        self._select(Row(repo, file, ""))

    def _update_buttons(self) -> None:
        row = self.current_row()
        busy = self._job is not None
        this_job = busy and row is not None and self._job is not None and (
            self._job.repo, self._job.file) == (row.repo, row.file)
        installed = row is not None and row.installed_name is not None
        self.download_button.setEnabled(row is not None and not row.on_disk and not busy)
        self.download_button.setText("Resume" if row is not None and row.partial else "Download")
        self.pause_button.setEnabled(bool(this_job))
        self.cancel_button.setEnabled(bool(this_job) or (row is not None and row.partial
                                                         and not busy))
        self.use_button.setEnabled(row is not None and row.on_disk)
        self.remove_button.setEnabled(installed)
        self.remove_button.setToolTip("Shipped with Treechat: it cannot be removed"
                                      if row is not None and row.bundled else "")
        # the window is chosen for a downloaded model only; with none selected, a hint
        self.window_label.setVisible(installed)
        self.window_spin.setVisible(installed)
        self.window_spin.setEnabled(installed)
        self.hint.setVisible(row is None)
        if row is not None and installed and row.window and self._shown_window != row:
            self._shown_window = row
            self.window_spin.setMaximum(max(row.trained, row.window, 512))
            self.window_spin.setValue(row.window)
        if self._confirm_remove is not None and (row is None or row.installed_name
                                                 != self._confirm_remove):
            self._confirm_remove = None
        self.remove_button.setText("Remove — click again" if self._confirm_remove else "Remove")

    # --- actions ------------------------------------------------------------------------------

    def search(self) -> None:
        query = self.search_field.text().strip()
        if query:
            self._tasks.spawn(self._search(query), name="model search")

    async def _search(self, query: str) -> None:
        self.status.setText(f"Searching for “{query}”…")
        self.search_button.setEnabled(False)
        try:
            found = await self._library.search(query)
        except LibraryError as exc:
            self.status.setText(str(exc))
            return
        finally:
            self.search_button.setEnabled(True)
        results = self._results_section()
        for repo in found:
            try:
                files = await self._library.files(repo.repo)
            except LibraryError:
                continue
            for f in files:
                self._add(results, Row(f.repo, f.file, f.file),
                          [f"{f.file}\n{f.repo}", size_text(f.size), "", repo.license or ""])
        results.setExpanded(True)
        count = results.childCount()
        self.status.setText(f"{count} GGUF file{'s' if count != 1 else ''} for “{query}”."
                            if count else f"No GGUF models found for “{query}”.")

    def _results_section(self) -> QTreeWidgetItem:
        for i in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(i)
            if top is not None and top.text(0) == "Search results":
                top.takeChildren()
                return top
        return self._section("Search results")

    def download(self) -> None:
        row = self.current_row()
        if row is None or self._job is not None:
            return
        self._job = self._library.download(row.repo, row.file, on_progress=self._show_progress)
        self.progress.setValue(0)
        self.progress.show()
        self.status.setText(f"Downloading {row.title}…")
        self._update_buttons()
        self._tasks.spawn(self._wait(self._job, row), name="model download")

    def _show_progress(self, p: Progress) -> None:
        self.progress.setValue(int(p.fraction * 1000))
        self.status.setText(progress_text(p))

    async def _wait(self, job: DownloadJob, row: Row) -> None:
        try:
            model = await job.done()
        except DownloadStopped as stop:
            self.status.setText("Download cancelled; the partial file was removed."
                                if stop.cancelled else
                                "Paused. Resume picks up where it stopped, even after a restart.")
        except LibraryError as exc:
            self.status.setText(str(exc))
        else:
            self.status.setText(
                f"{row.title} is ready ({size_text(model.size)}, checksum verified).")
            self.modelsChanged.emit()
        finally:
            self._job = None
            self.progress.hide()
            await self._refresh()

    def pause(self) -> None:
        if self._job is not None:
            self._job.pause()

    def cancel(self) -> None:
        if self._job is not None:
            self._job.cancel()
            return
        row = self.current_row()
        if row is not None and row.partial:
            self._tasks.spawn(self._discard(row), name="discard download")

    async def _discard(self, row: Row) -> None:
        await self._library.discard_partial(row.repo, row.file)
        self.status.setText("The partial download was removed.")
        await self._refresh()

    def use(self) -> None:
        row = self.current_row()
        if row is not None and row.bundled:  # it starts with the chat's next message
            self.status.setText(f"{row.title} is this chat's model; it starts when a message "
                                "is sent.")
            self.useRequested.emit(BUNDLED_ID)
            return
        if row is not None and row.installed_name is not None:
            self._tasks.spawn(self._use(row.installed_name, self.window_spin.value()),
                              name="run local model")

    async def _use(self, name: str, window: int | None = None) -> None:
        self.status.setText(f"Loading {name}…")
        self.use_button.setEnabled(False)
        try:
            endpoint = await self._library.run(name, context=window)
        except LibraryError as exc:
            self.status.setText(str(exc))
        else:
            self.status.setText(f"{name} is running with a window of {endpoint.window:,} tokens.")
            self.modelsChanged.emit()
            self.useRequested.emit(f"{LIBRARY_CONNECTION}/{name}")
            await self._refresh()  # it is marked in use
        finally:
            self._update_buttons()

    def remove(self) -> None:
        row = self.current_row()
        if row is None or row.installed_name is None:
            return
        if self._confirm_remove != row.installed_name:
            self._confirm_remove = row.installed_name
            self._update_buttons()
            return
        self._confirm_remove = None
        self._tasks.spawn(self._remove(row.installed_name), name="remove local model")

    async def _remove(self, name: str) -> None:
        try:
            freed = await self._library.remove(name)
        except LibraryError as exc:
            self.status.setText(str(exc))
            return
        self.status.setText(
            f"Removed {name}; {size_text(freed)} freed. Chats made with it are kept.")
        self.modelsChanged.emit()
        await self._refresh()

    def ollama_pull(self) -> None:
        name = self.ollama_field.text().strip()
        if name and self._ollama_url is not None:
            self._tasks.spawn(self._ollama_pull(self._ollama_url, name), name="ollama pull")

    async def _ollama_pull(self, url: str, name: str) -> None:
        self.ollama_button.setEnabled(False)
        self.progress.setValue(0)
        self.progress.show()

        def report(status: str, done: int, total: int) -> None:
            if total:
                self.progress.setValue(int(done * 1000 / total))
                self.status.setText(f"Ollama: {status} · {size_text(done)} of {size_text(total)}")
            else:
                self.status.setText(f"Ollama: {status}")

        try:
            await self._library.ollama_pull(url, name, on_progress=report)
        except (LibraryError, OSError) as exc:
            self.status.setText(str(exc))
        else:
            self.status.setText(f"Ollama has {name}; it shows in the model picker.")
            self.modelsChanged.emit()
        finally:
            self.ollama_button.setEnabled(True)
            self.progress.hide()

    def closeEvent(self, event: QCloseEvent) -> None:
        # A download goes on while the dialog is closed; the window's tasks keep it alive.
        super().closeEvent(event)


def open_model_library(
    parent: QWidget, library: ModelLibraryService, tasks: BackgroundTasks,
    ollama_url: str | None = None, on_changed: Callable[[], None] | None = None,
    bundled: BundledLookup | None = None,
) -> ModelLibraryDialog:
    dialog = ModelLibraryDialog(library, tasks, ollama_url=ollama_url, bundled=bundled,
                                parent=parent)
    if on_changed is not None:
        dialog.modelsChanged.connect(on_changed)
    dialog.refresh()
    dialog.show()
    return dialog
