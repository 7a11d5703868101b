"""A window never sits bigger than its screen's free area, nor off it: a geometry saved on a
larger screen is brought down, and one left half off the edge is brought back."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from treechat.ui.shell.placement import FRAME_ALLOWANCE, fit_to_screen


def test_a_window_too_big_for_the_screen_is_brought_down(qtbot: QtBot) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    free = window.screen().availableGeometry()
    window.resize(free.width() + 400, free.height() + 300)
    fit_to_screen(window, move=False)
    assert window.width() <= free.width()
    # not shown yet: room is kept for a title bar the window manager will add
    assert window.height() <= free.height() - FRAME_ALLOWANCE


def test_a_window_off_the_edge_is_moved_inside(qtbot: QtBot) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    free = window.screen().availableGeometry()
    window.resize(400, 300)
    window.move(free.right() - 100, free.bottom() + 500)
    fit_to_screen(window)
    assert free.left() <= window.x() <= free.right() + 1 - 400
    assert free.top() <= window.y() and window.y() + 300 + FRAME_ALLOWANCE <= free.bottom() + 1
    window.move(free.right() - 100, free.bottom() + 500)
    fit_to_screen(window, move=False)  # only the size is kept within the screen
    assert window.x() == free.right() - 100
