"""The conversation in the centre of the window: the active path of a session as a list
(model + delegate), the reply streaming in, version switches and per-message actions."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QEvent, QPoint, QRectF, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QAction,
    QContextMenuEvent,
    QDesktopServices,
    QFocusEvent,
    QFont,
    QGuiApplication,
    QKeyEvent,
    QKeySequence,
    QPainter,
    QPaintEvent,
    QResizeEvent,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QFrame,
    QListView,
    QMenu,
    QStyle,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from ...services.events import TurnError
from ...services.sessions import SessionView
from .delegate import ChatDelegate
from .message_editor import MessageEditor
from .model import ChatModel, ChatRow, RowKind

# Streamed text is painted at most this often (the coalescing interval grows when laying
# out the reply gets slow, so a long reply never starves the event loop).
STREAM_INTERVAL_MS = 33
STREAM_INTERVAL_MAX_MS = 120
# Rows off screen are measured in the background, in slices of this many milliseconds with
# as long a pause between them (input, painting and the store's worker get their turn),
# once scrolling has paused, or a session has been open, this long.
BACKGROUND_SLICE_MS = 12
IDLE_AFTER_SCROLL_S = 0.3
APPLY_EVERY_SLICES = 20  # background heights go live about every 0.5 s (one relayout)
STICK_SLACK = 6


@dataclass(frozen=True, slots=True)
class _Anchor:
    """What stays put on screen while row heights change: a row's top edge, or the end."""

    row: int = -1
    offset: int = 0
    bottom: bool = False


