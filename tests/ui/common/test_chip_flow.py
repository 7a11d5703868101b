"""Chips wrap into lines within the width they are given and never ask for more: a chip
wider than a line is narrowed to it, and the row's height is that of its lines."""

from __future__ import annotations

from treechat.ui.common.chip_flow import CHIP_SPACING, flow


def test_chips_wrap_into_lines_within_the_width() -> None:
    rects, height = flow([(100, 20), (100, 20), (100, 24)], 250)
    assert [(r.x(), r.y()) for r in rects] == [(0, 0), (100 + CHIP_SPACING, 0),
                                              (0, 20 + CHIP_SPACING)]
    assert height == 20 + CHIP_SPACING + 24 + 2
    assert all(r.right() < 250 for r in rects)


def test_a_chip_wider_than_a_line_is_narrowed_to_it() -> None:
    rects, _ = flow([(900, 20)], 300)
    assert rects[0].width() == 300


def test_no_chips_take_no_room() -> None:
    assert flow([], 300) == ([], 0)
