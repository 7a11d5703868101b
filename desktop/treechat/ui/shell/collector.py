"""Python's cycle collector, run on the GUI thread only, and never for long while someone uses
the window.

Left automatic, the collector runs on whichever thread happens to allocate past its threshold
(the store's worker, a provider's reader, an MCP server's loop), and a Qt object it frees
there (a widget, a timer) is destroyed off the thread that owns it, which Qt does not allow
("Timers cannot be stopped from another thread", then a crash). So while the window's loop
runs, automatic collection is off and a timer on the GUI thread collects instead.

A collection walks every object of the generations it collects, holding the GUI thread: a
full one over a 10,000-message chat takes 65-200 ms. So what lives on is set aside unwalked
(`gc.freeze`): the objects a load has just made (a chat read, a module imported), and those
that survive a collection of the oldest generation. Collections then walk only what is new.
What is set aside is walked again (every object, every cycle freed) only when the window has
had no input for a while and what is set aside has grown by a quarter since the last time,
or when another thread asks for memory back (a model let go after its idle time): that thread
never collects itself."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication

from ...core import memory

INTERVAL_MS = 100  # how often the thresholds are looked at
LOAD_OBJECTS = 10_000
"""New objects since the last look beyond which they are set aside unwalked: a load (a chat
read, rows built, a module imported) whose objects live on; walking them costs ~2-5 ms a 10,000."""
IDLE_S = 3.0  # no key, click, wheel or pointer move for this long: a long walk is not felt
GROWTH = 0.25  # what is set aside is walked again once it has grown by this much
FULL_EVERY_S = 60.0  # and not more often than this

INPUT_EVENTS = frozenset({
    QEvent.Type.KeyPress, QEvent.Type.KeyRelease, QEvent.Type.MouseButtonPress,
    QEvent.Type.MouseButtonRelease, QEvent.Type.MouseButtonDblClick, QEvent.Type.MouseMove,
    QEvent.Type.Wheel, QEvent.Type.TouchBegin, QEvent.Type.TouchUpdate,
    QEvent.Type.InputMethod, QEvent.Type.ShortcutOverride,
})


class GuiThreadCollector(QObject):
    """Collects on a timer on the GUI thread (`check`). It hears the input of each top-level
    window (a filter on its `QWindow`, which sees every key and pointer event first, and few
    others) to keep the long walk for when nobody is using the window."""

    _asked = Signal()  # from any thread: memory was let go, walk everything when idle

    def __init__(
        self,
        parent: QObject | None = None,
        interval_ms: int = INTERVAL_MS,
        *,
        idle_s: float = IDLE_S,
        full_every_s: float = FULL_EVERY_S,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(parent)
        memory.pause_automatic_collection()
        self.asked_to_free = False
        self._now = now
        self.idle_s = idle_s
        self.full_every_s = full_every_s
        self.last_input = now()
        self._last_full = now()
        self._set_aside_after_full = gc.get_freeze_count()
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.check)
        self._timer.start()
        self._asked.connect(self._ask, Qt.ConnectionType.QueuedConnection)
        self._ask_from_any_thread = self._asked.emit
        memory.own_collection(self._ask_from_any_thread)

    def _ask(self) -> None:
        self.asked_to_free = True

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in INPUT_EVENTS:
            self.last_input = self._now()
        return False

    @property
    def idle(self) -> bool:
        return self._now() - self.last_input >= self.idle_s

    def check(self) -> int:
        """One look: set a load aside, collect what is due, or walk everything when idle and
        grown. How many objects were freed."""
        self._hear_windows()
        counts, thresholds = gc.get_count(), gc.get_threshold()
        if counts[0] > LOAD_OBJECTS:
            gc.freeze()
            return 0
        if self.asked_to_free and self.idle:
            self.asked_to_free = False
            freed = self.collect_everything()
            memory.return_freed_memory()
            return freed
        if self.idle and self._now() - self._last_full >= self.full_every_s:
            set_aside = gc.get_freeze_count()
            if set_aside > self._set_aside_after_full * (1 + GROWTH):
                return self.collect_everything()
            self._last_full = self._now()  # looked: not grown enough, look again later
        for generation in (2, 1, 0):  # the oldest due takes the younger ones with it
            if counts[generation] > thresholds[generation]:
                freed = gc.collect(generation)
                if generation == 2:
                    gc.freeze()  # what survived the oldest generation's walk lives on
                return freed
        return 0

    def _hear_windows(self) -> None:
        for window in QGuiApplication.topLevelWindows():
            window.installEventFilter(self)  # once: Qt keeps one entry for each filter

    def collect_everything(self) -> int:
        """Walk every object, those set aside too (the cycles among them are freed), then set
        the survivors aside again."""
        gc.unfreeze()
        freed = gc.collect()
        gc.freeze()
        self._set_aside_after_full = gc.get_freeze_count()
        self._last_full = self._now()
        return freed

    def stop(self) -> None:
        """Hand collection back to the interpreter (the loop is closing), everything set
        aside with it."""
        self._timer.stop()
        memory.disown_collection(self._ask_from_any_thread)
        for window in QGuiApplication.topLevelWindows():
            window.removeEventFilter(self)
        gc.unfreeze()
        # What was set aside and has died since (Qt objects among it) is freed here, on the
        # GUI thread: left to the next automatic collection, it would be freed on whichever
        # thread allocates next, and a Qt object freed there crashes the process.
        gc.collect()
        if self.asked_to_free:
            memory.return_freed_memory()
        memory.resume_automatic_collection()
