"""The model picker's popup in both schemes, on the real window and services: the model in use
carries a check mark and bold name, and the row under the pointer or the keyboard is a solid
accent that stands out from the popup (it was a dark blue on dark grey in the dark scheme)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QTreeWidgetItem
from tests.support.loopback_server import Reply
from tests.support.model_servers import OpenAIServer
from tests.support.pixels import contrast, fill_of

from treechat.ui.common.theme import DARK, LIGHT
from treechat.ui.composer.model_picker import CURRENT_ROLE, ROW_ROLE

from ..conftest import BIG_MODEL, MODEL, Aio, Desk
from ..controllers.controls_desk import controls, send

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


def popup_item(desk: Desk, model_id: str) -> QTreeWidgetItem:
    """The popup's entry for `model_id` (the popup filled as when it opens)."""
    picker = desk.composer.picker
    picker.popup.fill()
    row = desk.composer.model_ids().index(model_id)
    return next(i for i in picker.popup.items() if i.data(0, ROW_ROLE) == row)


def test_a_connections_model_litellm_prices_is_priced_in_the_picker_as_it_is_billed(
    desk: Desk, aio: Aio
) -> None:
    """An OpenAI-compatible connection serving gpt-4o-mini: its requests are billed at
    litellm's gpt-4o-mini price, so the picker says that price, not "unpriced", and the
    header, the estimate by Send and the reply's tooltip say dollars too."""
    lab = OpenAIServer([{"id": "gpt-4o-mini", "object": "model"}])
    c = controls(desk)
    address = "lab/gpt-4o-mini"
    try:
        async def scenario() -> None:
            await desk.services.models.connections.add("openai-compatible", "lab",
                                                       base_url=lab.url)
            await desk.controller.models.refresh()
            await aio.until(lambda: address in desk.composer.model_ids(), what="lab's model")
            item = popup_item(desk, address)
            assert item.text(1) == "128K · $0.15 / $0.60 per M"
            (choice,) = [ch for ch in desk.controller.models.choices if ch.id == address]
            assert (choice.price_in, choice.price_out) == (pytest.approx(0.15),
                                                           pytest.approx(0.6))
            desk.composer.picker.setCurrentIndex(desk.composer.model_ids().index(address))
            lab.queue(Reply(text="A priced answer from the lab."))
            send(desk, "What does this cost?")
            await aio.until(lambda: len(lab.requests) == 1
                            and not desk.controller.turns.is_running(), what="the reply")
            await desk.controller.tasks.idle()
            await aio.until(lambda: bool(c.costs.costs), what="costs")
            sid = desk.controller.current_session_id
            assert sid is not None
            await c.costs.refresh_costs(sid)
            await c.costs.estimate(sid)

        aio.run(scenario())
        reply = desk.chat.model.rows[-1].node
        assert reply is not None
        assert c.costs.cost_label.text().startswith("$")
        assert c.costs.estimate_label.text().startswith("next ≈ $")
        tip = c.costs.reply_text(reply.id)
        assert "$" in tip and "unpriced" not in tip

        async def switch() -> None:
            # another model in the picker, nothing typed: the estimate by Send follows it
            ids = desk.composer.model_ids()
            desk.composer.picker.setCurrentIndex(ids.index(MODEL))
            await aio.until(lambda: c.costs.estimate_label.text() == "next: unpriced",
                            what="the unpriced model's estimate")
            desk.composer.picker.setCurrentIndex(ids.index(address))
            await aio.until(lambda: c.costs.estimate_label.text().startswith("next ≈ $"),
                            what="the priced model's estimate")

        aio.run(switch())
    finally:
        lab.stop()


def test_after_a_choice_with_the_mouse_typing_goes_to_the_message_box(
    desk: Desk, aio: Aio
) -> None:
    picker = desk.composer.picker
    popup = picker.popup
    box = desk.composer.input

    async def scenario() -> None:
        await aio.until(lambda: BIG_MODEL in desk.composer.model_ids(), what="the models")
        desk.window.activateWindow()
        box.setFocus()
        await aio.until(box.hasFocus, what="the message box's focus")
        QTest.mouseClick(picker, Qt.MouseButton.LeftButton)
        await aio.until(popup.isVisible, what="the popup")
        item = popup_item(desk, BIG_MODEL)
        point = popup.tree.visualItemRect(item).center()
        QTest.mouseClick(popup.tree.viewport(), Qt.MouseButton.LeftButton, pos=point)
        await aio.until(lambda: desk.composer.current_model() == BIG_MODEL, what="chosen")
        await aio.until(box.hasFocus, what="the keyboard back in the message box")
        target = QApplication.focusWidget()
        assert target is not None
        QTest.keyClicks(target, "hello")
        QTest.keyClick(target, Qt.Key.Key_Escape)
        await aio.settle()
        assert not popup.isVisible() and popup.search.text() == ""
        assert desk.composer.text() == "hello"

        # Esc on the popup opened by a click: the keyboard goes back as well
        QTest.mouseClick(picker, Qt.MouseButton.LeftButton)
        await aio.until(popup.isVisible, what="the popup again")
        QTest.keyClick(popup.search, Qt.Key.Key_Escape)
        await aio.until(lambda: not popup.isVisible(), what="closed")
        await aio.until(box.hasFocus, what="the message box again")
        assert desk.composer.current_model() == BIG_MODEL

        # a keyboard user still opens the picker on purpose and searches it
        picker.setFocus()
        QTest.keyClicks(picker, "GPT-4o")
        assert popup.isVisible() and popup.search.text() == "GPT-4o"
        QTest.keyClick(popup.search, Qt.Key.Key_Return)
        assert not popup.isVisible()

    aio.run(scenario())
