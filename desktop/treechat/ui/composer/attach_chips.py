"""Attach chips above the message box: each names a staged attach (source, head, token cost)
and can be removed before sending, which cancels it without a trace."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton, QWidget

from ..common.chip_flow import ChipFlow
from ..common.elided_label import ElidedLabel
from ..common.icons import draw_icon
from ..common.theme import colors_of

if TYPE_CHECKING:  # the chips only show it; the services load after the first paint
    from ...services.merge import StagedAttach


class _Diamond(QWidget):
    """The attach mark, the same diamond the history graph uses for attach nodes."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFixedSize(12, 12)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        dark = colors_of(self.palette()).dark
        draw_icon(painter, "attach", QRectF(0, 0, 12, 12), QColor("#a98bfa" if dark else "#8b5cf6"))


SOURCE_MAX_W = 220  # a chip's source title elides past this
HEAD_MAX_W = 180  # and its head preview past this


def format_tokens(tokens: int) -> str:
    if tokens >= 10_000:
        return f"{tokens / 1000:.0f}k tokens"
    if tokens >= 1000:
        return f"{tokens / 1000:.1f}k tokens"
    return f"{tokens} token{'s' if tokens != 1 else ''}"


class AttachChip(QFrame):
    """One staged attach: “Source” · head preview · token cost · ×."""

    removeRequested = Signal(object)  # the StagedAttach

    def __init__(self, staged: StagedAttach, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.staged = staged
        self.setObjectName("AttachChip")
        self.setAccessibleName(f"Attached: {staged.source_title}")
        self.setToolTip(
            f"Attached from “{staged.source_title}” at: {staged.head_preview}\n"
            f"{format_tokens(staged.tokens)} will be sent once with the next message."
        )
        colors = colors_of(self.palette())
        self.setStyleSheet(
            f"#AttachChip {{ background: {colors.accent_soft}; border: 1px solid "
            f"{colors.border}; border-radius: 11px; }}"
            f"#AttachChip QLabel {{ background: transparent; }}"
        )
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 2, 2, 2)
        row.setSpacing(6)
        row.addWidget(_Diamond())
        self.source: QLabel = ElidedLabel(staged.source_title or "Untitled")  # never widens
        self.source.setObjectName("AttachChipSource")
        font = self.source.font()
        font.setBold(True)
        self.source.setFont(font)
        self.source.setMaximumWidth(SOURCE_MAX_W)
        # elided to the room the chip is given, at most HEAD_MAX_W: a narrow window narrows it
        self.head: QLabel = ElidedLabel(staged.head_preview)
        self.head.setObjectName("AttachChipHead")
        self.head.setMaximumWidth(HEAD_MAX_W)
        self.cost = QLabel(format_tokens(staged.tokens))
        self.cost.setObjectName("AttachChipCost")
        self.cost.setStyleSheet(f"color: {colors.muted};")
        self.remove_button = QToolButton()
        self.remove_button.setObjectName("AttachChipRemove")
        self.remove_button.setText("×")
        self.remove_button.setAutoRaise(True)
        self.remove_button.setAccessibleName("Remove attachment")
        self.remove_button.setToolTip("Remove: nothing will be attached")
        self.remove_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.remove_button.clicked.connect(lambda: self.removeRequested.emit(self.staged))
        for w in (self.source, self.head, self.cost, self.remove_button):
            row.addWidget(w)


class AttachChipBar(ChipFlow):
    """The chips staged for the next message of the current chat, wrapped into lines within the
    composer's width (never widening the window); hidden when empty."""

    removeRequested = Signal(object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("AttachChipBar")
        self.chips: list[AttachChip] = []
        self.setVisible(False)

    def chip_widgets(self) -> list[AttachChip]:
        return self.chips

    def set_staged(self, staged: list[StagedAttach]) -> None:
        for chip in self.chips:
            chip.hide()
            chip.deleteLater()
        self.chips = []
        for item in staged:
            chip = AttachChip(item, self)
            chip.removeRequested.connect(self.removeRequested)
            chip.show()
            self.chips.append(chip)
        self.setVisible(bool(self.chips))
        self.place()
