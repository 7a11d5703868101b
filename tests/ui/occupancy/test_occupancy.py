"""The occupancy ring and the /context dialog: one record, two readers. They show the same
numbers at every moment: on opening, after /compact, after a model switch, after a turn."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot
from tests.support.loopback_server import Reply

from treechat.core.occupancy import MeasuredUsage, Occupancy, build_occupancy
from treechat.store.database import Store
from treechat.ui.common.theme import colors_of, level_color
from treechat.ui.dialogs.context_breakdown import ContextBreakdownDialog
from treechat.ui.occupancy import format as fmt
from treechat.ui.occupancy.ring import RING, STROKE, OccupancyRing

from ..conftest import BIG_MODEL, MODEL, Aio, Desk, Seed, chat_session

CATEGORIES = {"system": 120, "tools": 80, "summaries": 0, "messages": 500,
              "tool_results": 100, "attachments": 0}


def record(used: int, window: int = 1000) -> Occupancy:
    scale = used / sum(CATEGORIES.values())
    cats = {k: round(v * scale) for k, v in CATEGORIES.items()}
    cats["messages"] += used - sum(cats.values())
    return build_occupancy(window=window, categories=cats, head="h")


def arc_color(ring: OccupancyRing) -> QColor:
    """The colour painted at 12 o'clock on the ring, where the arc starts."""
    image = ring.grab().toImage()
    top = (ring.height() - RING) / 2
    return image.pixelColor(int(4 + RING / 2), int(top + STROKE / 2 + 0.5))


def close_to(a: QColor, b: QColor, slack: int = 40) -> bool:
    return all(abs(x - y) <= slack for x, y in
               ((a.red(), b.red()), (a.green(), b.green()), (a.blue(), b.blue())))


def test_ring_fraction_colour_and_tooltip(qtbot: QtBot) -> None:
    ring = OccupancyRing()
    qtbot.addWidget(ring)
    ring.resize(ring.sizeHint())
    ring.show()
    colors = colors_of(ring.palette())
    for used, expected in ((300, colors.ok), (750, colors.warn), (950, colors.danger)):
        occ = record(used)
        ring.set_occupancy(occ)
        assert ring.fraction == used / 1000
        assert close_to(arc_color(ring), QColor(expected)), (used, arc_color(ring).name())
        assert ring.label() == f"{used // 10}%"
        assert f"{used:,} / 1,000 tokens" in ring.toolTip()
        assert "Basis: estimated" in ring.toolTip()
    measured = build_occupancy(
        window=1000, categories=CATEGORIES, head="h",
        measured=MeasuredUsage(head="h", prompt_tokens=840, estimated_tokens=800),
    )
    ring.set_occupancy(measured)
    assert "Basis: measured (calibration ×1.05)" in ring.toolTip()
    ring.set_occupancy(None)
    assert ring.label() == "–"


def test_dialog_rows_add_up_to_the_window(qtbot: QtBot) -> None:
    dialog = ContextBreakdownDialog()
    qtbot.addWidget(dialog)
    occ = record(800, window=2000)
    dialog.set_occupancy(occ)
    rows = dialog.table_rows()
    assert [r[0] for r in rows] == [fmt.CATEGORY_LABELS[k] for k, _ in occ.breakdown]
    assert rows[-1] == ("Free space", "1,200", "60%")
    assert sum(int(r[1].replace(",", "")) for r in rows) == 2000
    assert dialog.headline.text() == "800 / 2,000 tokens (40%)"
    assert "Estimated" in dialog.basis.text()


def ring_and_dialog_agree(desk: Desk) -> Occupancy:
    ring = desk.composer.ring
    dialog = desk.controller.occupancy.context_dialog
    assert dialog is not None and dialog.isVisible()
    occ = ring.occupancy
    assert occ is not None and dialog.occupancy is occ  # one record, two readers
    assert dialog.headline.text() == fmt.headline(occ)
    assert f"Context: {fmt.headline(occ)}" in ring.toolTip()
    assert ring.label() == fmt.percent(occ.fraction)
    shown = {r[0]: int(r[1].replace(",", "")) for r in dialog.table_rows()}
    assert sum(shown.values()) == occ.window
    assert shown["Free space"] == occ.window - occ.total_used
    return occ


LONG = ("The history of the river valley is long and full of detail. " * 25).strip()


def long_chat(store: Store) -> None:
    turns = [f"{i}: {LONG}" for i in range(16)]
    chat_session(store, "long", "A long conversation", 1_000.0, turns)


def test_ring_and_dialog_agree_through_compaction_and_model_switch(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(long_chat)

    async def scenario() -> None:
        desk.window.sessions.select("long")
        await desk.controller.load_session("long")
        QTest.mouseClick(desk.composer.ring, Qt.MouseButton.LeftButton)
        await desk.controller.tasks.idle()
        before = ring_and_dialog_agree(desk)
        assert before.window == 8192 and before.basis == "estimated"
        dialog = desk.controller.occupancy.context_dialog
        assert dialog is not None
        assert "Not compacted" in dialog.compaction.text()

        desk.composer.set_text("/compact")
        QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)
        await aio.until(lambda: desk.composer.ring.occupancy is not before, what="compaction")
        await desk.controller.tasks.idle()
        after = ring_and_dialog_agree(desk)
        assert after.total_used < before.total_used
        assert dict(after.breakdown)["summaries"] > 0
        assert "summar" in dialog.compaction.text()

        index = desk.composer.model_ids().index(BIG_MODEL)
        desk.composer.picker.setCurrentIndex(index)
        await aio.until(lambda: desk.composer.ring.occupancy.window != 8192, what="switch")
        await desk.controller.tasks.idle()
        switched = ring_and_dialog_agree(desk)
        assert switched.window == 128_000
        # named as the picker names it, once
        assert dialog.model_label.text().startswith("Loopback GPT-4o · 128,000-token window")
        assert BIG_MODEL not in dialog.model_label.text()
        stored = desk.services.store.call(lambda r: r.get_session("long"))
        assert stored is not None and stored.model == BIG_MODEL

    aio.run(scenario(), timeout=120)
    assert desk.requests() == 0  # none of this asked the provider anything


def test_a_turn_updates_both_with_the_measurement(desk: Desk, aio: Aio) -> None:
    desk.provider.queue(Reply(text="Measured reply."))

    async def scenario() -> None:
        desk.composer.set_text("Measure me")
        QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)
        await aio.until(lambda: desk.requests() == 1 and not desk.controller.turns.is_running())
        await desk.controller.tasks.idle()
        desk.controller.command("context")
        await desk.controller.tasks.idle()

    aio.run(scenario())
    occ = ring_and_dialog_agree(desk)
    assert occ.basis == "measured"
    assert occ.total_used == desk.provider.requests[-1].prompt_tokens
    dialog = desk.controller.occupancy.context_dialog
    assert dialog is not None and dialog.calibration.text().startswith("Calibration ×")
    assert desk.composer.current_model() == MODEL
    assert level_color(occ.fraction, colors_of(desk.composer.ring.palette()))
