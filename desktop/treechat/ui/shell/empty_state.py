"""The page a new chat shows before its first message: a title and the shortcuts a first
hour needs."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QVBoxLayout, QWidget

SHORTCUTS_HELP = (
    ("Ctrl+N", "New chat"),
    ("Ctrl+K", "Search all chats"),
    ("Enter", "Send · Shift+Enter for a new line"),
    ("Esc", "Stop the reply"),
    ("Ctrl+R", "Retry the last reply"),
    ("Alt+← or Alt+→", "Switch versions"),
    ("/context", "What the model will read"),
)


class EmptyState(QWidget):
    """`title` says whether the chats are still opening, ready, or could not be opened."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("EmptyState")
        box = QVBoxLayout(self)
        box.addStretch(2)
        self.title = QLabel("Opening your chats…")
        self.title.setObjectName("EmptyTitle")
        font = self.title.font()
        font.setPointSizeF(font.pointSizeF() * 1.6)
        self.title.setFont(font)
        self.title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        box.addWidget(self.title)
        box.addSpacing(14)
        grid = QWidget()
        rows = QVBoxLayout(grid)
        rows.setSpacing(4)
        for keys, what in SHORTCUTS_HELP:
            line = QHBoxLayout()
            key = QLabel(keys)
            key.setObjectName("EmptyHint")
            key.setAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            key.setMinimumWidth(120)
            text = QLabel(what)
            text.setObjectName("EmptyHint")
            line.addWidget(key)
            line.addSpacing(12)
            line.addWidget(text, 1)
            rows.addLayout(line)
        holder = QHBoxLayout()
        holder.addStretch(1)
        holder.addWidget(grid)
        holder.addStretch(1)
        box.addLayout(holder)
        box.addStretch(3)


def placeholder_page(text: str) -> QWidget:
    """A page that says in words what will be there (the dock's tabs before they fill)."""
    page = QWidget()
    label = QLabel(text)
    label.setObjectName("EmptyHint")
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    label.setWordWrap(True)
    box = QVBoxLayout(page)
    box.addWidget(label)
    return page
