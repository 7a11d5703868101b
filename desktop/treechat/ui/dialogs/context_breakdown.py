"""The /context breakdown: the same occupancy record as the ring, as a headline (used / window,
basis, calibration), one row per category with tokens and share, free space and how far the
context has been compacted. Non-modal; "Compact now" runs /compact."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QColor, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..common.theme import colors_of
from ..occupancy import format as fmt
from ..occupancy.usage_bar import ContextUsageBar, category_color

if TYPE_CHECKING:
    from ...core.occupancy import Occupancy


class ContextBreakdownDialog(QDialog):
    compactRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Context")
        self.setModal(False)
        self.setAccessibleName("Context breakdown")
        self.resize(540, 560)
        self._occupancy: Occupancy | None = None

        self.headline = QLabel("No chat open")
        self.headline.setObjectName("DialogHeadline")
        font = self.headline.font()
        font.setPointSizeF(font.pointSizeF() * 1.35)
        self.headline.setFont(font)
        self.headline.setAccessibleName("Tokens used")
        self.headline.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._pending = 0
        self.pending = QLabel("")
        self.pending.setObjectName("DialogPending")
        self.pending.setWordWrap(True)
        self.pending.setAccessibleName("With what you are typing and attaching")
        self.model_label = QLabel("")
        self.model_label.setObjectName("DialogMuted")
        self.bar = ContextUsageBar()
        self.basis = QLabel("")
        self.basis.setWordWrap(True)
        self.basis.setAccessibleName("Basis")
        self.calibration = QLabel("")
        self.calibration.setObjectName("DialogMuted")
        self.calibration.setWordWrap(True)
        self.calibration.setAccessibleName("Calibration")

        self.table = QTableWidget(0, 3)
        self.table.setAccessibleName("Tokens by category")
        self.table.setHorizontalHeaderLabels(["Category", "Tokens", "Share"])
        self.table.verticalHeader().setVisible(False)
        self.table.setShowGrid(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

        compaction_title = QLabel("Compaction")
        compaction_title.setObjectName("DialogHeadline")
        self.compaction = QLabel("")
        self.compaction.setWordWrap(True)
        self.compaction.setAccessibleName("Compaction state")

        self.compact_button = QPushButton("Compact now")
        self.compact_button.setAccessibleName("Compact now")
        self.compact_button.setToolTip("Summarize older messages now (/compact)")
        self.compact_button.clicked.connect(self.compactRequested)
        close = QPushButton("Close")
        close.setDefault(True)
        close.clicked.connect(self.close)

        buttons = QHBoxLayout()
        buttons.addWidget(self.compact_button)
        buttons.addStretch(1)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(20, 18, 20, 16)
        layout.setSpacing(8)
        layout.addWidget(self.headline)
        layout.addWidget(self.pending)
        layout.addWidget(self.model_label)
        layout.addSpacing(2)
        layout.addWidget(self.bar)
        layout.addSpacing(4)
        layout.addWidget(self.basis)
        layout.addWidget(self.calibration)
        layout.addSpacing(6)
        layout.addWidget(self.table)
        layout.addSpacing(6)
        layout.addWidget(compaction_title)
        layout.addWidget(self.compaction)
        layout.addStretch(1)
        layout.addSpacing(8)
        layout.addLayout(buttons)
        self.set_occupancy(None)
        self.set_pending(0)

    @property
    def occupancy(self) -> Occupancy | None:
        return self._occupancy

    def set_pending(self, tokens: int) -> None:
        """What the box holds (typed text, chips), in the words the ring's tooltip uses."""
        self._pending = max(0, tokens)
        text = fmt.pending_text(self._occupancy, self._pending)
        self.pending.setText(text)
        self.pending.setVisible(bool(text))
        self._grow_to_fit()

    def _grow_to_fit(self) -> None:
        """Taller when a line appears, so no row is drawn over the next."""
        layout = self.layout()
        if layout is None:
            return
        layout.activate()
        wanted = (layout.totalHeightForWidth(self.width()) if layout.hasHeightForWidth()
                  else layout.totalMinimumSize().height())
        if self.height() < wanted:
            self.resize(self.width(), wanted)

    def set_model_label(self, text: str) -> None:
        self.model_label.setText(text)
        self.model_label.setVisible(bool(text))

    def set_occupancy(self, occ: Occupancy | None) -> None:
        self._occupancy = occ
        self.bar.set_occupancy(occ)
        self.compact_button.setEnabled(occ is not None)
        if occ is None:
            self.headline.setText("No chat open")
            self.basis.setText("Open or start a chat to see what its next request carries.")
            self.calibration.setText("")
            self.table.setRowCount(0)
            return
        self.headline.setText(fmt.headline(occ))
        self.set_pending(self._pending)
        self.basis.setText(fmt.basis_text(occ))
        self.calibration.setText(fmt.calibration_text(occ))
        colors = colors_of(self.palette())
        entries = fmt.rows(occ)
        self.table.setRowCount(len(entries))
        for row, (key, label, value, share) in enumerate(entries):
            swatch = QPixmap(10, 10)
            swatch.fill(category_color(key, colors))
            name = QTableWidgetItem(label)
            name.setIcon(swatch)
            amount = QTableWidgetItem(fmt.tokens(value))
            amount.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            part = QTableWidgetItem(fmt.percent(share) if value else "0%")
            part.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if key == "free":
                for item in (name, amount, part):
                    font = item.font()
                    font.setBold(True)
                    item.setFont(font)
            elif value == 0:
                for item in (name, amount, part):
                    item.setForeground(QColor(colors.muted))
            self.table.setItem(row, 0, name)
            self.table.setItem(row, 1, amount)
            self.table.setItem(row, 2, part)
        self.table.resizeRowsToContents()
        self._fit_table()

    def _fit_table(self) -> None:
        """Every category visible at once: the table is as tall as its rows."""
        height = self.table.horizontalHeader().height() + 2 * self.table.frameWidth()
        height += sum(self.table.rowHeight(r) for r in range(self.table.rowCount()))
        self.table.setFixedHeight(height + 2)
        self._grow_to_fit()

    def set_compaction(self, state: fmt.CompactionState | None) -> None:
        self.compaction.setText(state.describe() if state is not None else "")

    def set_compacting(self, running: bool) -> None:
        self.compact_button.setEnabled(not running and self._occupancy is not None)
        self.compact_button.setText("Compacting…" if running else "Compact now")

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self.set_occupancy(self._occupancy)  # swatches and muted rows follow the theme

    def table_rows(self) -> list[tuple[str, str, str]]:
        """What the table shows, row by row (category, tokens, share)."""
        def text(row: int, col: int) -> str:
            cell = self.table.item(row, col)
            return cell.text() if cell is not None else ""

        return [(text(row, 0), text(row, 1), text(row, 2))
                for row in range(self.table.rowCount())]
