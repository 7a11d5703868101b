"""Where a top-level window may sit: within its screen's free area (panels aside), frame
and all."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

FRAME_ALLOWANCE = 32  # a title bar's height, before the window manager says what its frame is


def fit_to_screen(window: QWidget, move: bool = True) -> None:
    """Keep `window` within its screen's free area: no bigger than it, and, with `move`,
    inside it. A fresh window on a small laptop, or a geometry saved on a bigger screen, is
    brought down to what this screen shows."""
    free = window.screen().availableGeometry()
    inner, frame = window.geometry(), window.frameGeometry()
    shown = window.isVisible() and frame != inner
    extra_w = frame.width() - inner.width() if shown else 0
    extra_h = frame.height() - inner.height() if shown else FRAME_ALLOWANCE
    width = min(inner.width(), free.width() - extra_w)
    height = min(inner.height(), free.height() - extra_h)
    if (width, height) != (inner.width(), inner.height()):
        window.resize(width, height)
    if move:
        x = min(max(window.x(), free.left()), free.right() + 1 - width - extra_w)
        y = min(max(window.y(), free.top()), free.bottom() + 1 - height - extra_h)
        if (x, y) != (window.x(), window.y()):
            window.move(x, y)
