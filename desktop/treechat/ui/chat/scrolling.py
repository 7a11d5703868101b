"""Keeps the chat list still while row heights change under it: the anchor (a row's top edge,
or the end) that stays put, the exact heights of the rows on and near the screen, and the
rows far off screen measured in the background a slice at a time, nearest first."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from PySide6.QtCore import QObject, QPoint, QTimer
from PySide6.QtWidgets import QListView, QStyle

from .delegate import ChatDelegate
from .model import ChatModel, ChatRow

# Rows off screen are measured in the background, in slices of this many milliseconds with
# as long a pause between them (input, painting and the store's worker get their turn),
# once scrolling has paused, or a session has been open, this long.
BACKGROUND_SLICE_MS = 12
IDLE_AFTER_SCROLL_S = 0.3
APPLY_EVERY_SLICES = 20  # background heights go live about every 0.5 s (one relayout)
STICK_SLACK = 6
MEASURE_REACH_SCREENS = 0.5  # rows measured beyond the screen while scrolling
EARLIER_WITHIN_SCREENS = 2  # rows above a long path's part on show come in this near its top


@dataclass(frozen=True, slots=True)
class Anchor:
    """What stays put on screen while row heights change: a row's top edge, or the end."""

    row: int = -1
    offset: int = 0
    bottom: bool = False
    key: str = ""  # the row's key: found again when rows came in or went above it


