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


def test_a_shorter_wording_is_shown_whole_before_any_is_cut(qtbot: QtBot) -> None:
    label = ElidedLabel()
    qtbot.addWidget(label)
    label.show()
    label.set_texts("1,200 nodes · 7 branches", "1,200 · 7 branches", "7 branches")
    metrics = label.fontMetrics()
    label.resize(metrics.horizontalAdvance("1,200 · 7 branches") + 4, 30)
    assert label.shown_text() == "1,200 · 7 branches"
    assert label.toolTip() == "1,200 nodes · 7 branches" == label.text()
    label.resize(metrics.horizontalAdvance("7 branches") + 2, 30)
    assert label.shown_text() == "7 branches"
    label.resize(metrics.horizontalAdvance("7 b…"), 30)
    assert label.shown_text().endswith("…") and label.shown_text().startswith("7")
