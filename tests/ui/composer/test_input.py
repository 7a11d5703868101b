"""A long message stays inside the composer's box on the real window: the field grows to its
limit and scrolls, gives up height first when the window is short (it never pushes the window
taller or lies over the model picker and the ring), and Send keeps its size while one types.
The keyboard hint shows a whole wording or none, whatever the footer leaves it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtCore import QPoint
from PySide6.QtWidgets import QWidget

from treechat.services.models.catalog import ModelChoice
from treechat.ui.composer.composer import HINT, SHORT_HINT

from ..conftest import MODEL, Aio, Desk, choices_for

SHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"
LONG = "\n".join(f"line {i}: the quick brown fox jumps over the lazy dog" for i in range(60))


def bottom_in_card(widget: QWidget, card: QWidget) -> int:
    return widget.mapTo(card, QPoint(0, widget.height())).y()


def top_in_card(widget: QWidget, card: QWidget) -> int:
    return widget.mapTo(card, QPoint(0, 0)).y()


def test_a_long_message_scrolls_inside_the_box_and_never_covers_the_footer(
    desk: Desk, aio: Aio
) -> None:
    window, composer = desk.window, desk.composer
    window.toggle_dock_action.setChecked(True)

    async def scenario() -> None:
        await aio.settle(0.2)
        empty_minimum = window.minimumSizeHint().height()
        composer.set_text(LONG)
        await aio.settle(0.2)
        field = composer.input
        assert field.verticalScrollBar().maximum() > 0  # it scrolls, all of it kept
        assert composer.text() == LONG
        # a long message asks for a few lines more of window, not for ten
        line = field.fontMetrics().lineSpacing()
        assert window.minimumSizeHint().height() - empty_minimum <= 3 * line

        for height in (760, 640, window.minimumSizeHint().height()):
            window.resize(1280, height)
            await aio.settle(0.15)
            card = composer.card
            footer_top = min(top_in_card(w, card) for w in (composer.picker, composer.ring,
                                                             composer.send_button))
            assert bottom_in_card(field, card) <= footer_top, height
            assert bottom_in_card(composer.picker, card) <= card.height()
            assert field.height() >= 3 * line  # a short window leaves three lines
        window.resize(1280, 720)
        await aio.settle(0.15)
        if os.environ.get("TREECHAT_SCREENSHOTS") == "1":
            for mode in ("light", "dark"):
                desk.theme.set_mode(mode)
                await aio.settle(0.2)
                composer.grab().save(str(SHOTS / f"first-hour-composer-long-{mode}.png"))
            desk.theme.set_mode("light")

    aio.run(scenario())


def test_send_keeps_its_size_and_the_hint_is_whole_or_gone(desk: Desk, aio: Aio) -> None:
    window, composer = desk.window, desk.composer
    hint = composer.hint
    metrics = hint.fontMetrics()

    def whole() -> bool:
        shown = hint.wording()
        return shown in (HINT, SHORT_HINT, "") and metrics.horizontalAdvance(shown) <= hint.width()

    async def scenario() -> None:
        await aio.settle(0.2)
        width = composer.send_button.width()
        composer.set_text("a message")
        await aio.settle(0.1)
        assert composer.send_button.width() == width  # the quiet hint keeps its room
        assert hint.wording() == ""
        composer.set_text("")
        await aio.settle(0.1)
        assert hint.wording() == HINT and whole()

        for size in (1100, 960, 900, 863):
            window.resize(size, 720)
            await aio.settle(0.1)
            assert whole(), (size, hint.wording(), hint.width())
        # the picker widens with a long model name: the hint makes room, never cut
        long_name = ModelChoice(MODEL, "Loopback · a model with a very long name indeed",
                                "openai", api_base=desk.provider.openai_base)
        composer.set_models((long_name, *choices_for(desk.provider)[1:]), MODEL)
        await aio.settle(0.15)
        assert whole(), (hint.wording(), hint.width())
        assert hint.wording() != HINT  # the long wording no longer fits here

    aio.run(scenario())


@pytest.mark.parametrize("running", [True, False])
def test_the_hint_is_quiet_while_a_reply_is_written(desk: Desk, running: bool) -> None:
    desk.composer.set_running(running)
    assert (desk.composer.hint.wording() == "") is running
    desk.composer.set_running(False)
