"""The reply streaming into the chat: its text coalesced into a few repaints a second (fewer
when laying it out gets slow, so a long reply never starves the event loop; none while the
chat is hidden), and the typing dots until its first text. Every text streaming on screen
(the chat's reply, each column of the replies side by side) is painted on one frame clock,
all in the same pass, so three streams cost one repaint a frame, not three."""

from __future__ import annotations

import time
from collections.abc import Callable

import shiboken6
from PySide6.QtCore import QCoreApplication, QObject, QTimer

from .chat_list import ChatList
from .delegate import ChatDelegate
from .model import ChatModel
from .scrolling import ScrollKeeper

# Streamed text is painted at most this often (the coalescing interval grows when laying
# out the reply gets slow).
STREAM_INTERVAL_MS = 33
STREAM_INTERVAL_MAX_MS = 120


class FrameClock(QObject):
    """One timer for all streamed text: a stream with text to paint asks for the next frame;
    when it comes, each that asked paints once, in one pass. The frame is 33 ms, longer when
    that pass took long (three times what it took, at most 120 ms), so a slow machine is not
    kept busy drawing."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._due: dict[int, tuple[QObject, Callable[[], None]]] = {}
        self._interval = STREAM_INTERVAL_MS
        self.frames = 0  # passes painted (tests read it)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._tick)

    @property
    def interval_ms(self) -> int:
        return self._interval

    def request(self, owner: QObject, paint: Callable[[], None]) -> None:
        """`paint` runs at the next frame (once, however often it was asked for)."""
        self._due[id(owner)] = (owner, paint)
        if not self._timer.isActive():
            self._timer.start(self._interval)

    def waiting(self) -> bool:
        """Whether a frame is due (something asked to be painted)."""
        return self._timer.isActive()

    def cancel(self, owner: QObject) -> None:
        self._due.pop(id(owner), None)

    def _tick(self) -> None:
        due, self._due = self._due, {}
        started = time.perf_counter()
        for owner, paint in due.values():
            if shiboken6.isValid(owner):  # a view closed since it asked paints nothing
                paint()
        self.frames += 1
        spent_ms = (time.perf_counter() - started) * 1000
        # laying out long replies 30 times a second would starve input: back off
        self._interval = int(min(STREAM_INTERVAL_MAX_MS, max(STREAM_INTERVAL_MS, spent_ms * 3)))


_clock: FrameClock | None = None


def frame_clock() -> FrameClock:
    """The application's frame clock (made on first use, on the GUI thread)."""
    global _clock
    if _clock is None or not shiboken6.isValid(_clock):
        _clock = FrameClock(QCoreApplication.instance())
    return _clock


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
        self.repaint_count = 0  # flushes painted (tests read it)
        self._clock = frame_clock()
        self._unseen_timer = QTimer(self)  # looks again while the chat is not on screen
        self._unseen_timer.setSingleShot(True)
        self._unseen_timer.timeout.connect(self._flush_when_seen)
        self._typing_timer = QTimer(self)
        self._typing_timer.setInterval(380)
        self._typing_timer.timeout.connect(self._tick_typing)

    def clear(self) -> None:
        """A new reply starts: nothing of the last one is still to paint."""
        self._parts.clear()
        self._clock.cancel(self)
        self._unseen_timer.stop()

    def append(self, text: str) -> None:
        self._parts.append(text)
        if not self._unseen_timer.isActive():
            self._clock.request(self, self._flush_when_seen)

    def _flush_when_seen(self) -> None:
        """The timed paint: while the chat is not on screen (the replies side by side are
        shown in its place) the text waits, looked at a few times a second, instead of
        laying out a reply nobody sees; `flush` paints it at once whenever asked."""
        if self._parts and not self._list.isVisible():
            self._unseen_timer.start(STREAM_INTERVAL_MAX_MS)
            return
        self.flush()

    def flush(self) -> None:
        self._clock.cancel(self)
        self._unseen_timer.stop()
        if not self._parts:
            return
        model, delegate, scroller = self._model, self._delegate, self._scroller
        text = model.stream_text() + "".join(self._parts)
        self._parts.clear()
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
