"""The window's first frame is its outline in the theme's colours, where the real widgets
then appear: no flash of another colour, no jump when the widgets arrive, and the outline of
a window the user resized or re-split is where they left things."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEventLoop, QPoint
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QApplication

from treechat.app import create_window, finish_window, open_shell, ui_prefs
from treechat.ui.common.theme import DARK, LIGHT
from treechat.ui.shell.main_window import MainWindow
from treechat.ui.shell.outline import Outline, default_outline


def paint(app: QApplication, window: MainWindow) -> QImage:
    window.show()
    for _ in range(20):
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
    return window.grab().toImage()


def color_at(image: QImage, x: int, y: int) -> str:
    scale = image.devicePixelRatio()
    return QColor(image.pixel(round(x * scale), round(y * scale))).name()


def inside(box: tuple[int, int, int, int]) -> tuple[int, int]:
    x, y, w, h = box
    return x + w // 2, y + h // 2


def test_the_first_frame_is_the_outline_and_the_widgets_land_on_it(
    tmp_path: Path, qapp: QApplication
) -> None:
    prefs = ui_prefs(tmp_path)
    prefs.setValue("theme", "dark")
    window, prefs = open_shell(tmp_path)
    try:
        assert not window.built
        outline = window.shell.outline()
        first = paint(qapp, window)
        points = {
            "sidebar": ((40, outline.sidebar[1] + 300), DARK.sidebar),
            "conversation": ((700, 200), DARK.window),  # above the empty state's text
            "composer card": (inside(outline.card), DARK.base),
            "new chat button": (inside(outline.new_button), DARK.accent),
        }
        for what, ((x, y), expected) in points.items():
            assert color_at(first, x, y) == expected, what

        finish_window(qapp, window, prefs)
        built = paint(qapp, window)
        assert window.built
        # the same places hold the same colours once the real widgets are there
        for what in ("sidebar", "conversation"):
            (x, y), expected = points[what]
            assert color_at(built, x, y) == expected, what
        card = window.composer.card
        at = card.mapTo(window, QPoint(0, 0))
        assert abs(at.x() - outline.card[0]) <= 2 and abs(at.y() - outline.card[1]) <= 2
        assert abs(window.sessions.width() - outline.sidebar[2]) <= 2
    finally:
        window.close_now()
        window.deleteLater()


def test_the_next_start_outlines_the_window_as_it_was_left(
    tmp_path: Path, qapp: QApplication
) -> None:
    window, _prefs, _theme = create_window(qapp, tmp_path)
    paint(qapp, window)
    window.resize(760, 560)
    window.splitter.setSizes([330, 430])
    paint(qapp, window)
    window.close()  # the app is asked to close: the outline is saved with the geometry
    window.close_now()
    window.deleteLater()

    again, _prefs = open_shell(tmp_path)
    try:
        outline = again.shell.outline()
        assert outline.size == (760, 560)
        assert outline.sidebar[2] == 330
        frame = paint(qapp, again)
        colors = LIGHT if QColor(color_at(frame, 700, 300)) == QColor(LIGHT.window) else DARK
        assert color_at(frame, 320, 300) == colors.sidebar  # inside the wider sidebar
        assert color_at(frame, 345, 300) == colors.window
    finally:
        again.close_now()
        again.deleteLater()


def test_the_outline_uses_the_scheme_the_system_had_last_time(
    tmp_path: Path, qapp: QApplication
) -> None:
    prefs = ui_prefs(tmp_path)
    prefs.setValue("theme", "system")
    prefs.setValue("theme/dark", True)
    window, _prefs = open_shell(tmp_path)
    try:
        frame = paint(qapp, window)
        assert color_at(frame, 700, 300) == DARK.window
    finally:
        window.close_now()
        window.deleteLater()


def test_a_saved_outline_survives_a_round_trip_and_nonsense_is_ignored() -> None:
    outline = default_outline(1000, 700, sidebar=300)
    assert Outline.decode(outline.encode()) == outline
    for text in (None, 42, "", "nonsense", "1,2;3,4,5,6", "1,2;" + ";".join(["1,2,3"] * 6)):
        assert Outline.decode(text) is None

