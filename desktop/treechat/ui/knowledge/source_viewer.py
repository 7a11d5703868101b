"""A knowledge file opened from a reply's citation: its text in the window's own viewer with
line numbers, scrolled to the cited line and the cited passage highlighted. A system editor
cannot be told a line portably, so the file opens here; "Open in another app" hands it to the
system as it is."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QRect, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFontDatabase, QPainter, QTextCursor
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from ...core.chunking import chunks
from ..common.theme import colors_of

if TYPE_CHECKING:
    from PySide6.QtGui import QPaintEvent, QResizeEvent

GUTTER_PAD = 8
# Files read as prose wrap at the window's edge; code and data keep their lines as written.
PROSE_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".rst", ".html", ".htm", ".xhtml",
                            ".org", ".adoc", ""})


def cited_span(text: str, line: int) -> tuple[int, int]:
    """The first and last line (1-based) of the passage that starts at `line`, cut as the
    index cut the file; the line alone when no passage starts there (the file changed since
    it was indexed) or when the line is past the end, the last line then."""
    count = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    line = min(max(line, 1), max(count, 1))
    at = 1
    last = 0
    for offset, piece in chunks(text):
        at += text.count("\n", last, offset)
        last = offset
        if at == line and piece.strip():
            body = piece.rstrip()
            return line, line + body.count("\n")
        if at > line:
            break
    return line, line


class _Gutter(QWidget):
    """The line numbers beside the text; the cited lines' numbers in the accent colour."""

    def __init__(self, viewer: SourceText) -> None:
        super().__init__(viewer)
        self.viewer = viewer

    def sizeHint(self) -> QSize:
        return QSize(self.viewer.gutter_width(), 0)

    def paintEvent(self, event: QPaintEvent) -> None:
        self.viewer.paint_gutter(self, event.rect())


