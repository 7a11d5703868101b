"""The cycle collector runs on the GUI thread while the window's loop does: automatic
collection is off (it would free Qt objects on whatever thread allocates), and the timer
collects when a generation passes its threshold. What a load makes is set aside unwalked,
and everything is walked again (set-aside cycles freed) only once nobody has used the window
for a while."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLineEdit
from pytestqt.qtbot import QtBot

from treechat.providers.embeddings import IdleRelease
from treechat.ui.shell.collector import GROWTH, LOAD_OBJECTS, GuiThreadCollector


class Cycle:
    def __init__(self) -> None:
        self.me = self


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def gc_state() -> Iterator[None]:
    from treechat.providers import llm

    llm.start_warmup().result(timeout=300)  # its import pauses collection too, meanwhile
    was = gc.isenabled()
    gc.enable()
    yield
    gc.unfreeze()
    if not was:
        gc.disable()


def test_cycles_are_collected_by_the_timer_on_the_gui_thread(qtbot: QtBot, gc_state: None) -> None:
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


def test_what_a_load_makes_is_set_aside_unwalked(qtbot: QtBot, gc_state: None) -> None:
    collector = GuiThreadCollector(interval_ms=60_000)
    try:
        gc.collect()
        before = gc.get_freeze_count()
        loaded = [[i] for i in range(LOAD_OBJECTS + 1000)]  # a chat's rows, say
        collector.check()
        assert gc.get_count()[0] == 0  # nothing young is left for a collection to walk
        assert gc.get_freeze_count() >= before + len(loaded)
    finally:
        collector.stop()


def test_set_aside_cycles_are_freed_once_the_window_is_idle(qtbot: QtBot, gc_state: None) -> None:
    clock = Clock()
    collector = GuiThreadCollector(interval_ms=60_000, idle_s=3.0, full_every_s=60.0,
                                   now=clock)
    field = QLineEdit()
    qtbot.addWidget(field)
    field.show()
    qtbot.waitExposed(field)
    try:
        gc.collect()
        collector.collect_everything()
        grown = max(LOAD_OBJECTS, gc.get_freeze_count() * (1 + GROWTH))  # this process's heap
        cycles = [Cycle() for _ in range(int(grown))]
        dropped = weakref.ref(cycles[0])
        collector.check()  # a load: set aside (and the window heard from now on)
        del cycles
        clock.t += 120.0
        window = field.windowHandle()
        assert window is not None
        QTest.keyClick(window, Qt.Key.Key_A)  # as the platform delivers a key: to the window
        assert field.text() == "a"
        collector.check()
        assert dropped() is not None  # someone is typing: the long walk waits
        clock.t += 3.0
        collector.check()
        assert dropped() is None  # idle: walked, the cycles freed
    finally:
        collector.stop()


def test_stopping_frees_what_was_set_aside_on_the_gui_thread(qtbot: QtBot, gc_state: None) -> None:
    """What died while set aside is freed when the collector stops, here, before automatic
    collection comes back (which would free it on whichever thread allocates next)."""
    collector = GuiThreadCollector(interval_ms=60_000)
    cycle = Cycle()
    gone = weakref.ref(cycle)
    gc.freeze()
    del cycle
    gc.disable()  # no automatic collection may stand in for the stop's own
    collector.stop()
    assert gone() is None


class Finalized:
    """A cycle that notes the thread it is freed on."""

    def __init__(self, threads: list[str]) -> None:
        self.me = self
        self.threads = threads

    def __del__(self) -> None:
        self.threads.append(threading.current_thread().name)


def test_a_model_let_go_on_its_timer_is_freed_on_the_gui_thread(
    qtbot: QtBot, gc_state: None
) -> None:
    """An embedding model's idle timer lets it go on the timer's thread; what that frees (Qt
    objects among it, in a window) is collected on the GUI thread, once nobody types."""
    clock = Clock()
    collector = GuiThreadCollector(interval_ms=60_000, idle_s=3.0, now=clock)
    threads: list[str] = []
    held: list[object] = [Finalized(threads)]
    try:
        gc.collect()
        idle = IdleRelease(held.clear, seconds=0.01)
        idle.enter()
        idle.leave()
        qtbot.waitUntil(lambda: collector.asked_to_free, timeout=5000)
        assert not held and threads == []  # let go, and nothing freed on the timer's thread
        collector.check()
        assert threads == []  # someone typed a moment ago: the walk waits
        clock.t += 3.0
        collector.check()
        assert threads == [threading.main_thread().name]
    finally:
        collector.stop()
