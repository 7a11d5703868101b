"""The main window as `treechat --smoke` opens it: offscreen, shown, and waited on until Qt
has painted it once. The check's logic lives in treechat.smoke; this is its Qt side."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QEventLoop
from PySide6.QtWidgets import QApplication

from ... import paths

if TYPE_CHECKING:
    from .main_window import MainWindow


class WindowDidNotPaint(RuntimeError):
    """The window was shown but Qt never painted it."""


@dataclass
class PaintedWindow:
    app: QApplication
    window: MainWindow
    seconds: float  # from opening to the first paint

    def close(self) -> None:
        self.window.close()


def open_painted(make_window: Callable[[QApplication], MainWindow], timeout: float
                 ) -> PaintedWindow:
    """Create the application and, with `make_window`, the main window (the composition
    root's own factory); show it and return once it has painted (WindowDidNotPaint after
    `timeout` seconds)."""
    started = time.perf_counter()
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication([sys.argv[0]])
    app.setApplicationName(paths.APP_NAME)
    window = make_window(app)
    window.show()
    deadline = time.monotonic() + timeout
    while not window.painted:
        if time.monotonic() > deadline:
            raise WindowDidNotPaint(f"the main window did not paint within {timeout:.0f} s")
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
    return PaintedWindow(app, window, time.perf_counter() - started)