class SourceText(QPlainTextEdit):
    """Read-only text with line numbers and one highlighted span of lines."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.span = (0, 0)
        self.gutter = _Gutter(self)
        self.blockCountChanged.connect(lambda _n: self._fit_gutter())
        self.updateRequest.connect(self._scrolled)
        self._fit_gutter()

    def gutter_width(self) -> int:
        digits = len(str(max(1, self.blockCount())))
        return GUTTER_PAD * 2 + self.fontMetrics().horizontalAdvance("9") * max(3, digits)

    def _fit_gutter(self) -> None:
        self.setViewportMargins(self.gutter_width(), 0, 0, 0)

    def _scrolled(self, rect: QRect, dy: int) -> None:
        if dy:
            self.gutter.scroll(0, dy)
        else:
            self.gutter.update(0, rect.y(), self.gutter.width(), rect.height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        room = self.contentsRect()
        self.gutter.setGeometry(QRect(room.left(), room.top(), self.gutter_width(),
                                      room.height()))

    def paint_gutter(self, gutter: QWidget, rect: QRect) -> None:
        colors = colors_of(self.palette())
        painter = QPainter(gutter)
        painter.fillRect(rect, QColor(colors.code))
        block = self.firstVisibleBlock()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        height = self.fontMetrics().height()
        while block.isValid() and top <= rect.bottom():
            number = block.blockNumber() + 1
            if block.isVisible() and top + height >= rect.top():
                cited = self.span[0] <= number <= self.span[1]
                painter.setPen(QColor(colors.accent if cited else colors.muted))
                painter.drawText(0, top, gutter.width() - GUTTER_PAD, height,
                                 Qt.AlignmentFlag.AlignRight, str(number))
            top += round(self.blockBoundingRect(block).height())
            block = block.next()
        painter.end()

    def mark(self, first: int, last: int) -> None:
        """Highlight lines `first`..`last` (1-based; 0 for none) across the whole width."""
        self.span = (first, last)
        self.viewport().update()
        self.gutter.update()

    def mark_colour(self) -> QColor:
        return QColor(colors_of(self.palette()).accent_soft)

    def paintEvent(self, event: QPaintEvent) -> None:
        first, last = self.span
        if first:
            # painted under the text, block by block: a wrapped line is marked on every row
            # it takes and across the whole width (a text format marks only the characters)
            painter = QPainter(self.viewport())
            colour, width = self.mark_colour(), self.viewport().width()
            offset = self.contentOffset()
            block = self.document().findBlockByNumber(first - 1)
            while block.isValid() and block.blockNumber() < last:
                rect = self.blockBoundingGeometry(block).translated(offset)
                if rect.top() > event.rect().bottom():
                    break
                painter.fillRect(QRectF(0, rect.top(), width, rect.height()), colour)
                block = block.next()
            painter.end()
        super().paintEvent(event)

    def marked_text(self) -> str:
        """The highlighted lines' text."""
        first, last = self.span
        if not first:
            return ""
        lines = self.toPlainText().split("\n")
        return "\n".join(lines[first - 1:last])

    def go_to(self, line: int) -> None:
        """Put `line` near the top third of the view, the caret at its start."""
        block = self.document().findBlockByNumber(max(0, line - 1))
        cursor = QTextCursor(block)
        self.setTextCursor(cursor)
        bar = self.verticalScrollBar()
        # in a QPlainTextEdit the vertical scroll value counts lines
        bar.setValue(max(0, block.firstLineNumber() - max(2, self._lines_shown() // 4)))

    def _lines_shown(self) -> int:
        return max(1, self.viewport().height() // max(1, self.fontMetrics().height()))

    def first_visible_line(self) -> int:
        return self.firstVisibleBlock().blockNumber() + 1


class SourceViewer(QDialog):
    """One knowledge file, shown at a cited place. `openElsewhereRequested(path)` asks for
    the system's own app for the file."""

    openElsewhereRequested = Signal(str)

    def __init__(self, path: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.path = path
        name = path.replace("\\", "/").rsplit("/", 1)[-1]
        self.setObjectName("SourceViewer")
        self.setWindowTitle(name)
        self.setAccessibleName(f"Source {name}")
        self.setModal(False)
        self.line = 0
        self._text = ""

        self.title = QLabel(name)
        self.title.setObjectName("SourceViewerTitle")
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        self.title.setTextFormat(Qt.TextFormat.PlainText)  # a file name is never markup
        self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.detail = QLabel(path)
        self.detail.setObjectName("SourceViewerDetail")
        self.detail.setTextFormat(Qt.TextFormat.PlainText)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.detail.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.detail.setToolTip(path)
        self.status = QLabel("Loading…")
        self.status.setObjectName("SourceViewerStatus")
        self.status.setWordWrap(True)
        self.text = SourceText()
        self.text.setObjectName("SourceViewerText")
        suffix = name.rsplit(".", 1)[-1].lower() if "." in name else ""
        if f".{suffix}".rstrip(".") in PROSE_SUFFIXES:
            self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.text.setAccessibleName(f"Text of {name}")
        self.elsewhere = QPushButton("Open in another app")
        self.elsewhere.setObjectName("SourceOpenElsewhere")
        self.elsewhere.setToolTip("Open the file in the app your system uses for it")
        self.elsewhere.setAutoDefault(False)  # Enter closes the viewer, as in any dialog
        self.elsewhere.clicked.connect(lambda: self.openElsewhereRequested.emit(self.path))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)

        footer = QHBoxLayout()
        footer.addWidget(self.elsewhere)
        footer.addStretch(1)
        footer.addWidget(buttons)
        layout = QVBoxLayout(self)
        layout.setSpacing(4)
        layout.addWidget(self.title)
        layout.addWidget(self.detail)
        layout.addWidget(self.status)
        layout.addWidget(self.text, 1)
        layout.addLayout(footer)
        self.resize(820, 620)

    def show_text(self, text: str, span: tuple[int, int]) -> None:
        """The file's text, at the cited passage (`span`: its first and last line)."""
        self.status.setVisible(False)
        self.text.setVisible(True)
        if text is not self._text:
            self._text = text
            self.text.setPlainText(text)
        first, last = span
        self.line = first
        self.text.mark(first, last)
        self.text.go_to(first)
        where = f"line {first}" if first == last else f"lines {first}–{last}"
        self.detail.setText(f"{self.path} · {where}")
        self.text.setFocus()

    def show_problem(self, message: str) -> None:
        self.status.setText(message)
        self.status.setVisible(True)
        self.text.setVisible(False)

    def highlighted(self) -> tuple[int, int]:
        return self.text.span
