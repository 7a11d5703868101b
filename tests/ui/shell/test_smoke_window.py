"""The smoke check of a build: the main window opens and paints, its time to first paint
is measured, and a window that never paints is reported as such, not waited on forever."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication

from treechat.ui.shell.main_window import MainWindow
from treechat.ui.shell.smoke_window import WindowDidNotPaint, open_painted


def test_the_window_opens_and_paints(qapp: QApplication) -> None:
    opened = open_painted(lambda _app: MainWindow(), timeout=30)
    try:
        assert opened.window.painted and opened.seconds > 0
        assert opened.app is qapp
    finally:
        opened.close()
        opened.window.deleteLater()


def test_a_window_that_does_not_paint_in_time_is_reported(qapp: QApplication) -> None:
    made: list[MainWindow] = []

    def make(_app: QApplication) -> MainWindow:
        made.append(MainWindow())
        return made[-1]

    with pytest.raises(WindowDidNotPaint, match="did not paint within -1 s"):
        open_painted(make, timeout=-1)
    made[0].close()
    made[0].deleteLater()
