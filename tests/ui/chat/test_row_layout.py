"""How a chat row is laid out: long tool output capped with a note of what was left out,
and buttons placed from the edges of their bar in reading order, never overlapping."""

from __future__ import annotations

from PySide6.QtCore import QRectF

from treechat.ui.chat.row_layout import (
    TOOL_RESULT_CHARS,
    TOOL_RESULT_LINES,
    Button,
    cap,
    place_left,
    place_right,
)


def test_short_output_is_left_whole() -> None:
    assert cap("one\ntwo") == "one\ntwo"


def test_long_output_is_capped_and_says_how_much_is_hidden() -> None:
    many = "\n".join(f"line {i}" for i in range(TOOL_RESULT_LINES + 25))
    shown = cap(many)
    assert shown.splitlines()[TOOL_RESULT_LINES - 1] == f"line {TOOL_RESULT_LINES - 1}"
    assert shown.endswith("(25 more lines; copy the result to see all of it)")
    wide = "x" * (TOOL_RESULT_CHARS + 10)
    assert cap(wide).endswith("(more; copy the result to see all of it)")


def test_buttons_are_placed_from_the_edges_without_overlapping() -> None:
    area = QRectF(0, 0, 400, 30)
    left = [Button("copy", QRectF(0, 0, 40, 20), "Copy"),
            Button("edit", QRectF(0, 0, 40, 20), "Edit")]
    place_left(left, area)
    assert left[0].rect.left() == 0 and left[1].rect.left() >= left[0].rect.right()
    assert left[0].rect.center().y() == area.center().y()  # centred in the bar
    right = [Button("retry", QRectF(0, 0, 50, 20), "Retry"),
             Button("pin", QRectF(0, 0, 30, 20), "Pin")]
    place_right(right, area)
    assert right[1].rect.right() == 400  # the last one at the edge, reading order kept
    assert right[0].rect.right() <= right[1].rect.left()
