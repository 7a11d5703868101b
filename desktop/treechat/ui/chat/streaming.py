"""The reply streaming into the chat: its text coalesced into a few repaints a second (fewer
when laying it out gets slow, so a long reply never starves the event loop; none while the
chat is hidden), and the typing dots until its first text."""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, QTimer

from .chat_list import ChatList
from .delegate import ChatDelegate
from .model import ChatModel
from .scrolling import ScrollKeeper

# Streamed text is painted at most this often (the coalescing interval grows when laying
# out the reply gets slow).
STREAM_INTERVAL_MS = 33
STREAM_INTERVAL_MAX_MS = 120


class StreamPainter(QObject):
    """`append` buffers streamed text; `flush` paints what is buffered now."""

    def __init__(self, chat_list: ChatList, model: ChatModel, delegate: ChatDelegate,
                 scroller: ScrollKeeper, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._list = chat_list
        self._model = model
        self._delegate = delegate
        self._scroller = scroller
        self._parts: list[str] = []
        self._interval = STREAM_INTERVAL_MS
        self.repaint_count = 0  # flushes painted (tests read it)
        self._flush_timer = QTimer(self)
        self._flush_timer.setSingleShot(True)
        self._flush_timer.timeout.connect(self._flush_when_seen)
        self._typing_timer = QTimer(self)
        self._typing_timer.setInterval(380)
        self._typing_timer.timeout.connect(self._tick_typing)

    def clear(self) -> None:
        """A new reply starts: nothing of the last one is still to paint."""
        self._parts.clear()
        self._flush_timer.stop()

    def append(self, text: str) -> None:
        self._parts.append(text)
        if not self._flush_timer.isActive():
            self._flush_timer.start(self._interval)

    def _flush_when_seen(self) -> None:
        """The timed paint: while the chat is not on screen (the replies side by side are
        shown in its place) the text waits, looked at a few times a second, instead of
        laying out a reply nobody sees; `flush` paints it at once whenever asked."""
        if self._parts and not self._list.isVisible():
            self._flush_timer.start(STREAM_INTERVAL_MAX_MS)
            return
        self.flush()

    def flush(self) -> None:
        self._flush_timer.stop()
        if not self._parts:
            return
        model, delegate, scroller = self._model, self._delegate, self._scroller
        text = model.stream_text() + "".join(self._parts)
        self._parts.clear()
        started = time.perf_counter()
        before = model.index_of("stream")
        old_height = delegate.row_height(model.row_at(before)) if before >= 0 else -1
        with scroller.guard():
            index = model.set_stream_text(text)
        if index < 0:
            return
        anchor = scroller.current_anchor()
        # only this row changed: patch its hint; lay the list out only when it grew a line
        height, _ = delegate.measure(model.row_at(index), patch=index)
        if height != old_height:
            scroller.relayout(anchor, keep_hints=True)
        else:
            self._list.update(model.index(index))
        self.repaint_count += 1
        spent_ms = (time.perf_counter() - started) * 1000
        # laying out a long reply 30 times a second would starve input: back off
        self._interval = int(min(STREAM_INTERVAL_MAX_MS, max(STREAM_INTERVAL_MS, spent_ms * 3)))
        self.update_typing()

    def update_typing(self) -> None:
        """Typing dots while the reply has no text yet."""
        waiting = self._model.streaming and not self._model.stream_text()
        if waiting and not self._typing_timer.isActive():
            self._typing_timer.start()
        elif not waiting:
            self._typing_timer.stop()

    def _tick_typing(self) -> None:
        self._delegate.typing_phase += 1
        index = self._model.index_of("stream")
        if index >= 0:
            self._list.update(self._model.index(index))
