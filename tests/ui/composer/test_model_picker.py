"""The model picker's popup in both schemes, on the real window and services: the model in use
carries a check mark and bold name, and the row under the pointer or the keyboard is a solid
accent that stands out from the popup (it was a dark blue on dark grey in the dark scheme)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from tests.support.pixels import contrast, fill_of

from treechat.ui.common.theme import DARK, LIGHT
from treechat.ui.composer.model_picker import CURRENT_ROLE

from ..conftest import BIG_MODEL, MODEL, Aio, Desk

SHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"


@pytest.mark.parametrize("mode", ["light", "dark"])
def test_the_popup_marks_the_model_in_use_and_highlights_the_row_aimed_at(
    desk: Desk, aio: Aio, mode: str
) -> None:
    colors = DARK if mode == "dark" else LIGHT
    desk.theme.set_mode(mode)
    picker = desk.composer.picker
    popup = picker.popup
    tree = popup.tree

    async def scenario() -> None:
        await aio.until(lambda: BIG_MODEL in desk.composer.model_ids(), what="the models")
        desk.composer.select_model(MODEL)
        picker.showPopup()
        await aio.settle(0.1)
        current = popup.current_model_item()
        assert current is not None and current.data(0, CURRENT_ROLE)
        assert current.font(0).bold() and not current.icon(0).isNull()
        assert current.text(0) == "Loopback"
        assert tree.currentItem() is current  # opened on the model in use

        row = tree.visualItemRect(current)
        fill = fill_of(tree.viewport().grab().toImage(), row)
        assert fill.name() == colors.accent
        assert contrast(fill, colors.raised) >= 3.0, (fill.name(), mode)

        other = next(i for i in popup.visible_items() if i is not current)
        point = tree.visualItemRect(other).center()
        QTest.mouseMove(tree.viewport(), point)
        await aio.until(lambda: tree.currentItem() is other, what="hover to select")
        image = tree.viewport().grab().toImage()
        assert fill_of(image, tree.visualItemRect(other)).name() == colors.accent
        assert fill_of(image, tree.visualItemRect(current)).name() != colors.accent
        assert popup.current_model_item() is current and current.font(0).bold()
        if os.environ.get("TREECHAT_SCREENSHOTS") == "1":
            popup.grab().save(str(SHOTS / f"first-hour-model-picker-popup-{mode}.png"))
        QTest.keyClick(popup.search, Qt.Key.Key_Return)  # Enter chooses the row aimed at
        await aio.until(lambda: desk.composer.current_model() == BIG_MODEL, what="chosen")
        picker.showPopup()
        await aio.settle(0.05)
        again = popup.current_model_item()
        assert again is not None and again.text(0) == "Loopback GPT-4o"
        popup.hide()
        QTest.mouseMove(desk.window, QPoint(1, 1))

    aio.run(scenario())
