"""The two schemes: readable contrast for text, muted text and the accent button, and the
application following the chosen mode."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication

from treechat.ui.common.theme import DARK, LIGHT, Colors, ThemeManager, colors_of, level_color


def luminance(hex_color: str) -> float:
    c = QColor(hex_color)

    def channel(v: int) -> float:
        s = v / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(c.red()) + 0.7152 * channel(c.green()) + 0.0722 * channel(c.blue())


def contrast(a: str, b: str) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


@pytest.mark.parametrize("colors", [LIGHT, DARK], ids=["light", "dark"])
def test_contrast_meets_wcag_aa(colors: Colors) -> None:
    for background in (colors.window, colors.base, colors.sidebar, colors.accent_soft):
        assert contrast(colors.text, background) >= 7.0, background
        assert contrast(colors.muted, background) >= 3.5, background
    assert contrast(colors.accent_text, colors.accent) >= 3.0  # bold button labels
    for level in (colors.ok, colors.warn, colors.danger):
        assert contrast(level, colors.base) >= 3.0  # the ring's arc on the composer


def test_levels_change_at_70_and_90_percent() -> None:
    assert [level_color(f, LIGHT) for f in (0.1, 0.69, 0.7, 0.89, 0.9, 1.0)] == [
        LIGHT.ok, LIGHT.ok, LIGHT.warn, LIGHT.warn, LIGHT.danger, LIGHT.danger]


def test_modes_apply_to_the_whole_application(qapp: QApplication) -> None:
    theme = ThemeManager(qapp, "dark")
    try:
        assert colors_of(qapp.palette()) is DARK
        assert qapp.palette().color(QPalette.ColorRole.Base).name() == DARK.base
        assert DARK.accent in qapp.styleSheet()
        theme.set_mode("light")
        assert colors_of(qapp.palette()) is LIGHT
        theme.set_mode("system")  # this platform reports no scheme: light
        assert theme.mode == "system" and colors_of(qapp.palette()) is LIGHT
        with pytest.raises(ValueError):
            theme.set_mode("sepia")
    finally:
        theme.set_mode("light")
        theme.deleteLater()
