"""The window syncs by itself: on start what another computer wrote appears in the chat list,
and a reply written here goes out once the turn is over, with nothing clicked."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from tests.support.clock import FakeClock
from tests.support.loopback_server import LoopbackProvider
from tests.support.sync_devices import PASSPHRASE, MemoryKeyring, make_device, start_target

from treechat.core.clock import SYSTEM_CLOCK
from treechat.providers import llm
from treechat.providers.keys import KeyStore
from treechat.services.sync.service import SyncService, TargetConfig
from treechat.services.sync.targets import FolderTarget
from treechat.store.database import Store, default_store_path

from ..conftest import Aio, close_desk, open_desk


def test_the_window_syncs_on_start_and_after_a_reply(
    qapp: QApplication, aio: Aio, tmp_path: Path, loopback: LoopbackProvider
) -> None:
    aio.run(llm.ensure_loaded(), timeout=300)
    (tmp_path / "target").mkdir()
    target = FolderTarget(tmp_path / "target")
    start_target(target)
    laptop = make_device(tmp_path, "laptop", target, FakeClock())
    keyring = MemoryKeyring()
    data_dir = tmp_path / "data"

    async def prepare() -> str:
        await laptop.sync.add(TargetConfig("folder", str(tmp_path / "target")), PASSPHRASE)
        chat = await laptop.sessions.create(title="Started on the laptop")
        await laptop.sessions.append_message(chat.id, "Remind me what we planned")
        await laptop.sync.sync_now()
        with Store.open(default_store_path(data_dir)) as store:
            here = SyncService(store, KeyStore(backend=keyring, environ={}), clock=SYSTEM_CLOCK)
            await here.add(TargetConfig("folder", str(tmp_path / "target")), PASSPHRASE)
        return chat.id

    chat_id = aio.run(prepare())
    desk = open_desk(qapp, aio, data_dir, loopback, keys=KeyStore(backend=keyring, environ={}))
    try:
        assert desk.services.sync is not None
        desk.services.sync.quiet = 0.2  # the window waits a few seconds; the test need not

        async def scenario() -> None:
            sessions = desk.controller.parts.sessions
            await aio.until(lambda: sessions.session(chat_id) is not None, timeout=60,
                            what="the laptop's chat in the list")
            desk.composer.input.setFocus()
            desk.composer.set_text("A question asked on the desktop")
            QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)
            await aio.until(lambda: desk.requests() >= 1
                            and not desk.controller.turns.is_running(), what="turn end")
            # the laptop only syncs; the desktop's window sent the question and its reply
            received: list[str] = []
            for _ in range(300):
                report = await laptop.sync.sync_now()
                received.extend(report.new_chats)
                if laptop.store.call(lambda r: r.node_count()) == 3:
                    break
                await aio.settle(0.1)
            assert received == ["A question asked on the desktop"]
            texts = laptop.store.call(lambda r: sorted(
                str(n.text) for n in r.get_nodes(r.all_node_ids())))
            assert "A question asked on the desktop" in texts and len(texts) == 3

        aio.run(scenario(), timeout=120)
    finally:
        close_desk(desk)
        laptop.close()
