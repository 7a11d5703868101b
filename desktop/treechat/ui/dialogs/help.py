"""The Help menu's dialogs: every keyboard shortcut (searchable), About (version, data
folder, log folder, with buttons to open them) and Report a problem (the report, where it was
saved and where to send it)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ...services.problem_report import AppInfo, where_to_send

# Key names as the window's hints write them (Qt's native text says "Return" and "Left").
_KEY_WORDS = (("Return", "Enter"), ("Left", "←"), ("Right", "→"), ("Up", "↑"), ("Down", "↓"))


def key_text(key: str) -> str:
    """One key combination as the hints write it: "Ctrl+Return" -> "Ctrl+Enter"."""
    parts = key.split("+")
    last = parts[-1]
    for qt, shown in _KEY_WORDS:
        if last == qt:
            last = shown
    return "+".join([*parts[:-1], last])


def shortcut_rows(actions: Sequence[tuple[Sequence[str], str]],
                  hints: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The shortcuts list: first the `hints` exactly as the empty window shows them, then
    each action (its key combinations, what it does) whose keys the hints do not already
    name, one row per action with its keys joined by "or" (never a bare "/")."""
    named = {k.strip() for keys, _ in hints for k in keys.replace(" or ", "\n").split("\n")}
    rows: list[tuple[str, str]] = list(hints)
    for keys, what in actions:
        shown = list(dict.fromkeys(key_text(k) for k in keys if k.strip()))
        if not shown or set(shown) <= named:
            continue
        row = (" or ".join(shown), what)
        if row not in rows:
            rows.append(row)
    return rows


class ShortcutsDialog(QDialog):
    """Every shortcut, filtered by what is typed (in the keys or in what they do)."""

    def __init__(self, shortcuts: Sequence[tuple[str, str]], parent: QWidget | None = None
                 ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.setObjectName("ShortcutsDialog")
        self.resize(520, 480)
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search shortcuts…")
        self.search.setClearButtonEnabled(True)
        self.table = QTableWidget(len(shortcuts), 2)
        self.table.setHorizontalHeaderLabels(["Keys", "Action"])
        # the headers sit over their columns' text, which is left-aligned
        self.table.horizontalHeader().setDefaultAlignment(
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        for row, (keys, what) in enumerate(shortcuts):
            self.table.setItem(row, 0, QTableWidgetItem(keys))
            self.table.setItem(row, 1, QTableWidgetItem(what))
        self.table.resizeColumnToContents(0)
        self.search.textChanged.connect(self._filter)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.search)
        layout.addWidget(self.table, 1)
        layout.addWidget(buttons)

    def _filter(self, text: str) -> None:
        needle = text.strip().casefold()
        for row in range(self.table.rowCount()):
            cells = (self.table.item(row, col) for col in (0, 1))
            hay = " ".join(c.text() for c in cells if c is not None).casefold()
            self.table.setRowHidden(row, bool(needle) and needle not in hay)

    def visible_rows(self) -> list[tuple[str, str]]:
        out = []
        for row in range(self.table.rowCount()):
            if not self.table.isRowHidden(row):
                keys, what = self.table.item(row, 0), self.table.item(row, 1)
                out.append((keys.text() if keys else "", what.text() if what else ""))
        return out


class AboutDialog(QDialog):
    def __init__(self, info: AppInfo, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("About Treechat")
        self.setObjectName("AboutDialog")
        title = QLabel(f"Treechat {info.version}")
        title.setObjectName("DialogTitle")
        blurb = QLabel("A desktop chat client for language models, offline first; every "
                       "conversation is a graph you can branch, merge and attach.")
        blurb.setWordWrap(True)
        form = QFormLayout()
        self.open_buttons: dict[str, QPushButton] = {}
        for key, label, folder in (("data", "Data folder", info.data_dir),
                                   ("logs", "Log folder", info.log_dir)):
            path = QLabel(str(folder))
            path.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            button = QPushButton("Open")
            button.setAccessibleName(f"Open the {label.lower()}")
            button.clicked.connect(lambda _=False, f=folder: open_folder(f))
            self.open_buttons[key] = button
            row = QHBoxLayout()
            row.addWidget(path, 1)
            row.addWidget(button)
            form.addRow(label, row)
        form.addRow("Platform", QLabel(info.platform_text()))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(title)
        layout.addWidget(blurb)
        layout.addLayout(form)
        layout.addWidget(buttons)


class ReportDialog(QDialog):
    """Help → Report a problem: the report, already on the clipboard and saved as a file,
    shown whole, with where to send it (the issue tracker the package names, or plainly
    none), and buttons to copy it again, open its folder and open the tracker."""

    def __init__(self, text: str, saved: Path, place: str | None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Report a problem")
        self.setObjectName("ReportDialog")
        self.setAccessibleName("Report a problem")
        self.resize(620, 460)
        self._text = text
        made = QLabel("A problem report is on the clipboard: the version, the platform and the "
                      "last log lines, with every key removed. It is saved as well:")
        made.setWordWrap(True)
        self.path = QLabel(str(saved))
        self.path.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.path.setAccessibleName("Saved as")
        self.open_button = QPushButton("Open folder")
        self.open_button.setAccessibleName("Open the folder of the report")
        self.open_button.clicked.connect(lambda: open_folder(saved.parent))
        path_row = QHBoxLayout()
        path_row.addWidget(self.path, 1)
        path_row.addWidget(self.open_button)
        self.where = QLabel(where_to_send(place))
        self.where.setWordWrap(True)
        self.where.setAccessibleName("Where to send it")
        self.where.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.preview = QPlainTextEdit(text)
        self.preview.setReadOnly(True)
        self.preview.setAccessibleName("The report")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        # Enter closes the dialog; it never opens a file manager or a browser
        self.open_button.setAutoDefault(False)
        close = buttons.button(QDialogButtonBox.StandardButton.Close)
        close.setDefault(True)
        self.copy_button = buttons.addButton("Copy again", QDialogButtonBox.ButtonRole.ActionRole)
        self.copy_button.setAutoDefault(False)
        self.copy_button.clicked.connect(self.copy)
        self.tracker_button: QPushButton | None = None
        if place:
            self.tracker_button = buttons.addButton("Open the issue tracker",
                                                    QDialogButtonBox.ButtonRole.ActionRole)
            self.tracker_button.setAutoDefault(False)
            self.tracker_button.clicked.connect(lambda: QDesktopServices.openUrl(QUrl(place)))
        layout = QVBoxLayout(self)
        layout.addWidget(made)
        layout.addLayout(path_row)
        layout.addWidget(self.where)
        layout.addWidget(self.preview, 1)
        layout.addWidget(buttons)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self._text)


def open_folder(folder: Path) -> bool:
    """Show `folder` in the desktop's file manager (made first if it is not there yet)."""
    folder.mkdir(parents=True, exist_ok=True)
    return QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))
