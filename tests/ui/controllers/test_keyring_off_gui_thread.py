"""The keyring can take a D-Bus round trip (or a password prompt): the window never reads it on
its own thread, neither at start nor when a chat is opened, started or sent."""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtWidgets import QApplication
from tests.support.loopback_server import LoopbackProvider

from treechat.providers import llm
from treechat.providers.keys import KeyStore
from treechat.store.database import Store, default_store_path

from ..conftest import Aio, chat_session, close_desk, open_desk


class RecordingKeyring:
    """A keychain in memory that notes which threads read it (the desktop's Secret Service
    does not run inside the test process; tests/unit/providers/test_keys.py uses a real one
    in a child process)."""

    priority = 1

    def __init__(self, keys: dict[str, str]) -> None:
        self.keys = keys
        self.readers: list[threading.Thread] = []

    def get_password(self, service: str, username: str) -> str | None:
        self.readers.append(threading.current_thread())
        return self.keys.get(username)

    def set_password(self, service: str, username: str, password: str) -> None:
        self.keys[username] = password


def test_the_window_reads_no_key_on_its_own_thread(
    qapp: QApplication, aio: Aio, tmp_path: Path, loopback: LoopbackProvider
) -> None:
    aio.run(llm.ensure_loaded(), timeout=300)
    data_dir = tmp_path / "data"
    store = Store.open(default_store_path(data_dir))
    try:
        chat_session(store, "s1", "Earlier", 1000.0, ["hello", "hi there"])
    finally:
        store.close()
    recording = RecordingKeyring({"anthropic": "sk-ant-test"})
    desk = open_desk(qapp, aio, data_dir, loopback, keys=KeyStore(recording, environ={}))
    try:
        async def scenario() -> None:
            desk.controller.open_session("s1")
            await aio.until(lambda: desk.controller.current_session_id == "s1")
            await desk.controller.tasks.idle()
            desk.controller.new_chat()
            desk.composer.input.setPlainText("A new question")
            desk.composer.submit()
            await aio.until(lambda: desk.requests() == 1, timeout=120)
            await desk.controller.tasks.idle()

        aio.run(scenario(), timeout=240)
    finally:
        close_desk(desk)
    assert recording.readers, "the keyring was never read: nothing was checked"
    assert threading.main_thread() not in recording.readers
