"""The chat's colours follow the palette: text stands out from the page in light and dark
alike, a question's bubble is a tint of the page, errors are red on a faint red; messages
read a little larger than the chrome."""

from __future__ import annotations

from PySide6.QtGui import QColor, QFont

from treechat.ui.chat.style import ChatColors, body_font
from treechat.ui.common.theme import DARK, LIGHT, palette_for


def contrast(a: QColor, b: QColor) -> float:
    return abs(a.lightnessF() - b.lightnessF())


def test_colours_follow_the_scheme(qapp: object) -> None:
    light = ChatColors.from_palette(palette_for(LIGHT))
    dark = ChatColors.from_palette(palette_for(DARK))
    assert not light.dark and dark.dark
    for colors in (light, dark):
        assert contrast(colors.text, colors.base) > 0.6
        assert contrast(colors.muted, colors.base) < contrast(colors.text, colors.base)
        assert contrast(colors.user_bubble, colors.base) < 0.15  # a tint, not a block
        assert colors.error.red() > colors.error.green()
        assert contrast(colors.error_bg, colors.base) < contrast(colors.error, colors.base)
    assert light.base.lightnessF() > dark.base.lightnessF()


def test_messages_read_a_little_larger() -> None:
    chrome = QFont()
    chrome.setPointSizeF(10.0)
    assert body_font(chrome).pointSizeF() == 11.0
    pixel = QFont()
    pixel.setPixelSize(12)  # no point size to scale: left as it is
    assert body_font(pixel).pixelSize() == 12
