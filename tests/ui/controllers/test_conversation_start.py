"""Starting the window while the store is slow (a loaded machine): the first frame of widgets
names the model a message goes to, what is typed before the last chat has loaded is kept and
sent with that model, and the chat being typed in is never switched for the last one."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from tests.support.loopback_server import LoopbackProvider

from treechat.app import connect_services, create_window
from treechat.providers import llm
from treechat.providers.keys import KeyStore
from treechat.services.bootstrap import build_services
from treechat.store.database import Store, default_store_path

from ..conftest import MODEL, Aio, chat_session, choices_for, close_desk, open_desk


def test_typing_while_the_chats_open_stays_in_its_chat_with_a_named_model(
    qapp: QApplication, aio: Aio, tmp_path: Path, loopback: LoopbackProvider
) -> None:
    aio.run(llm.ensure_loaded(), timeout=300)  # the first reply is not the test
    data_dir = tmp_path / "data"
    store = Store.open(default_store_path(data_dir))
    try:
        chat_session(store, "yesterday", "Yesterday's chat", 1000.0,
                     ["an old question", "an old answer"])
    finally:
        store.close()
    # a first run that ends on yesterday's chat: the next start reopens it
    desk = open_desk(qapp, aio, data_dir, loopback)
    try:
        desk.controller.open_session("yesterday")
        aio.run(aio.until(lambda: desk.controller.current_session_id == "yesterday"))
    finally:
        close_desk(desk)

    # the next start, on a machine so loaded that the store answers late
    services = build_services(data_dir, bundled=False, detect_local_servers=False,
                              extra_models=choices_for(loopback), keys=KeyStore(environ={}))
    services.models.default_model = MODEL
    window, prefs, theme = create_window(qapp, data_dir)
    window.show()
    # the first frame of widgets names the model, before any service has listed one
    assert window.composer.picker.currentText() == "Loopback"
    gate = threading.Event()
    controller = connect_services(window, services, prefs, theme)

    async def slow_start() -> None:
        held = asyncio.ensure_future(services.store.run(lambda _r: gate.wait(30)))
        starting = asyncio.ensure_future(controller.start())
        await asyncio.sleep(0.2)
        assert controller.current_session_id is None  # still opening
        window.composer.input.setFocus()
        QTest.keyClicks(window.composer.input, "a new question, typed at once")
        QTest.keyClick(window.composer.input, Qt.Key.Key_Return)
        await asyncio.sleep(0.2)
        gate.set()
        await held
        await starting
        await aio.until(lambda: controller.current_view is not None
                        and len(controller.current_view.path) == 2
                        and not controller.turns.is_running(), what="the reply")
        await controller.tasks.idle()

    try:
        aio.run(slow_start())
        view = controller.current_view
        assert view is not None
        # the chat typed in is the one on screen: not yesterday's, which loaded after
        assert view.session.id != "yesterday"
        assert view.path[0].text == "a new question, typed at once"
        assert window.chat is not None
        assert window.chat.model.rows[0].text == "a new question, typed at once"
        # and it went out with the model the picker named
        assert view.session.model == MODEL
        assert window.composer.picker.currentText() == "Loopback"
        assert window.sessions.model.session_count() == 2
    finally:
        async def shutdown() -> None:
            await controller.close()
            await services.close()

        try:
            aio.run(shutdown())
        finally:
            services.close_store()
            window.close_now()
            window.deleteLater()
