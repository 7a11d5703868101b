"""The window fits the screen it opens on: nothing a user does raises its minimum width past
what a 1280×720 screen allows with the Inspector open, the panels keep their widths, and the
first window (or one restored from a bigger screen) fits the screen's free area. Under the
offscreen platform the screen is a 1366×768 laptop's (tests/conftest.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from PIL import Image
from PySide6.QtCore import QSettings, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from tests.support.loopback_server import LoopbackProvider

from treechat.services.models.catalog import ModelChoice
from treechat.store.database import Store
from treechat.ui.controllers.history import CONTEXT_TAB, GRAPH_TAB
from treechat.ui.occupancy.ring import RING
from treechat.ui.shell.placement import FRAME_ALLOWANCE

from .conftest import MODEL, Aio, Desk, Seed, chat_session, close_desk, open_desk

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def shoot(desk: Desk, name: str) -> None:
    """With TREECHAT_SCREENSHOTS=1 (on a real display), docs/screenshots/first-hour-fit-*.png;
    TREECHAT_SCHEME=dark takes them dark."""
    if os.environ.get("TREECHAT_SCREENSHOTS") == "1":
        scheme = os.environ.get("TREECHAT_SCHEME", "")
        suffix = f"-{scheme}" if scheme else ""
        desk.window.grab().save(str(SHOTS / f"first-hour-fit-{name}{suffix}.png"))


def themed(desk: Desk) -> None:
    scheme = os.environ.get("TREECHAT_SCHEME", "")
    if os.environ.get("TREECHAT_SCREENSHOTS") == "1" and scheme:
        desk.theme.set_mode(scheme)


def chats(store: Store) -> None:
    chat_session(store, "grand", "Le Grand Paris and the long story of its new metro lines",
                 1_000.0, ["Tell me about Le Grand Paris " * 8, "It is a large project. " * 20])
    chat_session(store, "quote", "Quote from a file about the migration plan for the storage "
                 "layer and everything it touches", 2_000.0,
                 ["Quote a file " * 10, "Here it is. " * 30])
    chat_session(store, "target", "Dragons", 3_000.0,
                 ["Tell me about dragons", "They breathe fire.", "And their eggs?",
                  "They hatch in fire."])


def laptop(desk: Desk) -> None:
    desk.window.resize(1280, 720)
    desk.window.dock.show()


def fits(desk: Desk) -> None:
    window = desk.window
    assert window.minimumSizeHint().width() <= 1280, window.minimumSizeHint()
    assert window.minimumWidth() <= 1280
    assert window.width() == 1280


def test_chips_banners_and_a_long_paste_never_widen_the_window_or_move_the_panels(
    desk_with: Callable[[Seed | None], Desk], aio: Aio, tmp_path: Path
) -> None:
    """Two attach chips from other chats, the "cannot see images" choice and the "too long"
    choice after a 2 MB paste: at 1280×720 with the dock open the window stays 1280 px wide
    and can still be made that size, the chat list and the dock keep their widths, the chips
    wrap inside the composer."""
    desk = desk_with(chats)
    window = desk.window
    laptop(desk)
    themed(desk)
    picture = tmp_path / "diagram.png"
    Image.new("RGB", (300, 200), "#3a7bd5").save(picture, "PNG")

    async def scenario() -> None:
        await aio.settle(0.2)
        window.sessions.select("target")
        await desk.controller.load_session("target")
        await desk.controller.tasks.idle()
        await aio.settle(0.2)
        fits(desk)
        sidebar, dock = window.sessions.width(), window.dock.width()

        for source in ("grand", "quote"):
            desk.controller.history.stage(source, f"{source}-1")
            await desk.controller.tasks.idle()
        await aio.settle(0.2)
        bar = desk.controller.history.chips
        assert len(bar.chips) == 2 and bar.isVisible()
        fits(desk)
        for chip in bar.chips:  # wrapped inside the composer, nothing past its edge
            assert chip.geometry().right() < bar.width(), (chip.geometry(), bar.width())
            assert chip.head.shown_text()  # the head preview is still there, elided
        shoot(desk, "chips")
        assert (window.sessions.width(), window.dock.width()) == (sidebar, dock)

        desk.controller.attachments.add_paths([picture])
        await aio.until(lambda: any(c.state.tokens is not None
                                    for c in desk.controller.attachments.chips.chips),
                        what="the image chip")
        desk.composer.input.setFocus()
        desk.composer.set_text("Describe the diagram")
        QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)
        await aio.until(lambda: not window.banner.isHidden(), what="the image choice")
        await aio.settle(0.2)
        assert window.banner.title.text() == "This model cannot see images"
        fits(desk)
        shoot(desk, "no-vision-banner")
        assert (window.sessions.width(), window.dock.width()) == (sidebar, dock)
        QTest.mouseClick(window.banner.button("cancel"), Qt.MouseButton.LeftButton)
        await aio.settle()
        image_chip = desk.controller.attachments.chips.chips[0]
        QTest.mouseClick(image_chip.remove_button, Qt.MouseButton.LeftButton)
        await aio.until(lambda: not desk.controller.attachments.chips.chips, what="removed")

        paste = "word " * 400_000  # 2 MB
        desk.composer.set_text(paste)
        QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)
        await aio.until(lambda: window.banner.button("cut_to_fit") is not None
                        and not window.banner.isHidden(), what="the too-long choice")
        await aio.settle(0.2)
        # the room it names is the most any message can have, whatever the history holds
        said = window.banner.message.text()
        assert "a message can have at most 4,907" in said and "8,192-token window" in said
        fits(desk)
        ring = desk.composer.ring
        figure = ring.fontMetrics().horizontalAdvance(ring.label())
        assert ring.label().endswith("%") and ring.width() >= RING + 10 + figure  # not cut
        shoot(desk, "too-long-banner")
        assert (window.sessions.width(), window.dock.width()) == (sidebar, dock)
        assert desk.requests() == 0  # nothing was sent meanwhile

        window.resize(1100, 700)  # and back: nothing holds it wider
        await aio.settle(0.1)
        assert window.width() == 1100
        window.resize(1280, 720)
        await aio.settle(0.1)
        assert window.width() == 1280

    aio.run(scenario())


def test_the_dock_keeps_its_width_across_tabs_and_the_merge_label(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(chats)
    window = desk.window
    laptop(desk)
    themed(desk)
    graph = desk.controller.history.graph

    async def scenario() -> None:
        window.sessions.select("target")
        await desk.controller.load_session("target")
        await desk.controller.tasks.idle()
        await aio.settle(0.2)
        widths = {window.dock.width()}
        window.dock_tabs.setCurrentIndex(CONTEXT_TAB)
        await desk.controller.tasks.idle()
        await aio.settle(0.2)
        widths.add(window.dock.width())
        window.dock_tabs.setCurrentIndex(GRAPH_TAB)
        await aio.settle(0.2)
        widths.add(window.dock.width())
        merge_width = graph.merge_button.width()
        graph.view.select(["target-1", "target-3"])
        await aio.settle(0.2)
        assert graph.merge_button.text() == "Merge 2…"
        # as wide as before, and wide enough for its whole label: nothing clipped
        assert graph.merge_button.width() == merge_width
        assert graph.merge_button.width() >= graph.merge_button.sizeHint().width()
        widths.add(window.dock.width())
        shoot(desk, "merge-label")
        assert len(widths) == 1, widths
        fits(desk)

    aio.run(scenario())


def test_the_model_picker_elides_its_name_with_an_ellipsis(
    desk: Desk, aio: Aio
) -> None:
    """A long model name in a narrow window ends in "…", never cut mid-letter, and the
    picker does not widen the window for it."""
    name = "Bundled · SmolLM2 135M Instruct, local and offline, the small one"
    composer = desk.composer
    laptop(desk)
    themed(desk)

    async def scenario() -> None:
        choice = ModelChoice(MODEL, name, "openai", api_base=desk.provider.openai_base)
        composer.set_models([choice], MODEL)
        await aio.settle(0.2)
        window_min = desk.window.minimumSizeHint().width()
        assert composer.picker.currentText() == name
        desk.window.resize(1000, 720)
        await aio.settle(0.2)
        # it may be narrower than its name...
        assert composer.picker.minimumSizeHint().width() < composer.picker.sizeHint().width()
        assert composer.picker.width() < composer.picker.sizeHint().width()
        # ...and then the name ends in an ellipsis
        shown = composer.picker.shown_text()
        assert shown != name and shown.endswith("…"), shown
        assert name.startswith(shown[:-1].rstrip())
        assert window_min <= 1280
        desk.window.resize(1280, 720)
        await aio.settle(0.2)
        shoot(desk, "picker")
        # a name with room enough is shown whole
        short = ModelChoice(MODEL, "Bundled · SmolLM2 135M", "openai",
                            api_base=desk.provider.openai_base)
        composer.set_models([short], MODEL)
        await aio.settle(0.2)
        assert composer.picker.shown_text() == "Bundled · SmolLM2 135M"

    aio.run(scenario())


def test_the_first_window_fits_the_screen_and_a_bigger_screens_geometry_is_brought_in(
    qapp: QApplication, aio: Aio, tmp_path: Path, loopback: LoopbackProvider
) -> None:
    free = qapp.primaryScreen().availableGeometry()
    fresh = open_desk(qapp, aio, tmp_path / "fresh", loopback)
    try:
        aio.run(aio.settle(0.2))
        inner, frame = fresh.window.geometry(), fresh.window.frameGeometry()
        assert free.contains(frame), (frame, free)
        # and room for a window manager's title bar above it (1180×760 did not leave it)
        assert inner.height() + FRAME_ALLOWANCE <= free.height(), inner
    finally:
        close_desk(fresh)

    bigger = tmp_path / "bigger"
    bigger.mkdir()
    # a geometry saved on a 2560×1440 screen: 1900×1300 at (400, 120)
    from treechat.ui.shell.main_window import MainWindow

    big = MainWindow()
    big.setGeometry(400, 120, 1900, 1300)
    saved = QSettings(str(bigger / "window.ini"), QSettings.Format.IniFormat)
    saved.setValue("window/geometry", big.saveGeometry())
    saved.sync()
    big.deleteLater()
    desk = open_desk(qapp, aio, bigger, loopback)
    try:
        aio.run(aio.settle(0.2))
        frame = desk.window.frameGeometry()
        assert frame.width() <= free.width() and frame.height() <= free.height(), frame
        assert free.contains(frame), (frame, free)
    finally:
        close_desk(desk)

