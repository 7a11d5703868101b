"""Window tests on the real stack: a qasync loop over pytest-qt's QApplication, the real
services on a DuckDB file in tmp_path, and the loopback provider over HTTP.

Pattern: a test is a plain function that runs one coroutine on the qasync loop with
`aio.run(...)`. Inside it, widgets are driven with QTest/qtbot calls (they only post or send
events) and waiting is `await aio.until(...)`, which yields to the loop, so Qt events and
asyncio callbacks keep flowing. Never call `qtbot.wait*` inside the coroutine: that would
start a nested event loop under qasync."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import qasync
from PySide6.QtCore import QEvent, QSettings
from PySide6.QtGui import QFont, QPalette
from PySide6.QtWidgets import QApplication
from tests.support.loopback_server import LoopbackProvider

from treechat.app import connect_services, create_window
from treechat.core.clock import SYSTEM_CLOCK, Clock, SystemClock
from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.providers.keys import KeyStore
from treechat.services.bootstrap import Services, build_services
from treechat.services.models.catalog import ModelChoice
from treechat.store.database import Store, default_store_path
from treechat.ui.common.theme import ThemeManager
from treechat.ui.controllers.conversation import ConversationController
from treechat.ui.shell.event_loop import close_event_loop, create_event_loop
from treechat.ui.shell.main_window import MainWindow

T = TypeVar("T")

MODEL = "openai/loopback-model"
BIG_MODEL = "openai/gpt-4o"  # litellm knows its window (128k); served by the loopback too

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.ui)
            # the offscreen platform cannot raise or size native windows; not our warning
            item.add_marker(
                pytest.mark.qt_log_ignore("This plugin does not support")
            )


class Aio:
    """Runs coroutines on a qasync loop and waits without blocking Qt."""

    def __init__(self, loop: qasync.QEventLoop) -> None:
        self.loop = loop

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        return self.loop.run_until_complete(asyncio.wait_for(coro, timeout))

    async def until(
        self, predicate: Callable[[], object], timeout: float = 60.0, what: str = ""
    ) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what or predicate}")
            await asyncio.sleep(0.01)

    async def settle(self, seconds: float = 0.05) -> None:
        """Let queued Qt events and callbacks run."""
        await asyncio.sleep(seconds)


@pytest.fixture(scope="session", autouse=True)
def litellm_warm() -> None:
    """The window warms litellm up after it paints; tests start it once for all of them."""
    from treechat.providers import llm

    llm.start_warmup()


@pytest.fixture(autouse=True)
def collect_on_the_gui_thread(qapp: QApplication) -> Iterator[None]:
    """What a test left for deletion is deleted, and its Python wrappers collected, here on
    the GUI thread. Left to a garbage collection that happens to run on a worker thread (a
    store or provider thread, minutes later), a Qt object with a timer is destroyed off its
    thread and a later event loop pass crashes."""
    yield
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    gc.collect()


@pytest.fixture(autouse=True)
def restore_app_look(qapp: QApplication) -> Iterator[None]:
    """A window's theme is application-wide (style, palette, style sheet, font); put the
    application back as it was so tests do not see each other's look."""
    style = qapp.style().name()
    palette = QPalette(qapp.palette())
    sheet = qapp.styleSheet()
    font = QFont(qapp.font())
    yield
    qapp.setStyleSheet(sheet)
    qapp.setStyle(style)
    qapp.setPalette(palette)
    qapp.setFont(font)


@pytest.fixture
def aio(qapp: QApplication) -> Iterator[Aio]:
    loop = create_event_loop(qapp)
    helper = Aio(loop)
    try:
        yield helper
    finally:
        close_event_loop(loop)


@dataclass
class Desk:
    """The running window and everything behind it."""

    window: MainWindow
    controller: ConversationController
    services: Services
    provider: LoopbackProvider
    prefs: QSettings
    theme: ThemeManager
    aio: Aio
    data_dir: Path

    @property
    def composer(self) -> Any:
        return self.window.composer

    @property
    def chat(self) -> Any:
        return self.window.chat

    def requests(self) -> int:
        return len(self.provider.requests)


