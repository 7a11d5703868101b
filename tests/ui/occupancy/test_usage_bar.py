"""The bar under the /context breakdown: each category drawn in its own colour, as wide as
its share of the window, and the free rest in the border's grey."""

from __future__ import annotations

from PySide6.QtGui import QColor
from pytestqt.qtbot import QtBot

from treechat.core.occupancy import build_occupancy
from treechat.ui.common.theme import DARK, LIGHT, colors_of
from treechat.ui.occupancy.usage_bar import ContextUsageBar, category_color


def test_categories_have_distinct_colours_in_both_schemes() -> None:
    keys = ("system", "tools", "summaries", "messages", "tool_results", "attachments")
    for colors in (LIGHT, DARK):
        assert len({category_color(k, colors).name() for k in keys}) == len(keys)
        assert category_color("free", colors) == QColor(colors.border)


def test_each_share_is_drawn_as_wide_as_it_is(qtbot: QtBot) -> None:
    bar = ContextUsageBar()
    qtbot.addWidget(bar)
    bar.resize(400, 14)
    occ = build_occupancy(window=1000, categories={"system": 250, "messages": 250}, head="h")
    bar.set_occupancy(occ)
    image = bar.grab().toImage()
    colors = colors_of(bar.palette())
    y = 7
    assert image.pixelColor(50, y).name() == category_color("system", colors).name()
    assert image.pixelColor(150, y).name() == category_color("messages", colors).name()
    assert image.pixelColor(300, y).name() == QColor(colors.border).name()  # free
