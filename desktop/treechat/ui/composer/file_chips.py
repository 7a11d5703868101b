"""File chips above the message box: one per file staged for the next message, with its name
(elided, shown as plain text), size and token cost for the chosen model's provider, and an ×
to remove it. A file still being prepared shows a busy chip. The row wraps to the width it is
given and never asks for more, so chips never widen the window."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QContextMenuEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QToolButton,
    QWidget,
)

from ...core.attachments import human_size
from ..common.chip_flow import ChipFlow
from ..common.elided_label import ElidedLabel
from ..common.icons import draw_icon
from ..common.theme import colors_of
from .attach_chips import format_tokens

NAME_MAX_W = 220  # a chip's name elides past this


@dataclass(frozen=True, slots=True)
class FileChipState:
    """What a chip shows: `key` names the staged file; `busy` while it is being prepared;
    `tokens` None until counted for the current model."""

    key: int
    name: str
    size: int = 0
    kind: str = ""
    tokens: int | None = None
    busy: bool = False
    note: str = ""  # said in the tooltip (e.g. that this model cannot see it)
    page_images: bool = False  # a PDF sent with its first pages as images too


class _Mark(QWidget):
    """The chip's mark: a document for a file, a turning arc while it is prepared."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFixedSize(14, 14)
        self.busy = False
        self.angle = 0

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        colors = colors_of(self.palette())
        color = QColor(colors.accent)
        if self.busy:
            painter.setPen(QPen(color, 2.0))
            painter.drawArc(QRectF(2, 2, 10, 10), -self.angle * 16, 270 * 16)
            return
        draw_icon(painter, "doc", QRectF(1, 1, 12, 12), color)


class FileChip(QFrame):
    removeRequested = Signal(int)  # the chip's key
    pageImagesToggled = Signal(int, bool)  # a PDF's key, whether its pages go as images

    def __init__(self, state: FileChipState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.key = state.key
        self.setObjectName("FileChip")
        colors = colors_of(self.palette())
        self.setStyleSheet(
            f"#FileChip {{ background: {colors.accent_soft}; border: 1px solid "
            f"{colors.border}; border-radius: 11px; }}"
            f"#FileChip QLabel {{ background: transparent; }}"
        )
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 2, 2, 2)
        row.setSpacing(6)
        self.mark = _Mark()
        self.name = ElidedLabel("")
        self.name.setObjectName("FileChipName")
        self.name.setTextFormat(Qt.TextFormat.PlainText)  # odd names are never markup
        self.name.setMaximumWidth(NAME_MAX_W)
        font = self.name.font()
        font.setBold(True)
        self.name.setFont(font)
        self.size_label = QLabel()
        self.size_label.setObjectName("FileChipSize")
        self.size_label.setStyleSheet(f"color: {colors.muted};")
        self.cost = QLabel()
        self.cost.setObjectName("FileChipCost")
        self.cost.setStyleSheet(f"color: {colors.muted};")
        self.remove_button = QToolButton()
        self.remove_button.setObjectName("FileChipRemove")
        self.remove_button.setText("×")
        self.remove_button.setAutoRaise(True)
        self.remove_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.remove_button.clicked.connect(lambda: self.removeRequested.emit(self.key))
        for w in (self.mark, self.name, self.size_label, self.cost, self.remove_button):
            row.addWidget(w)
        self._spin = QTimer(self)
        self._spin.setInterval(150)
        self._spin.timeout.connect(self._turn)
        self.state = state
        self.update_state(state)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        menu = QMenu(self)
        if self.state.kind == "pdf" and not self.state.busy:
            pages = menu.addAction("Also send its pages as images")
            pages.setCheckable(True)
            pages.setChecked(self.state.page_images)
            pages.setToolTip("For a model that sees: charts, scans and layout the text "
                             "alone misses. Costs more tokens.")
            pages.toggled.connect(lambda on: self.pageImagesToggled.emit(self.key, on))
        menu.addAction("Remove", lambda: self.removeRequested.emit(self.key))
        menu.exec(event.globalPos())

    def update_state(self, state: FileChipState) -> None:
        self.state = state
        self.name.setText(state.name)
        self.size_label.setText(human_size(state.size) if state.size else "")
        self.size_label.setVisible(bool(state.size))
        self.mark.busy = state.busy
        self.mark.update()
        if state.busy:
            self.cost.setText("preparing…")
            self._spin.start()
            tip = f"Preparing {state.name}…"
        else:
            self._spin.stop()
            self.cost.setText(format_tokens(state.tokens) if state.tokens is not None else "…")
            tip = (f"{state.name}\n{human_size(state.size)}"
                   + (", its pages as images too" if state.page_images else "")
                   + (f", {format_tokens(state.tokens)} for this model"
                      if state.tokens is not None else "")
                   + " · sent with the next message")
        if state.note:
            tip += f"\n{state.note}"
        self.setToolTip(tip)
        self.setAccessibleName(f"File: {state.name}" + (" (preparing)" if state.busy else ""))
        self.remove_button.setAccessibleName(f"Remove {state.name}")
        self.remove_button.setToolTip("Remove: this file will not be sent")

    def _turn(self) -> None:
        self.mark.angle = (self.mark.angle + 30) % 360
        self.mark.update()


class FileChipBar(ChipFlow):
    """The file chips of the next message, wrapped into lines; hidden when empty."""

    removeRequested = Signal(int)
    pageImagesToggled = Signal(int, bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("FileChipBar")
        self.chips: list[FileChip] = []
        self.setVisible(False)

    def chip_widgets(self) -> Sequence[QWidget]:
        return self.chips

    def set_files(self, states: Sequence[FileChipState]) -> None:
        by_key = {chip.key: chip for chip in self.chips}
        kept: list[FileChip] = []
        for state in states:
            chip = by_key.pop(state.key, None)
            if chip is None:
                chip = FileChip(state, self)
                chip.removeRequested.connect(self.removeRequested)
                chip.pageImagesToggled.connect(self.pageImagesToggled)
                chip.show()
            elif chip.state != state:
                chip.update_state(state)
            kept.append(chip)
        for chip in by_key.values():
            chip.hide()
            chip.deleteLater()
        self.chips = kept
        self.setVisible(bool(kept))
        self.place()

    def chip(self, key: int) -> FileChip | None:
        return next((c for c in self.chips if c.key == key), None)


class PaperclipButton(QToolButton):
    """The composer's attach button, drawn with the interface's line icons."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("AttachButton")
        self.setAutoRaise(True)
        self.setFixedSize(28, 28)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setAccessibleName("Attach files")
        self.setToolTip("Attach files (or drop them here, or paste an image)")

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        painter = QPainter(self)
        colors = colors_of(self.palette())
        color = QColor(colors.text if self.underMouse() else colors.muted)
        side = 16.0
        draw_icon(painter, "paperclip",
                  QRectF((self.width() - side) / 2, (self.height() - side) / 2, side, side),
                  color)