def choices_for(provider: LoopbackProvider) -> tuple[ModelChoice, ...]:
    return (
        ModelChoice(MODEL, "Loopback", "openai", api_base=provider.openai_base),
        ModelChoice(BIG_MODEL, "Loopback GPT-4o", "openai", api_base=provider.openai_base),
    )


def open_desk(
    qapp: QApplication, aio: Aio, data_dir: Path, provider: LoopbackProvider,
    keys: KeyStore | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> Desk:
    services = build_services(
        data_dir,
        clock=clock,
        bundled=False,
        detect_local_servers=False,
        extra_models=choices_for(provider),
        keys=keys if keys is not None else KeyStore(environ={}),
    )
    services.models.default_model = MODEL
    window, prefs, theme = create_window(qapp, data_dir)
    controller = connect_services(window, services, prefs, theme)
    window.show()
    aio.run(controller.start())
    return Desk(window, controller, services, provider, prefs, theme, aio, data_dir)


def close_desk(desk: Desk) -> None:
    async def shutdown() -> None:
        await desk.controller.close()
        await desk.services.close()

    try:
        desk.aio.run(shutdown())
    finally:
        desk.services.close_store()
        desk.window.close_now()
        desk.window.deleteLater()
        # Destroy the window and collect its Python wrappers here, on the GUI thread: left to
        # a garbage collection on a worker thread, Qt objects with timers complain.
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        gc.collect()


Seed = Callable[[Store], None]


class NoonClock(SystemClock):
    """The system's clock, but the wall clock reads midday of `day` (local time) when the
    desk opens and runs on from there, so what a test calls "today" is still today when
    it looks, whatever hour the suite runs at."""

    def __init__(self, day: tuple[int, int, int] = (2026, 6, 15)) -> None:
        import datetime as dt

        self.start = dt.datetime(*day, 12, 0).timestamp()
        self._began = time.monotonic()

    def now(self) -> float:
        return self.start + (time.monotonic() - self._began)


@pytest.fixture
def desk_with(
    qapp: QApplication, aio: Aio, tmp_path: Path, loopback: LoopbackProvider
) -> Iterator[Callable[[Seed | None], Desk]]:
    """Opens the window on a store first filled by `seed` (or empty)."""
    from treechat.providers import llm

    # the first request would otherwise wait for litellm's import inside the test's timeouts
    aio.run(llm.ensure_loaded(), timeout=300)
    opened: list[Desk] = []

    def make(seed: Seed | None = None, clock: Clock = SYSTEM_CLOCK) -> Desk:
        data_dir = tmp_path / "data"
        if seed is not None:
            store = Store.open(default_store_path(data_dir))
            try:
                seed(store)
            finally:
                store.close()
        desk = open_desk(qapp, aio, data_dir, loopback, clock=clock)
        opened.append(desk)
        return desk

    try:
        yield make
    finally:
        for d in opened:
            close_desk(d)


@pytest.fixture
def desk(desk_with: Callable[[Seed | None], Desk]) -> Desk:
    return desk_with(None)


def chat_session(
    store: Store, session_id: str, title: str, updated: float, turns: Sequence[str] = ()
) -> None:
    """A session with alternating user/assistant messages, written straight to the store."""
    store.call(lambda r: r.create_session(
        Session(session_id, title, None, MODEL, updated, updated_at=updated)))
    nodes = []
    prev = None
    for i, text in enumerate(turns):
        node = Node(f"{session_id}-{i}", 0, updated, session_id,
                    "user" if i % 2 == 0 else "assistant", output=text, predecessor=prev)
        nodes.append(node)
        prev = node.id
    if nodes:
        store.call(lambda r: r.apply_change(session_id, Change(tuple(nodes), prev), updated))
