"""How tall each chat row is: exact heights measured from a real layout, kept per (row,
width); quick estimates for rows not measured yet, so a long session opens at once; heights
measured in the background held back until `apply_pending`, so many rows cost one relayout;
and the per-pass size hints the list asks for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QSize

from ..richtext.measure import HeightEstimate
from .model import ChatRow, RowKind
from .row_layout import RowLayouter
from .style import (
    BUBBLE_PAD_X,
    BUBBLE_PAD_Y,
    BUBBLE_SHARE,
    CARD_H,
    END_MARGIN,
    FOOTER_H,
    HEADER_H,
    MORE_H,
    ROW_GAP,
    TURN_GAP,
)

HEIGHTS_KEPT = 20_000  # row heights remembered across widths before the others go

Estimators = tuple[HeightEstimate, HeightEstimate]  # bubble text, reply text
HeightKey = tuple[Any, ...]


class RowHeights:
    """Row heights at the layouter's width; rows being edited take their editor's height."""

    def __init__(self, layouter: RowLayouter, rows: Callable[[], list[ChatRow]]) -> None:
        self._layouter = layouter
        self._rows = rows
        self._hints: list[QSize] | None = None
        self._hints_rows: list[ChatRow] | None = None
        self._estimators_for: tuple[tuple[int, str], Estimators] | None = None
        self._heights: dict[HeightKey, int] = {}
        self._estimates: dict[HeightKey, int] = {}
        self._pending: dict[HeightKey, int] = {}
        self._editing: dict[str, int] = {}

    # --- width ---------------------------------------------------------------------------

    @property
    def width(self) -> int:
        """The row width every height is measured at."""
        return self._layouter.width

    @width.setter
    def width(self, value: int) -> None:
        if value != self._layouter.width:
            self._layouter.width = value
            self._hints = None
            self._forget_other_widths()

    def remembered_heights(self) -> int:
        """How many row heights (measured or estimated, any width) are held."""
        return len(self._heights) + len(self._estimates)

    def _forget_other_widths(self) -> None:
        """Heights are kept per width; a window dragged wider and narrower would pile up
        one set per pixel. Past a bound, only those for the current width stay."""
        width = self.width
        for table in (self._heights, self._estimates):
            if len(table) > HEIGHTS_KEPT:
                for key in [k for k in table if k[1] != width]:
                    del table[key]

    def forget(self, *, fonts_changed: bool) -> None:
        """The theme changed: hints go; heights too when the fonts did."""
        if fonts_changed:
            self._heights.clear()
            self._estimates.clear()
            self._pending.clear()
        self._hints = None

    # --- heights -------------------------------------------------------------------------

    def height_key(self, row: ChatRow) -> HeightKey:
        return (row.layout_key, self.width)

    def is_measured(self, row: ChatRow) -> bool:
        """True when the row's exact height is in use (pending heights do not count)."""
        return row.key in self._editing or self.height_key(row) in self._heights

    def is_known(self, row: ChatRow) -> bool:
        """True when the exact height is in use or measured and waiting to be applied."""
        key = self.height_key(row)
        return row.key in self._editing or key in self._heights or key in self._pending

    def row_height(self, row: ChatRow) -> int:
        """The exact height when known, else a cheap estimate."""
        if row.key in self._editing:
            return self._editing[row.key]
        key = (row.layout_key, self.width)
        known = self._heights.get(key)
        if known is None:
            known = self._estimates.get(key)
            if known is None:
                known = self._estimates[key] = self._estimate(row)
        return known

    def measure(self, row: ChatRow, *, cache: bool = True, defer: bool = False,
                patch: int = -1) -> tuple[int, bool]:
        """Lay the row out for real; returns (height, whether it differs from before).
        `cache=False` measures without keeping the documents (rows far off screen would
        only push the visible ones out of the cache); `defer=True` holds the height back
        until `apply_pending`, so many rows cost one relayout of the list; `patch` is the
        row's index when only its hint needs updating (the growing streamed reply)."""
        key = self.height_key(row)
        before = self.row_height(row)
        pending = self._pending.pop(key, None)
        if pending is not None and not defer:
            height = pending
        elif cache:
            height = int(self._layouter.layout(row).height + 0.999)
        else:
            height = int(self._layouter.build_uncached(row).height + 0.999)
        if defer:
            self._pending[key] = height
            return height, False
        self._heights[key] = height
        if patch >= 0:
            self.set_hint(patch, height)
        elif height != before:
            self._hints = None
        return height, height != before

    def apply_pending(self) -> bool:
        """Put the heights measured in the background to use; True if any moved a row."""
        changed = False
        for key, height in self._pending.items():
            before = self._heights.get(key, self._estimates.get(key))
            self._heights[key] = height
            changed |= before != height
        self._pending.clear()
        if changed:
            self._hints = None
        return changed

    def has_pending(self) -> bool:
        return bool(self._pending)

    def _estimators(self) -> Estimators:
        """(bubble text, reply text) estimates at the current width and theme."""
        theme = self._layouter.theme
        key = (self.width, theme.key)
        cached = self._estimators_for
        if cached is None or cached[0] != key:
            col = self._layouter.column()[1]
            cached = self._estimators_for = (key, (
                HeightEstimate(col * BUBBLE_SHARE - 2 * BUBBLE_PAD_X, theme),
                HeightEstimate(col, theme)))
        return cached[1]

    def _estimate(self, row: ChatRow) -> int:
        """The row's height with only its text's height guessed: the chrome around the text
        adds up as in the row layout, so a row whose text is guessed right is exact."""
        fold = self._layouter.fold
        if row.kind == RowKind.USER:
            shown, folded = fold(row, self._estimators()[0].of(row.text))
            h = ROW_GAP + 8 + shown + 2 * BUBBLE_PAD_Y + FOOTER_H + (MORE_H if folded else 0)
        elif row.kind in (RowKind.ASSISTANT, RowKind.STREAM):
            if row.kind == RowKind.STREAM and not row.text:
                shown, folded = 22.0, ""
            else:
                shown, folded = fold(row, self._estimators()[1].of(row.text))
            h = (TURN_GAP + HEADER_H + 2 if row.starts_turn else ROW_GAP) + shown
            h += MORE_H + 2 if folded else 0
            h += 6 + FOOTER_H if row.kind == RowKind.ASSISTANT and row.ends_turn else 8
        elif row.kind in (RowKind.TOOL, RowKind.SYSTEM):
            h = (TURN_GAP + HEADER_H + 4 if row.starts_turn else 4) + CARD_H
            h += (10 if row.ends_turn else 4) + (200 if row.expanded else 0)
        else:
            h = 48
        if row.at_end:
            h += END_MARGIN
        return int(h + 0.999)

    # --- rows being edited -----------------------------------------------------------------

    def set_editing(self, key: str, height: int) -> bool:
        """The row `key` is edited in place, `height` tall; False when nothing changed."""
        if self._editing.get(key) == height:
            return False
        self._editing[key] = height
        self._hints = None
        return True

    def stop_editing(self, key: str) -> None:
        self._editing.pop(key, None)
        self._hints = None

    def editing_keys(self) -> tuple[str, ...]:
        return tuple(self._editing)

    def is_editing(self, key: str) -> bool:
        return key in self._editing

    # --- size hints ------------------------------------------------------------------------

    def hint(self, index: int) -> QSize:
        # called for every row on every layout pass: one list lookup, nothing more (the
        # sizes are made once per pass, not per call)
        hints = self._hints
        rows = self._rows()
        if hints is None or len(hints) != len(rows) or self._hints_rows is not rows:
            width, height = self.width, self.row_height
            hints = self._hints = [QSize(width, height(row)) for row in rows]
            self._hints_rows = rows
        return hints[index] if 0 <= index < len(hints) else QSize(self.width, 0)

    def invalidate_hints(self) -> None:
        self._hints = None

    def set_hint(self, row: int, height: int) -> None:
        """Patch one row's hint (the streaming reply grows; nothing else moved)."""
        hints, rows = self._hints, self._rows()
        if hints is not None and self._hints_rows is rows and 0 <= row < len(hints):
            hints[row] = QSize(self.width, height)
