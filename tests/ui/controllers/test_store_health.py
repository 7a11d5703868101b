"""The window on a damaged store (truncated as tests/unit/store/test_integrity.py does it):
a banner that cannot be dismissed says what is wrong and the ways out, a send is refused with
that message (the text stays in the box, nothing reaches the provider, the file is untouched),
and the chats that can still be read are exported from the banner."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from tests.support.loopback_server import LoopbackProvider

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.store.database import Store, default_store_path

from ..conftest import Aio, Desk, close_desk, open_desk


def build_store(path: Path, messages: int = 4000) -> None:
    """A short chat and a long one, so cutting the file's end leaves a store whose check
    fails (its used blocks do not fit the file) while its list of chats can still be read."""
    t = 1_764_500_000.0  # late November 2025
    store = Store.open(path)
    try:
        store.call(lambda r: r.create_session(
            Session("s0", "Trip notes", None, "m", t + 3, updated_at=t + 3)))
        short = (Node("s0-0", 0, t + 3, "s0", "user", output="where to?"),
                 Node("s0-1", 0, t + 3, "s0", "assistant", output="the coast",
                      predecessor="s0-0"))
        store.call(lambda r: r.apply_change("s0", Change(short, "s0-1"), t + 3))
        store.call(lambda r: r.create_session(
            Session("s1", "Long chat", None, "m", t + 1, updated_at=t + 1)))
        nodes = []
        prev = None
        for i in range(messages):
            nodes.append(Node(
                id=f"n{i}", seq=0, created_at=t + 1, session_id="s1",
                role="user" if i % 2 == 0 else "assistant",
                output=f"message {i} " + os.urandom(300).hex(), predecessor=prev))
            prev = f"n{i}"
        store.call(lambda r: r.apply_change("s1", Change(tuple(nodes), prev), t + 2))
    finally:
        store.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def damaged_desk(
    qapp: QApplication, aio: Aio, tmp_path: Path, loopback: LoopbackProvider
) -> Iterator[Desk]:
    from treechat.providers import llm

    aio.run(llm.ensure_loaded(), timeout=300)
    data_dir = tmp_path / "data"
    path = default_store_path(data_dir)
    build_store(path)
    os.truncate(path, int(path.stat().st_size * 0.95))
    desk = open_desk(qapp, aio, data_dir, loopback)
    try:
        yield desk
    finally:
        close_desk(desk)


def test_a_damaged_store_shows_a_banner_and_refuses_to_send(damaged_desk: Desk) -> None:
    desk = damaged_desk
    store = desk.services.store
    assert store.read_only
    path = store.path
    before = digest(path)
    from treechat.ui.controllers.store_health import StoreHealth

    health = StoreHealth.of(desk.controller)
    assert health is not None
    banner = health.banner
    assert banner.isVisible()
    text = banner.message.text()
    assert f"The conversation store {path} is damaged: it is truncated" in text
    assert "Treechat will not write to it" in text
    assert "Help → Restore a backup…" in text
    assert banner.restore_button.isVisible() and banner.export_button.isVisible()
    assert not banner.findChildren(type(desk.window.banner.close_button), "BannerClose")

    async def scenario() -> None:
        desk.composer.input.setFocus()
        desk.composer.set_text("hello?")
        QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)
        await desk.aio.settle(0.3)

    desk.aio.run(scenario())
    assert desk.composer.text() == "hello?"  # nothing typed is lost
    assert desk.requests() == 0
    assert banner.isVisible() and banner.message.text() == text
    assert not desk.window.banner.isVisible()  # no failed-turn banner, no traceback
    assert "Not sent: the conversation store is damaged" in desk.window.statusBar().currentMessage()
    assert digest(path) == before


def test_the_banner_exports_what_can_be_read_and_names_what_cannot(
    damaged_desk: Desk, tmp_path: Path
) -> None:
    desk = damaged_desk
    from treechat.ui.controllers.store_health import StoreHealth

    health = StoreHealth.of(desk.controller)
    assert health is not None
    health.banner.export_button.click()
    picker = health.export_dialog
    assert picker is not None and picker.isVisible()
    out = tmp_path / "rescued"
    out.mkdir()
    picker.close()

    written, unreadable = desk.aio.run(health.export_readable(out))
    # the cut took blocks of the messages' table: neither chat's messages can be read whole,
    # so neither is written half; the status line names both
    assert (written, sorted(unreadable)) == ([], ["Long chat", "Trip notes"])
    assert list(out.iterdir()) == []
    assert desk.window.statusBar().currentMessage() == (
        f"Exported 0 chats to {out}; 2 could not be read: Trip notes, Long chat.")


def test_the_banners_restore_button_runs_the_windows_restore_command(
    damaged_desk: Desk,
) -> None:
    from PySide6.QtGui import QAction

    from treechat.ui.controllers.store_health import StoreHealth

    desk = damaged_desk
    health = StoreHealth.of(desk.controller)
    assert health is not None
    (restore,) = [a for a in desk.window.findChildren(QAction)
                  if a.text().startswith("Restore a backup")]
    fired: list[bool] = []
    restore.triggered.connect(lambda *_: fired.append(True))
    assert health.check()
    assert health.banner.restore_button.isVisible()
    health.banner.restore_button.click()
    assert fired == [True]
    assert health.banner.isVisible()  # still damaged until a backup is back in place
