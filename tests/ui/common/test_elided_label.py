"""A label that never widens its window: it shows what fits, the rest in a tooltip, and
`text()` is still the whole text."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from treechat.ui.common.elided_label import MIN_CHARS, ElidedLabel

TITLE = "A very long chat title about planning a trip across the mountains in winter"


def test_a_long_title_is_cut_with_the_whole_in_its_tooltip(qtbot: QtBot) -> None:
    label = ElidedLabel(TITLE)
    qtbot.addWidget(label)
    label.show()
    label.resize(120, 30)
    assert label.text() == TITLE
    assert label.shown_text().endswith("…") and len(label.shown_text()) < len(TITLE)
    assert label.toolTip() == TITLE
    label.resize(label.sizeHint().width() + 20, 30)
    assert label.shown_text() == TITLE and label.toolTip() == ""


def test_it_asks_for_its_whole_width_but_may_shrink_to_a_few_characters(
    qtbot: QtBot,
) -> None:
    label = ElidedLabel(TITLE)
    qtbot.addWidget(label)
    label.show()
    metrics = label.fontMetrics()
    assert label.sizeHint().width() >= metrics.horizontalAdvance(TITLE)
    assert label.minimumSizeHint().width() <= metrics.averageCharWidth() * MIN_CHARS
    label.setText("Short")
    label.resize(200, 30)
    assert label.shown_text() == "Short" and label.toolTip() == ""
