"""Python's cycle collector, run on the GUI thread only. Left automatic, it runs on whichever
thread happens to allocate past its threshold (the store's worker, a provider's reader, an
MCP server's loop), and a Qt object it frees there (a widget, a timer) is destroyed off the
thread that owns it, which Qt does not allow ("Timers cannot be stopped from another
thread", then a crash). So while the window's loop runs, automatic collection is off and a
timer on the GUI thread collects each generation when its threshold is passed, as the
collector itself would have."""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

INTERVAL_MS = 500  # how often the thresholds are looked at


class GuiThreadCollector(QObject):
    def __init__(self, parent: QObject | None = None, interval_ms: int = INTERVAL_MS) -> None:
        super().__init__(parent)
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.check)
        self._timer.start()

    def check(self) -> int:
        """Collect the generations past their thresholds; how many objects were freed."""
        counts, thresholds = gc.get_count(), gc.get_threshold()
        freed = 0
        for generation in (2, 1, 0):  # the oldest due takes the younger ones with it
            if counts[generation] > thresholds[generation]:
                freed = gc.collect(generation)
                break
        return freed

    def stop(self) -> None:
        """Hand collection back to the interpreter (the loop is closing)."""
        self._timer.stop()
        if self._was_enabled:
            gc.enable()