class _ChatList(QListView):
    """The list widget; hands key presses, context menus and resizes to its ChatView."""

    def __init__(self, owner: ChatView) -> None:
        super().__init__(owner)
        self._owner = owner

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if self._owner._handle_key(event):
            return
        before = self.currentIndex()
        super().keyPressEvent(event)
        # auto-scroll is off (a click on a tall message must not jump to its top), so
        # moving between messages with the keyboard brings the new one into view here
        if self.currentIndex() != before and self.currentIndex().isValid():
            self.scrollTo(self.currentIndex(), QAbstractItemView.ScrollHint.EnsureVisible)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        if event.reason() == QContextMenuEvent.Reason.Mouse:
            index = self.indexAt(event.pos())
        else:
            index = self.currentIndex()
            if index.isValid():
                event = QContextMenuEvent(event.reason(), self.visualRect(index).center(),
                                          self.viewport().mapToGlobal(
                                              self.visualRect(index).center()))
        if index.isValid():
            self.setCurrentIndex(index)
            self._owner._open_menu(index.row(), event.globalPos())

    def focusInEvent(self, event: QFocusEvent) -> None:
        # arriving by keyboard lands on the newest message, not the oldest
        if not self.currentIndex().isValid() and self.model() is not None:
            count = self.model().rowCount()
            if count:
                self.setCurrentIndex(self.model().index(count - 1, 0))
        super().focusInEvent(event)

    def resizeEvent(self, event: QResizeEvent) -> None:
        anchor = self._owner._capture_anchor()
        super().resizeEvent(event)
        self._owner._resized(anchor)

    def updateGeometries(self) -> None:
        super().updateGeometries()
        # QListView steps by whole items; a chat scrolls by lines
        self.verticalScrollBar().setSingleStep(36)
        self.verticalScrollBar().setPageStep(max(36, self.viewport().height() - 48))

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        if self.model() is not None and self.model().rowCount() == 0:
            self._owner._paint_empty(self.viewport())

    def viewportEvent(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Leave:
            self._owner.delegate.set_hover(None)
        elif event.type() == QEvent.Type.MouseButtonPress:
            self._owner.delegate.keyboard_focus = False
        return super().viewportEvent(event)


class _MessageReader(QDialog):
    """One message as selectable text, beside the conversation (never modal)."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("messageReader")
        self.setModal(False)
        self.resize(720, 560)
        self.browser = QTextBrowser(self)
        self.browser.setOpenExternalLinks(True)
        self.browser.setAccessibleName("Message text")
        self.browser.document().setDocumentMargin(14)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addWidget(self.browser, 1)
        layout.addWidget(buttons)

    def show_row(self, row: ChatRow) -> None:
        who = {RowKind.USER: "Your message", RowKind.TOOL: f"Result of {row.label}",
               RowKind.SYSTEM: "System prompt"}.get(row.kind, row.model or "Reply")
        self.setWindowTitle(f"{who} — select and copy any part")
        if row.kind in (RowKind.ASSISTANT, RowKind.STREAM):
            self.browser.setMarkdown(row.text)
        else:
            self.browser.setPlainText(row.text)
        self.show()
        self.activateWindow()
        self.browser.setFocus()


class ChatView(QWidget):
    """The active path of one session, newest at the bottom.

    The window drives it: `set_view` after anything that moved HEAD, `begin_stream` /
    `append_stream_text` / `end_stream` while a reply arrives, `set_busy` while a turn runs.
    User intents come back as signals; nothing here touches the store."""

    retryRequested = Signal(str)
    editRequested = Signal(str, str)
    branchRequested = Signal(str)
    pinRequested = Signal(str, bool)
    copyRequested = Signal(str)
    versionRequested = Signal(str, int)
    settingsRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatView")
        self.model = ChatModel(self)
        self.list = _ChatList(self)
        self.list.setObjectName("chatList")
        self.list.setAccessibleName("Conversation")
        self.list.setAccessibleDescription(
            "Messages of the current branch. Up and Down move between messages; "
            "Ctrl+C copies, E edits, R retries, B branches, P pins, Alt+Left and Alt+Right "
            "switch versions, the menu key lists every action."
        )
        self.list.setFrameShape(QFrame.Shape.NoFrame)
        self.list.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setUniformItemSizes(False)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.list.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.list.setMouseTracking(True)
        self.list.setSpacing(0)
        self.list.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.list.setAutoScroll(False)
        self.delegate = ChatDelegate(self.list, lambda: self.model.rows)
        self.list.setItemDelegate(self.delegate)
        self.list.setModel(self.model)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.list)
        self.setFocusProxy(self.list)

        self._reader: _MessageReader | None = None
        self._stick = True
        self._settling = False
        self._busy = False
        self._quiet_since = 0.0  # when the user last scrolled or a session opened
        self._background_middle = -1
        self._background_distance = 0
        self._background_slices = 0
        self._stream_parts: list[str] = []
        self._stream_interval = STREAM_INTERVAL_MS
        self.repaint_count = 0  # stream flushes painted (tests read it)
        self._flush_timer = QTimer(self)
        self._flush_timer.setSingleShot(True)
        self._flush_timer.timeout.connect(self._flush_stream)
        self._typing_timer = QTimer(self)
        self._typing_timer.setInterval(380)
        self._typing_timer.timeout.connect(self._tick_typing)
        self._background = QTimer(self)
        self._background.setSingleShot(True)
        self._background.timeout.connect(self._measure_in_background)
        self._copied_timer = QTimer(self)
        self._copied_timer.setSingleShot(True)
        self._copied_timer.timeout.connect(self.list.viewport().update)
        self._wait_timer = QTimer(self)
        self._wait_timer.setInterval(1000)
        self._wait_timer.timeout.connect(self._tick_wait)

        bar = self.list.verticalScrollBar()
        bar.valueChanged.connect(self._scrolled)
        bar.rangeChanged.connect(self._range_changed)
        self.delegate.actionTriggered.connect(self._on_action)
        self.delegate.editSubmitted.connect(self._edit_submitted)
        self.delegate.editCancelled.connect(self._close_editor)
        self.delegate.sizeHintChanged.connect(lambda _index: self._relayout())
        self.model.rowsInserted.connect(lambda *_: self._rows_changed())
        self.model.rowsRemoved.connect(lambda *_: self._rows_changed())
        self.model.dataChanged.connect(lambda *_: self._rows_changed())

    # --- public API ----------------------------------------------------------------------

    def set_view(self, view: SessionView) -> None:
        """Show `view`'s active path. Stays at the bottom if it was there (or the session
        changed); otherwise the message at the top of the screen stays where it is."""
        previous = self.model.view
        new_session = previous is None or previous.session.id != view.session.id
        drafts = self._editor_drafts()
        anchor = _Anchor(bottom=True) if (new_session or self._stick) else self._capture_anchor()
        if new_session:
            self._stream_parts.clear()
            self._flush_timer.stop()
            self.hold_background()
        elif self.model.streaming:
            # text still buffered belongs to what streamed so far: if this view committed
            # it as a node, it must go with the rest, not reappear in the continuing reply
            self._flush_stream()
        with self._settle_guard():
            self.model.set_view(view)
        if anchor.bottom:
            self._stick = True
            self._prepare_bottom()
        self._settle(anchor)
        self._reopen_editors(drafts)
        self._update_typing()

    def begin_stream(self, parent_id: str | None, model_label: str) -> None:
        """A reply to `parent_id` starts: show it (typing dots until text arrives)."""
        self._stream_parts.clear()
        self._flush_timer.stop()
        self._wait_timer.stop()
        self._stick = True
        with self._settle_guard():
            self.model.begin_stream(parent_id, model_label)
        self._settle(_Anchor(bottom=True))
        self._update_typing()

    def append_stream_text(self, text: str) -> None:
        """Add streamed text; painted at most ~30 times a second."""
        if not text:
            return
        self._stream_parts.append(text)
        if not self._flush_timer.isActive():
            self._flush_timer.start(self._stream_interval)

    def end_stream(self) -> None:
        self._flush_stream()
        self.model.end_stream()
        self._update_typing()

    def set_busy(self, busy: bool) -> None:
        """While a turn runs, retry and edit are shown disabled and do nothing."""
        self._busy = busy
        self.delegate.busy = busy
        for editor in self.list.viewport().findChildren(MessageEditor):
            editor.set_busy(busy)
        self.list.viewport().update()

    def is_busy(self) -> bool:
        return self._busy

    def show_turn_error(self, error: TurnError) -> None:
        """An inline row under the conversation saying what failed, with its action."""
        self._flush_stream()
        if error.action == "wait" and error.retry_after:
            self.delegate.wait_until = time.monotonic() + float(error.retry_after)
            self._wait_timer.start()
        else:
            self.delegate.wait_until = 0.0
        with self._settle_guard():
            self.model.set_error(error)
        self._settle(_Anchor(bottom=True) if self._stick else self._capture_anchor())
        self._update_typing()

    def clear_turn_error(self) -> None:
        with self._settle_guard():
            self.model.set_error(None)
        self._settle(self._capture_anchor())

    # --- streaming -----------------------------------------------------------------------

    def _flush_stream(self) -> None:
        self._flush_timer.stop()
        if not self._stream_parts:
            return
        text = self.model.stream_text() + "".join(self._stream_parts)
        self._stream_parts.clear()
        started = time.perf_counter()
        before = self.model.index_of("stream")
        old_height = self.delegate.row_height(self.model.row_at(before)) if before >= 0 else -1
        with self._settle_guard():
            index = self.model.set_stream_text(text)
        if index < 0:
            return
        anchor = _Anchor(bottom=True) if self._stick else self._capture_anchor()
        # only this row changed: patch its hint; lay the list out only when it grew a line
        height, _ = self.delegate.measure(self.model.row_at(index), patch=index)
        if height != old_height:
            self._relayout(anchor, keep_hints=True)
        else:
            self.list.update(self.model.index(index))
        self.repaint_count += 1
        spent_ms = (time.perf_counter() - started) * 1000
        # laying out a long reply 30 times a second would starve input: back off
        self._stream_interval = int(min(STREAM_INTERVAL_MAX_MS,
                                        max(STREAM_INTERVAL_MS, spent_ms * 3)))
        self._update_typing()

    def _update_typing(self) -> None:
        waiting = self.model.streaming and not self.model.stream_text()
        if waiting and not self._typing_timer.isActive():
            self._typing_timer.start()
        elif not waiting:
            self._typing_timer.stop()

    def _tick_typing(self) -> None:
        self.delegate.typing_phase += 1
        index = self.model.index_of("stream")
        if index >= 0:
            self.list.update(self.model.index(index))

    def _tick_wait(self) -> None:
        if time.monotonic() >= self.delegate.wait_until:
            self._wait_timer.stop()
        self.list.viewport().update()

    # --- measuring and scrolling ---------------------------------------------------------

    def _layout_width(self) -> int:
        # independent of whether the scroll bar shows, so heights never flip-flop with it
        frame = self.list.frameWidth() * 2
        bar = self.list.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
        return max(160, self.list.width() - frame - bar)

    class _Guard:
        def __init__(self, view: ChatView) -> None:
            self.view = view
            self.was = False

        def __enter__(self) -> None:
            self.was = self.view._settling
            self.view._settling = True

        def __exit__(self, *exc: object) -> None:
            self.view._settling = self.was

    def _settle_guard(self) -> ChatView._Guard:
        return ChatView._Guard(self)

    def _capture_anchor(self) -> _Anchor:
        """The first row that starts on screen (or the one filling it): a row cut by the top
        edge may be the one whose height is corrected next, and what is read below it
        must not move when it is."""
        if self._stick:
            return _Anchor(bottom=True)
        index = self.list.indexAt(QPoint(self._probe_x(), 0))
        if not index.isValid():
            return _Anchor(bottom=self._stick)
        rect = self.list.visualRect(index)
        if rect.top() < 0 and index.row() + 1 < self.model.rowCount():
            below = self.list.visualRect(self.model.index(index.row() + 1))
            if below.top() < self.list.viewport().height():
                return _Anchor(row=index.row() + 1, offset=below.top())
        return _Anchor(row=index.row(), offset=rect.top())

    def _probe_x(self) -> int:
        return max(1, self.list.viewport().width() // 2)

    def _restore_anchor(self, anchor: _Anchor) -> None:
        bar = self.list.verticalScrollBar()
        if anchor.bottom:
            bar.setValue(bar.maximum())
            return
        if 0 <= anchor.row < self.model.rowCount():
            rect = self.list.visualRect(self.model.index(anchor.row))
            bar.setValue(bar.value() + rect.top() - anchor.offset)

    def _relayout(self, anchor: _Anchor | None = None, *, keep_hints: bool = False) -> None:
        if anchor is None:
            anchor = self._capture_anchor()
        with self._settle_guard():
            if not keep_hints:
                self.delegate.invalidate_hints()
            self.list.doItemsLayout()
            self._restore_anchor(anchor)

    def _prepare_bottom(self) -> None:
        """Measure the rows the bottom of the list shows before the first layout, so opening
        at the bottom needs one layout pass and paints exact rows straight away. The rows
        above keep their estimates until scrolling or the background reaches them."""
        if not self.isVisible():
            return
        self.delegate.width = self._layout_width()
        want = self.list.viewport().height()
        total = 0
        for row in reversed(self.model.rows):
            if not self.delegate.is_measured(row):
                self.delegate.measure(row)
            total += self.delegate.row_height(row)
            if total >= want:
                break

    def _settle(self, anchor: _Anchor) -> None:
        """Lay the list out and make sure every row on (or near) the screen has its exact
        height, keeping `anchor` in place."""
        if self._settling:
            return
        with self._settle_guard():
            self.delegate.width = self._layout_width()
            self.delegate.invalidate_hints()
            self.list.doItemsLayout()
            self._restore_anchor(anchor)
            if not self.isVisible():
                return  # no real size yet: estimates until showEvent settles again
            for _ in range(4):
                if not self._measure_near_viewport():
                    break
                self.list.doItemsLayout()
                self._restore_anchor(anchor)
        self._schedule_background()

    def _measure_near_viewport(self) -> bool:
        """Make the rows on screen exact; True if any height moved. When some are missing,
        measure three screens each way too, so that scrolling on costs a relayout every few
        screens instead of every step."""
        rows = self.model.rows
        if not rows:
            return False
        height = self.list.viewport().height()
        first_index = self.list.indexAt(QPoint(self._probe_x(), 0))
        last_index = self.list.indexAt(QPoint(self._probe_x(), max(0, height - 1)))
        first = first_index.row() if first_index.isValid() else 0
        last = last_index.row() if last_index.isValid() else len(rows) - 1
        if all(self.delegate.is_measured(rows[i]) for i in range(first, last + 1)):
            return False
        changed = False
        for i in self._span(first, last, height * 3):
            changed |= self._ensure(rows[i])
        return changed

    def _span(self, first: int, last: int, reach: float) -> list[int]:
        """Rows first..last plus those within `reach` pixels above and below."""
        rows = self.model.rows
        out = list(range(first, last + 1))
        covered, i = 0.0, first - 1
        while i >= 0 and covered < reach:
            out.append(i)
            covered += self.delegate.row_height(rows[i])
            i -= 1
        covered, i = 0.0, last + 1
        while i < len(rows) and covered < reach:
            out.append(i)
            covered += self.delegate.row_height(rows[i])
            i += 1
        return out

    def _ensure(self, row: ChatRow) -> bool:
        if self.delegate.is_measured(row):
            return False
        return self.delegate.measure(row)[1]

    def hold_background(self) -> None:
        """Measure nothing off screen for a moment: another session is about to be shown
        (measuring these rows would be wasted, and slow its loading down) or just was (what
        it shows is measured; the rest starts again from the screen once all is quiet)."""
        self._quiet_since = time.monotonic()
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
        if time.monotonic() - self._quiet_since < IDLE_AFTER_SCROLL_S:
            self._background.start(int(IDLE_AFTER_SCROLL_S * 1000))
            return
        rows = self.model.rows
        if not rows or not self.isVisible():
            return
        centre = self.list.indexAt(QPoint(self._probe_x(), self.list.viewport().height() // 2))
        middle = centre.row() if centre.isValid() else len(rows) - 1
        deadline = time.perf_counter() + BACKGROUND_SLICE_MS / 1000
        remaining = False
        start = self._background_distance if middle == self._background_middle else 0
        self._background_middle = middle
        distance = start
        while distance < len(rows):
            for i in (middle - distance, middle + distance):
                if 0 <= i < len(rows) and not self.delegate.is_known(rows[i]):
                    self.delegate.measure(rows[i], cache=False, defer=True)
            distance += 1
            if time.perf_counter() > deadline:
                remaining = distance < len(rows)
                break
        self._background_distance = distance
        self._background_slices += 1
        apply = not remaining or self._background_slices % APPLY_EVERY_SLICES == 0
        if apply and self.delegate.apply_pending():
            self._relayout()
        if remaining:
            self._background.start(BACKGROUND_SLICE_MS)
        else:
            self._background_distance = 0

    def _scrolled(self, value: int) -> None:
        if self._settling:
            return
        self._quiet_since = time.monotonic()
        bar = self.list.verticalScrollBar()
        self._stick = value >= bar.maximum() - STICK_SLACK
        anchor = self._capture_anchor()
        with self._settle_guard():
            for _ in range(3):
                if not self._measure_near_viewport():
                    break
                self.list.doItemsLayout()
                self._restore_anchor(anchor)
        self._schedule_background()

    def _range_changed(self, _low: int, high: int) -> None:
        if self._stick and not self._settling:
            self.list.verticalScrollBar().setValue(high)

    def _resized(self, anchor: _Anchor) -> None:
        if self._layout_width() != self.delegate.width:
            self._settle(anchor)
        elif anchor.bottom:
            self._restore_anchor(anchor)

    def _rows_changed(self) -> None:
        if not self._settling:
            self._settle(self._capture_anchor())

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        self._settle(self._capture_anchor())

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        themed = event.type() in (QEvent.Type.PaletteChange, QEvent.Type.FontChange,
                                  QEvent.Type.StyleChange) and hasattr(self, "delegate")
        # the list inherits both, but may not have been told yet: read them from here
        if themed and self.delegate.refresh_theme(self.palette(), self.font()):
            self._settle(self._capture_anchor())
            self.list.viewport().update()

    # --- actions -------------------------------------------------------------------------

    def _on_action(self, key: str, action: str) -> None:
        index = self.model.index_of(key)
        if index < 0:
            return
        row = self.model.row_at(index)
        if not self.delegate.action_enabled(row, action):
            return
        node_id = row.node_id or ""
        if action == "copy":
            self._copy_row(row)
        elif action.startswith("code:"):
            text = self.delegate.code_text(row, int(action.split(":", 1)[1]))
            QGuiApplication.clipboard().setText(text)
            self._flash_copied(key, action)
        elif action.startswith("link:"):
            url = QUrl(action[5:])
            if url.scheme() in ("http", "https", "mailto"):
                QDesktopServices.openUrl(url)
        elif action == "edit":
            self.start_edit(key)
        elif action == "read":
            self.open_reader(key)
        elif action == "retry" and node_id:
            self.retryRequested.emit(node_id)
        elif action == "branch" and node_id:
            self.branchRequested.emit(node_id)
        elif action == "pin" and node_id:
            self.pinRequested.emit(node_id, not row.pinned)
        elif action in ("prev", "next") and node_id:
            n, m = row.version
            target = n - 1 if action == "prev" else n + 1
            if 1 <= target <= m:
                self.versionRequested.emit(node_id, target)
        elif action in ("toggle", "more"):
            with self._settle_guard():
                self.model.toggle_expanded(key)
            self._settle(self._capture_anchor())
            if action == "more":  # folding a tall message can leave its top off screen
                self.list.scrollTo(self.model.index(self.model.index_of(key)),
                                   QAbstractItemView.ScrollHint.EnsureVisible)
        elif action in ("error:retry", "error:wait") and row.retry_target:
            self.retryRequested.emit(row.retry_target)
        elif action == "error:settings":
            self.settingsRequested.emit()

    def _copy_row(self, row: ChatRow) -> None:
        text = row.text
        if row.kind == RowKind.ERROR and row.error is not None:
            text = row.error.message
        QGuiApplication.clipboard().setText(text)
        self._flash_copied(row.key, "copy")
        if row.node_id:
            self.copyRequested.emit(row.node_id)

    def _flash_copied(self, key: str, action: str) -> None:
        self.delegate.mark_copied(key, action)
        self.list.viewport().update()
        self._copied_timer.start(1700)

    def trigger(self, key: str, action: str) -> None:
        """Run a row action as if its button was clicked (keyboard and menu path)."""
        self._on_action(key, action)

    # --- editing -------------------------------------------------------------------------

    def start_edit(self, key: str) -> MessageEditor | None:
        index = self.model.index_of(key)
        if index < 0 or self._busy:
            return None
        row = self.model.row_at(index)
        if row.kind != RowKind.USER:
            return None
        model_index = self.model.index(index)
        self.list.scrollTo(model_index)
        self.list.openPersistentEditor(model_index)
        editor = self.editor_for(key)
        if editor is not None:
            editor.setFocus()
        return editor

    def editor_for(self, key: str) -> MessageEditor | None:
        """The open editor of a message, if any."""
        return self.delegate.editor(key)

    def _edit_submitted(self, key: str, text: str) -> None:
        if self._busy:
            return
        index = self.model.index_of(key)
        if index < 0:
            return
        row = self.model.row_at(index)
        self._close_editor(key)
        if row.node_id and text.strip() and text != row.text:
            self.editRequested.emit(row.node_id, text)

    def _close_editor(self, key: str) -> None:
        index = self.model.index_of(key)
        if index >= 0:
            self.list.closePersistentEditor(self.model.index(index))
        self.delegate.forget_editor(key)
        self._relayout()
        self.list.setFocus()

    def _editor_drafts(self) -> dict[str, str]:
        drafts: dict[str, str] = {}
        for key in self.delegate.editing_keys():
            editor = self.editor_for(key)
            if editor is not None:
                drafts[key] = editor.text()
        return drafts

    def _reopen_editors(self, drafts: dict[str, str]) -> None:
        for key, text in drafts.items():
            if self.model.index_of(key) >= 0 and self.editor_for(key) is None:
                self.delegate.forget_editor(key)
                editor = self.start_edit(key)
                if editor is not None:
                    editor.set_text(text)
            elif self.model.index_of(key) < 0:
                self.delegate.forget_editor(key)

    # --- keyboard and menu ---------------------------------------------------------------

    def _current_row(self) -> ChatRow | None:
        index = self.list.currentIndex()
        if not index.isValid() or index.row() >= self.model.rowCount():
            return None
        return self.model.row_at(index.row())

    def _handle_key(self, event: QKeyEvent) -> bool:
        key = event.key()
        mods = event.modifiers()
        if not self.delegate.keyboard_focus:
            self.delegate.keyboard_focus = True
            self.list.viewport().update()
        if key == Qt.Key.Key_End and not mods:
            self.scroll_to_bottom()
            return True
        row = self._current_row()
        if row is None:
            return False
        alt = bool(mods & Qt.KeyboardModifier.AltModifier)
        plain = not (mods & ~Qt.KeyboardModifier.KeypadModifier)
        if event.matches(QKeySequence.StandardKey.Copy):
            self.trigger(row.key, "copy")
            return True
        ctrl_shift = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
        if key == Qt.Key.Key_C and (mods & ctrl_shift) == ctrl_shift:
            self.trigger(row.key, "read")
            return True
        mapping: dict[Any, str] = {}
        if plain:
            mapping = {Qt.Key.Key_E: "edit", Qt.Key.Key_F2: "edit", Qt.Key.Key_R: "retry",
                       Qt.Key.Key_B: "branch", Qt.Key.Key_P: "pin",
                       Qt.Key.Key_Return: "toggle", Qt.Key.Key_Enter: "toggle",
                       Qt.Key.Key_Space: "toggle"}
        elif alt:
            mapping = {Qt.Key.Key_Left: "prev", Qt.Key.Key_Right: "next"}
        action = mapping.get(key)
        if action is None:
            return False
        if action == "toggle" and row.kind not in (RowKind.TOOL, RowKind.SYSTEM):
            if self.delegate.button(row, "more") is not None:
                self.trigger(row.key, "more")
                return True
            if row.kind == RowKind.ERROR:
                error_action = next((b.id for b in self.delegate.layout(row).buttons
                                     if b.id.startswith("error:")), "")
                if error_action:
                    self.trigger(row.key, error_action)
                return True
            return False
        self.trigger(row.key, action)
        return True

    def _menu_actions(self, row: ChatRow) -> list[tuple[str, str, str]]:
        """(action id, label, shortcut hint) for the row's context menu."""
        items: list[tuple[str, str, str]] = [("copy", "Copy", "Ctrl+C")]
        if self.delegate.action_enabled(row, "read"):
            items.append(("read", "Select text…", "Ctrl+Shift+C"))
        body = self.delegate.layout(row).body
        if body is not None:
            for i, _block in enumerate(body.code_blocks):
                items.append((f"code:{i}", f"Copy code block {i + 1}", ""))
        if row.kind == RowKind.USER:
            items.append(("edit", "Edit…", "E"))
        if self.delegate.button(row, "retry") is not None:
            items.append(("retry", "Retry", "R"))
        if row.node_id and row.kind in (RowKind.USER, RowKind.ASSISTANT):
            items.append(("branch", "Branch into new session", "B"))
            items.append(("pin", "Unpin" if row.pinned else "Pin", "P"))
        if row.has_versions:
            items.append(("prev", "Previous version", "Alt+Left"))
            items.append(("next", "Next version", "Alt+Right"))
        if row.kind in (RowKind.TOOL, RowKind.SYSTEM):
            items.append(("toggle", "Hide details" if row.expanded else "Show details",
                          "Enter"))
        for b in self.delegate.layout(row).buttons:
            if b.id.startswith("error:"):
                items.append((b.id, b.label, ""))
        return items

    def _open_menu(self, index: int, global_pos: QPoint) -> QMenu:
        menu = self.context_menu(self.model.row_at(index).key)
        menu.popup(global_pos)  # not exec(): no nested event loop under qasync
        self._menu = menu
        return menu

    def context_menu(self, key: str) -> QMenu:
        """Every action of a message, with its shortcut: the keyboard way to all of them."""
        row = self.model.row_at(self.model.index_of(key))
        menu = QMenu(self)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        for action_id, label, hint in self._menu_actions(row):
            action = QAction(label, menu)
            if hint:
                action.setShortcut(QKeySequence(hint))
                action.setShortcutVisibleInContextMenu(True)
            action.setEnabled(self.delegate.action_enabled(row, action_id)
                              or action_id in ("copy", "toggle") or action_id.startswith("code:"))
            key = row.key
            action.triggered.connect(lambda _checked=False, a=action_id, k=key: self.trigger(k, a))
            menu.addAction(action)
        return menu

    def open_reader(self, key: str) -> QDialog | None:
        """The message in a small non-modal window where any part of it can be selected
        (rows are painted, so their text cannot be selected in place)."""
        index = self.model.index_of(key)
        if index < 0:
            return None
        row = self.model.row_at(index)
        if self._reader is None:
            self._reader = _MessageReader(self)
        self._reader.show_row(row)
        return self._reader

    def scroll_to_bottom(self) -> None:
        self._stick = True
        self._settle(_Anchor(bottom=True))

    def at_bottom(self) -> bool:
        bar = self.list.verticalScrollBar()
        return bar.value() >= bar.maximum() - STICK_SLACK

    # --- empty state ---------------------------------------------------------------------

    def _paint_empty(self, viewport: QWidget) -> None:
        painter = QPainter(viewport)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        colors = self.delegate.colors
        rect = QRectF(viewport.rect())
        title = QFont(self.delegate.theme.font)
        title.setPointSizeF(title.pointSizeF() * 1.35)
        title.setWeight(QFont.Weight.DemiBold)
        painter.setFont(title)
        painter.setPen(colors.text)
        painter.drawText(rect.adjusted(0, -30, 0, -30), int(Qt.AlignmentFlag.AlignCenter),
                         "What's on your mind?")
        painter.setFont(self.delegate.small)
        painter.setPen(colors.muted)
        painter.drawText(rect.adjusted(0, 14, 0, 14), int(Qt.AlignmentFlag.AlignCenter),
                         "Every retry and edit is kept as a version you can switch back to.")
        painter.end()

    # --- introspection for tests and benchmarks ------------------------------------------

    def row_keys(self) -> list[str]:
        return [r.key for r in self.model.rows]

    def row_rect(self, key: str) -> QRectF:
        index = self.model.index_of(key)
        if index < 0:
            return QRectF()
        return QRectF(self.list.visualRect(self.model.index(index)))

    def button_rect(self, key: str, action: str) -> QRectF:
        """Where an action's button is, in viewport coordinates (empty when absent)."""
        index = self.model.index_of(key)
        if index < 0:
            return QRectF()
        row = self.model.row_at(index)
        origin = self.list.visualRect(self.model.index(index)).topLeft()
        if action.startswith("code:"):
            body = self.delegate.layout(row).body
            block = int(action.split(":", 1)[1])
            if body is None or block >= len(body.code_blocks):
                return QRectF()
            layout = self.delegate.layout(row)
            return body.code_blocks[block].copy_rect.translated(
                layout.body_origin).translated(origin.x(), origin.y())
        button = self.delegate.button(row, action)
        if button is None:
            return QRectF()
        return button.rect.translated(origin.x(), origin.y())

    def measured_count(self) -> int:
        return sum(1 for r in self.model.rows if self.delegate.is_measured(r))

