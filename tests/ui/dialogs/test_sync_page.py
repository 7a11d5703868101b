"""Settings → Sync: starting to sync through a folder with a passphrase runs the first sync
with its progress and lists what came in; a wrong passphrase is one line and imports
nothing; a title edited on two computers shows both edits."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from tests.support.clock import FakeClock
from tests.support.sync_devices import PASSPHRASE, connect, make_device, start_target

from treechat.services.sync.targets import FolderTarget
from treechat.ui.common.tasks import BackgroundTasks
from treechat.ui.dialogs.sync_page import SyncPage

from ..conftest import Aio


def came_in(page: SyncPage) -> list[str]:
    return [page.came_in.item(i).text() for i in range(page.came_in.count())]


def test_start_syncing_shows_what_came_in_and_refuses_a_wrong_passphrase(
    aio: Aio, tmp_path: Path
) -> None:
    (tmp_path / "target").mkdir()
    target = FolderTarget(tmp_path / "target")
    start_target(target)
    clock = FakeClock()
    laptop = make_device(tmp_path, "laptop", target, clock)
    desktop = make_device(tmp_path, "desktop", target, clock)
    stranger = make_device(tmp_path, "stranger", target, clock)
    tasks = BackgroundTasks()
    page = SyncPage(desktop.sync, tasks)
    other = SyncPage(stranger.sync, tasks)
    page.resize(640, 620)
    page.show()

    async def scenario() -> None:
        await connect(laptop, str(tmp_path / "target"))
        chat = await laptop.sessions.create(title="Holiday plans")
        await laptop.sessions.append_message(chat.id, "Book the ferry")
        await laptop.sync.sync_now()
        await aio.until(lambda: page.status_label.text().startswith("Not syncing"))
        assert not page.sync_button.isEnabled()
        QTest.keyClicks(page.location, str(tmp_path / "target"))
        QTest.keyClicks(page.passphrase, PASSPHRASE)
        QTest.mouseClick(page.add_button, Qt.MouseButton.LeftButton)
        await aio.until(lambda: "received 1" in page.status_label.text(), timeout=60)
        assert page.passphrase.text() == ""  # gone from the window once in the keychain
        # the list follows the status once what came in is read
        await aio.until(lambda: came_in(page) == ["New chat: Holiday plans"],
                        what="what came in")
        assert page.sync_button.isEnabled()
        # the same chat renamed on both computers: the later edit wins, both are listed
        clock.advance(10)
        await desktop.sessions.rename(chat.id, "Island week")
        await desktop.sync.sync_now()
        clock.advance(10)
        await laptop.sessions.rename(chat.id, "Ferry to the islands")
        await laptop.sync.sync_now()
        QTest.mouseClick(page.sync_button, Qt.MouseButton.LeftButton)
        await aio.until(lambda: any(t.startswith("Renamed") for t in came_in(page)),
                        timeout=60)
        (line,) = came_in(page)
        assert line.startswith("Renamed: “Holiday plans” (laptop, ")
        assert "→ “Island week” (desktop, " in line
        assert line.index("Island week") < line.index("“Ferry to the islands” (laptop, ")
        assert (await desktop.sessions.get(chat.id)).title == "Ferry to the islands"  # type: ignore[union-attr]
        # a wrong passphrase on another computer
        QTest.keyClicks(other.location, str(tmp_path / "target"))
        QTest.keyClicks(other.passphrase, "not the passphrase")
        QTest.mouseClick(other.add_button, Qt.MouseButton.LeftButton)
        await aio.until(lambda: other.add_error.text() not in ("", "Checking…"))
        assert other.add_error.text() == (
            "wrong passphrase for this sync target; nothing was imported")
        assert await stranger.sessions.list(include_hidden=True) == ()
        await tasks.idle()

    try:
        aio.run(scenario(), timeout=120)
    finally:
        page.deleteLater()
        other.deleteLater()
        for d in (laptop, desktop, stranger):
            d.close()