class ScrollKeeper(QObject):
    """Lays the list out and measures its rows for the chat view. `stick` is whether the
    list follows its end (it was at the bottom when the content changed)."""

    def __init__(self, list_view: QListView, model: ChatModel, delegate: ChatDelegate,
                 visible: Callable[[], bool],
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        super().__init__(list_view)
        self._list = list_view
        self._model = model
        self._delegate = delegate
        self._visible = visible
        self._monotonic = monotonic
        self.stick = True
        self.settling = False
        self._quiet_since = 0.0  # when the user last scrolled or a session opened
        self._background_middle = -1
        self._background_distance = 0
        self._background_slices = 0
        self._background = QTimer(self)
        self._background.setSingleShot(True)
        self._background.timeout.connect(self._measure_in_background)
        bar = list_view.verticalScrollBar()
        bar.valueChanged.connect(self._scrolled)
        bar.rangeChanged.connect(self._range_changed)

    @contextmanager
    def guard(self) -> Iterator[None]:
        """Changes made inside do not settle the list again (the caller settles once)."""
        was = self.settling
        self.settling = True
        try:
            yield
        finally:
            self.settling = was

    def layout_width(self) -> int:
        # independent of whether the scroll bar shows, so heights never flip-flop with it
        frame = self._list.frameWidth() * 2
        bar = self._list.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        return max(160, self._list.width() - frame - bar)

    # --- anchors -------------------------------------------------------------------------

    def capture_anchor(self) -> Anchor:
        """The first row that starts on screen (or the one filling it): a row cut by the top
        edge may be the one whose height is corrected next, and what is read below it
        must not move when it is."""
        if self.stick:
            return Anchor(bottom=True)
        index = self._list.indexAt(QPoint(self._probe_x(), 0))
        if not index.isValid():
            return Anchor(bottom=self.stick)
        rect = self._list.visualRect(index)
        if rect.top() < 0 and index.row() + 1 < self._model.rowCount():
            below = self._list.visualRect(self._model.index(index.row() + 1))
            if below.top() < self._list.viewport().height():
                return Anchor(row=index.row() + 1, offset=below.top(),
                              key=self._model.row_at(index.row() + 1).key)
        return Anchor(row=index.row(), offset=rect.top(), key=self._model.row_at(index.row()).key)

    def current_anchor(self) -> Anchor:
        """The end when following it, else the row on screen."""
        return Anchor(bottom=True) if self.stick else self.capture_anchor()

    def _probe_x(self) -> int:
        return max(1, self._list.viewport().width() // 2)

    def restore_anchor(self, anchor: Anchor) -> None:
        bar = self._list.verticalScrollBar()
        if anchor.bottom:
            bar.setValue(bar.maximum())
            return
        row = anchor.row
        if anchor.key:
            found = self._model.index_of(anchor.key)
            row = found if found >= 0 else row
        if 0 <= row < self._model.rowCount():
            rect = self._list.visualRect(self._model.index(row))
            bar.setValue(bar.value() + rect.top() - anchor.offset)

    def at_bottom(self) -> bool:
        bar = self._list.verticalScrollBar()
        return bar.value() >= bar.maximum() - STICK_SLACK

    # --- laying out ----------------------------------------------------------------------

    def relayout(self, anchor: Anchor | None = None, *, keep_hints: bool = False) -> None:
        if anchor is None:
            anchor = self.capture_anchor()
        with self.guard():
            if not keep_hints:
                self._delegate.invalidate_hints()
            self._list.doItemsLayout()
            self.restore_anchor(anchor)

    def prepare_bottom(self) -> None:
        """Measure the rows the bottom of the list shows before the first layout, so opening
        at the bottom needs one layout pass and paints exact rows straight away. The rows
        above keep their estimates until scrolling or the background reaches them."""
        if not self._visible():
            return
        delegate = self._delegate
        delegate.width = self.layout_width()
        want = self._list.viewport().height()
        total = 0
        for row in reversed(self._model.rows):
            if not delegate.is_measured(row):
                delegate.measure(row)
            total += delegate.row_height(row)
            if total >= want:
                break

    def settle(self, anchor: Anchor) -> None:
        """Lay the list out and make sure every row on (or near) the screen has its exact
        height, keeping `anchor` in place."""
        if self.settling:
            return
        with self.guard():
            self._delegate.width = self.layout_width()
            self._delegate.invalidate_hints()
            self._list.doItemsLayout()
            self.restore_anchor(anchor)
            if not self._visible():
                return  # no real size yet: estimates until showEvent settles again
            for _ in range(4):
                if not self._measure_near_viewport():
                    break
                self._list.doItemsLayout()
                self.restore_anchor(anchor)
        self._schedule_background()

    def resized(self, anchor: Anchor) -> None:
        if self.layout_width() != self._delegate.width:
            self.settle(anchor)
        elif anchor.bottom:
            self.restore_anchor(anchor)

    def rows_changed(self) -> None:
        if not self.settling:
            self.settle(self.capture_anchor())

    def scroll_to_bottom(self) -> None:
        self.stick = True
        self.settle(Anchor(bottom=True))

    # --- measuring -----------------------------------------------------------------------

    def _measure_near_viewport(self) -> bool:
        """Make the rows on screen exact; True if any height moved. When some are missing,
        measure half a screen each way too: a frame of scrolling lays out the row or two
        coming into view, never a burst of a few screens' Markdown at once (the list holds
        only the part of a long chat on show, so the relayout this costs is small)."""
        rows = self._model.rows
        if not rows:
            return False
        height = self._list.viewport().height()
        first_index = self._list.indexAt(QPoint(self._probe_x(), 0))
        last_index = self._list.indexAt(QPoint(self._probe_x(), max(0, height - 1)))
        first = first_index.row() if first_index.isValid() else 0
        last = last_index.row() if last_index.isValid() else len(rows) - 1
        if all(self._delegate.is_measured(rows[i]) for i in range(first, last + 1)):
            return False
        changed = False
        for i in self._span(first, last, height * MEASURE_REACH_SCREENS):
            changed |= self._ensure(rows[i])
        return changed

    def _span(self, first: int, last: int, reach: float) -> list[int]:
        """Rows first..last plus those within `reach` pixels above and below."""
        rows = self._model.rows
        out = list(range(first, last + 1))
        covered, i = 0.0, first - 1
        while i >= 0 and covered < reach:
            out.append(i)
            covered += self._delegate.row_height(rows[i])
            i -= 1
        covered, i = 0.0, last + 1
        while i < len(rows) and covered < reach:
            out.append(i)
            covered += self._delegate.row_height(rows[i])
            i += 1
        return out

    def _ensure(self, row: ChatRow) -> bool:
        if self._delegate.is_measured(row):
            return False
        return self._delegate.measure(row)[1]

    def hold_background(self) -> None:
        """Measure nothing off screen for a moment: another session is about to be shown
        (measuring these rows would be wasted, and slow its loading down) or just was (what
        it shows is measured; the rest starts again from the screen once all is quiet)."""
        self._quiet_since = self._monotonic()
        self._background_middle = -1
        self._background_distance = 0
        self._background.start(int(IDLE_AFTER_SCROLL_S * 1000))

    def _schedule_background(self) -> None:
        if not self._background.isActive():
            self._background.start(60)

    def _measure_in_background(self) -> None:
        """Measure rows far from the screen a slice at a time, nearest first, and put the
        heights to use in batches, so the scroll bar converges on the true length and
        scrolling rarely waits for layout."""
        if self._monotonic() - self._quiet_since < IDLE_AFTER_SCROLL_S:
            self._background.start(int(IDLE_AFTER_SCROLL_S * 1000))
            return
        rows = self._model.rows
        if not rows or not self._visible():
            return
        centre = self._list.indexAt(QPoint(self._probe_x(),
                                           self._list.viewport().height() // 2))
        middle = centre.row() if centre.isValid() else len(rows) - 1
        # a slice is a budget of this thread's time, whatever the clock the app runs on
        deadline = time.perf_counter() + BACKGROUND_SLICE_MS / 1000
        remaining = False
        start = self._background_distance if middle == self._background_middle else 0
        self._background_middle = middle
        distance = start
        while distance < len(rows):
            for i in (middle - distance, middle + distance):
                if 0 <= i < len(rows) and not self._delegate.is_known(rows[i]):
                    self._delegate.measure(rows[i], cache=False, defer=True)
            distance += 1
            if time.perf_counter() > deadline:
                remaining = distance < len(rows)
                break
        if not remaining:
            remaining = self._measure_earlier(deadline)
        self._background_distance = distance
        self._background_slices += 1
        apply = not remaining or self._background_slices % APPLY_EVERY_SLICES == 0
        if apply and self._delegate.apply_pending():
            self.relayout()
        if remaining:
            self._background.start(BACKGROUND_SLICE_MS)
        else:
            self._background_distance = 0

    def _measure_earlier(self, deadline: float) -> bool:
        """Measure the rows that come in next above a long chat's part on show, nearest
        first, so that scrolling up to them finds their heights as it finds those of the
        rows in the list; True when the slice ended before all were."""
        for row in reversed(self._model.earlier_rows()):
            if not self._delegate.is_known(row):
                self._delegate.measure(row, cache=False, defer=True)
                if time.perf_counter() > deadline:
                    return True
        return False

    def _scrolled(self, value: int) -> None:
        if self.settling:
            return
        self._quiet_since = self._monotonic()
        bar = self._list.verticalScrollBar()
        self.stick = value >= bar.maximum() - STICK_SLACK
        anchor = self.capture_anchor()
        if value < EARLIER_WITHIN_SCREENS * self._list.viewport().height() \
                and self._model.has_earlier():
            # near the top of a long path's part on show: the rows above come in, and
            # what is on screen stays where it is (its rows moved down by those added)
            with self.guard():
                self._model.show_earlier()
            self._delegate.apply_pending()  # their heights, measured ahead
            self.settle(anchor)
            return
        with self.guard():
            for _ in range(3):
                if not self._measure_near_viewport():
                    break
                self._list.doItemsLayout()
                self.restore_anchor(anchor)
        self._schedule_background()

    def _range_changed(self, _low: int, high: int) -> None:
        if self.stick and not self.settling:
            self._list.verticalScrollBar().setValue(high)
