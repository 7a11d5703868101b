"""The cycle collector runs on the GUI thread while the window's loop does: automatic
collection is off (it would free Qt objects on whatever thread allocates), and the timer
collects when a generation passes its threshold."""

from __future__ import annotations

import gc

from pytestqt.qtbot import QtBot

from treechat.ui.shell.collector import GuiThreadCollector


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_cycles_are_collected_by_the_timer_on_the_gui_thread(qtbot: QtBot) -> None:
    was = gc.isenabled()
    gc.enable()
    collector = GuiThreadCollector(interval_ms=10)
    try:
        assert not gc.isenabled()
        gc.collect()
        for _ in range(gc.get_threshold()[0] + 50):
            Cycle()
        assert gc.get_count()[0] > gc.get_threshold()[0]  # nothing collected them yet
        qtbot.waitUntil(lambda: gc.get_count()[0] < gc.get_threshold()[0], timeout=2000)
    finally:
        collector.stop()
        assert gc.isenabled()  # handed back as it was
        if not was:
            gc.disable()
