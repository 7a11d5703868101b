"""The replies to one message side by side: a column per model with its name, cost and time to
first token, the columns scrolling together, what only one reply says tinted; a button back
to one reply at a time, one per column to continue from it, and a Fuse bar that has one model
combine them all (its instruction editable)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QColor, QTextBlockFormat, QTextCursor
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollBar,
    QSplitter,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ...core.compare import only_here
from ...core.money import cost_text
from ..common.elided_label import ElidedLabel
from ..common.theme import colors_of
from .streaming import frame_clock


@dataclass(frozen=True, slots=True)
class Column:
    """What one column shows: the model's name, the reply's text, its figures in words
    (`facts`: "$0.0012 · first token 0.4 s"), and whether it is still streaming."""

    key: str  # the reply's first node (what Continue switches to); "" while it streams
    label: str
    text: str = ""
    facts: str = ""
    state: str = ""  # "" | "streaming" | "stopped" | an error in words


def facts_text(cost_usd: float | None, priced: bool, first_token_s: float | None,
               local: bool = False) -> str:
    """A reply's cost and time to first token, as its column says them ("free", "unpriced"
    or its sum, in the words of every other place); no cost when none was measured."""
    parts = []
    if local or not priced or cost_usd is not None:
        parts.append(cost_text(cost_usd, priced=priced, free=local))
    if first_token_s is not None:
        parts.append(f"first token {first_token_s:.1f} s")
    return " · ".join(parts)


class ReplyColumn(QFrame):
    continueRequested = Signal(str)

    def __init__(self, column: Column, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("CompareColumn")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.column = column
        self.title = ElidedLabel(column.label)
        self.title.setObjectName("CompareModel")
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        self.facts = QLabel("")
        self.facts.setObjectName("DialogMuted")
        self.body = QTextBrowser()
        self.body.setOpenExternalLinks(True)
        self.body.setFrameShape(QFrame.Shape.NoFrame)
        # Always there: a scroll bar that appears once the reply overflows narrows the page,
        # and the whole reply is laid out again at the new width in the middle of a stream;
        # the columns keep the same width for their text too.
        self.body.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        self.body.setAccessibleName(f"Reply by {column.label}")
        self.pick = QPushButton("Continue from this")
        self.pick.setAccessibleName(f"Continue from the reply by {column.label}")
        self.pick.clicked.connect(lambda _checked=False: self.continueRequested.emit(
            self.column.key))
        box = QVBoxLayout(self)
        box.setContentsMargins(10, 8, 10, 8)
        box.setSpacing(4)
        box.addWidget(self.title)
        box.addWidget(self.facts)
        box.addWidget(self.body, 1)
        box.addWidget(self.pick)
        self._text = ""
        self._rendered = True
        self._pending: list[str] = []
        self.show_column(column)

    def show_column(self, column: Column) -> None:
        self.flush()
        self.column = column
        self.title.setText(column.label)
        shown = [column.facts] if column.facts else []
        if column.state:
            shown.append({"streaming": "writing…", "stopped": "stopped"}.get(
                column.state, column.state))
        self.facts.setText(" · ".join(shown))
        self.pick.setEnabled(bool(column.key) and column.state != "streaming")
        if column.text != self._text or (not self._rendered and column.state != "streaming"):
            self._set_text(column.text)  # streamed as plain text, shown laid out once whole

    def append(self, text: str) -> None:
        """A streamed piece, kept until the view's next flush (a burst of pieces read at
        once is one edit, not one each)."""
        if text:
            self._pending.append(text)
            self._rendered = False

    @property
    def pending(self) -> bool:
        """Whether streamed pieces wait for the next flush."""
        return bool(self._pending)

    def flush(self) -> None:
        """Add the pieces streamed since the last flush at the end, without laying the
        reply out again; the view follows the end if it was there."""
        if not self._pending:
            return
        text = "".join(self._pending)
        self._pending.clear()
        self._text += text
        self.column = Column(self.column.key, self.column.label, self._text, self.column.facts,
                             "streaming")
        bar = self.body.verticalScrollBar()
        at_end = bar.value() >= bar.maximum() - 4
        cursor = QTextCursor(self.body.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        cursor.insertText(text)
        if at_end:
            bar.setValue(bar.maximum())

    def _set_text(self, text: str) -> None:
        self._text = text
        self._rendered = True
        bar = self.body.verticalScrollBar()
        keep = bar.value()
        self.body.setMarkdown(text)
        bar.setValue(keep)

    def blocks(self) -> list[str]:
        doc = self.body.document()
        return [doc.findBlockByNumber(i).text() for i in range(doc.blockCount())]

    def mark(self, marks: Sequence[bool], tint: str | None) -> None:
        """Tint the blocks `marks` flags (None: no tint)."""
        doc = self.body.document()
        cursor = QTextCursor(doc)
        cursor.beginEditBlock()
        for i, marked in enumerate(marks):
            block = doc.findBlockByNumber(i)
            if not block.isValid():
                break
            cursor.setPosition(block.position())
            fmt = QTextBlockFormat(block.blockFormat())
            if marked and tint is not None:
                fmt.setBackground(QColor(tint))
            else:
                fmt.clearBackground()
            cursor.setBlockFormat(fmt)
        cursor.endEditBlock()

    def marked(self) -> list[bool]:
        """Which blocks are tinted now (what a reader sees as "only here")."""
        doc = self.body.document()
        return [doc.findBlockByNumber(i).blockFormat().hasProperty(
            QTextBlockFormat.Property.BackgroundBrush) for i in range(doc.blockCount())]


class CompareView(QWidget):
    """The siblings of one message; the controller fills it and acts on its signals."""

    backRequested = Signal()
    continueRequested = Signal(str)  # the reply's first node id
    fuseRequested = Signal(str, str)  # model id, instruction

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("CompareView")
        self.setAccessibleName("Replies side by side")
        self.columns: list[ReplyColumn] = []
        self._syncing = False
        self.message = ElidedLabel("")
        self.message.setObjectName("ChatSubtitle")
        self.differences = QCheckBox("Show differences")
        self.differences.setToolTip("Tint what only one reply says")
        self.differences.setChecked(True)
        self.differences.toggled.connect(lambda _on: self.mark_differences())
        self.back = QToolButton()
        self.back.setText("One at a time")
        self.back.setToolTip("Back to the chat, one version at a time (< N/M >)")
        self.back.clicked.connect(lambda _checked=False: self.backRequested.emit())
        top = QHBoxLayout()
        top.setContentsMargins(16, 8, 16, 4)
        top.setSpacing(12)
        top.addWidget(self.message, 1)
        top.addWidget(self.differences)
        top.addWidget(self.back)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setChildrenCollapsible(False)

        self.fuse_model = QComboBox()
        self.fuse_model.setAccessibleName("Model that fuses the replies")
        self.fuse_model.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.fuse_button = QPushButton("Fuse")
        self.fuse_button.setAccessibleName("Fuse the replies into one")
        self.fuse_button.clicked.connect(lambda _checked=False: self._fuse())
        self.edit_instruction = QToolButton()
        self.edit_instruction.setText("Instruction")
        self.edit_instruction.setCheckable(True)
        self.edit_instruction.setToolTip("What the fusing model is asked to do")
        self.instruction = QPlainTextEdit()
        self.instruction.setAccessibleName("Instruction for the fuse")
        self.instruction.setMaximumHeight(90)
        self.instruction.hide()
        self.edit_instruction.toggled.connect(self.instruction.setVisible)
        fuse_row = QHBoxLayout()
        fuse_row.setContentsMargins(16, 4, 16, 8)
        fuse_row.setSpacing(8)
        fuse_row.addWidget(QLabel("Fuse with"))
        fuse_row.addWidget(self.fuse_model)
        fuse_row.addWidget(self.edit_instruction)
        fuse_row.addWidget(self.fuse_button)
        fuse_row.addStretch(1)

        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(0)
        box.addLayout(top)
        box.addWidget(self.splitter, 1)
        box.addWidget(self.instruction)
        box.addLayout(fuse_row)
        self._streaming = False
        self._clock = frame_clock()
        self._staggered: list[ReplyColumn] = []
        self._next_column = QTimer(self)
        self._next_column.setSingleShot(True)
        self._next_column.setInterval(0)
        self._next_column.timeout.connect(self._flush_next)

    # --- filling --------------------------------------------------------------------

    def set_message(self, text: str) -> None:
        line = " ".join(text.split())
        self.message.setText(f"Replies to: {line}" if line else "Replies")

    def set_fuse_models(self, models: Sequence[tuple[str, str]], current: str | None,
                        instruction: str) -> None:
        """The models that can fuse (id, name), the one chosen, and the default instruction
        (kept when the user has edited it)."""
        self.fuse_model.clear()
        for model_id, label in models:
            self.fuse_model.addItem(label, model_id)
        at = self.fuse_model.findData(current) if current else -1
        self.fuse_model.setCurrentIndex(max(0, at))
        if not self.instruction.document().isModified():
            self.instruction.setPlainText(instruction)
        self._update_fuse()

    def show_columns(self, columns: Sequence[Column]) -> None:
        """One column per reply; columns whose reply is already shown keep their place."""
        while len(self.columns) > len(columns):
            gone = self.columns.pop()
            gone.hide()
            gone.deleteLater()
        for i, column in enumerate(columns):
            if i < len(self.columns):
                self.columns[i].show_column(column)
                continue
            widget = ReplyColumn(column)
            widget.continueRequested.connect(self.continueRequested)
            widget.body.verticalScrollBar().valueChanged.connect(
                lambda _v, w=widget: self._scrolled(w))
            self.splitter.addWidget(widget)
            self.columns.append(widget)
        self._streaming = any(c.state == "streaming" for c in columns)
        self._update_fuse()
        self.mark_differences()

    def append(self, index: int, text: str) -> None:
        """A streamed piece of column `index`, shown at the next frame of the clock every
        streaming text shares (about 30 times a second, less often when drawing takes
        longer)."""
        if 0 <= index < len(self.columns):
            self.columns[index].append(text)
            self._clock.request(self, self._paint_frame)

    def flush(self) -> None:
        """Every column's streamed pieces on the page now."""
        self._clock.cancel(self)
        self._next_column.stop()
        self._staggered.clear()
        for column in self.columns:
            column.flush()

    def _paint_frame(self) -> None:
        """One frame: each column with new text adds it in a pass of its own, one after
        the other, the event loop running in between. Adding text to a long paragraph lays
        the paragraph out again; three of those in one pass held the loop three times as
        long as one."""
        self._staggered = [c for c in self.columns if c.pending]
        self._flush_next()

    def _flush_next(self) -> None:
        while self._staggered:
            column = self._staggered.pop(0)
            if column in self.columns and column.pending:  # not a column taken away since
                column.flush()
                break
        if self._staggered:
            self._next_column.start()

    def set_running(self, running: bool) -> None:
        self._streaming = running
        self._update_fuse()

    # --- what it shows --------------------------------------------------------------

    def mark_differences(self) -> None:
        """Tint what only one reply says (never while replies stream: they are not whole)."""
        on = self.differences.isChecked() and not self._streaming and len(self.columns) > 1
        tint = colors_of(self.palette()).warn_soft if on else None
        marks = only_here([c.blocks() for c in self.columns]) if on else [
            [False] * len(c.blocks()) for c in self.columns]
        for column, flags in zip(self.columns, marks, strict=True):
            column.mark(flags, tint)

    def _update_fuse(self) -> None:
        ready = sum(1 for c in self.columns if c.column.key) >= 2
        self.fuse_button.setEnabled(ready and not self._streaming
                                    and self.fuse_model.count() > 0)

    def _fuse(self) -> None:
        model = self.fuse_model.currentData()
        if model:
            self.fuseRequested.emit(str(model), self.instruction.toPlainText())

    def _scrolled(self, source: ReplyColumn) -> None:
        """The columns scroll together: each to the same share of its length."""
        if self._syncing:
            return
        self._syncing = True
        try:
            bar = source.body.verticalScrollBar()
            share = bar.value() / bar.maximum() if bar.maximum() else 0.0
            for column in self.columns:
                if column is not source:
                    other: QScrollBar = column.body.verticalScrollBar()
                    other.setValue(round(share * other.maximum()))
        finally:
            self._syncing = False
