"""Restore a backup… in the window, on a real DuckDB store and its real backups: the list
shows each backup read through, and restoring closes the store, puts the backup in place
(the chat written after it is gone, the replaced store kept) and says so."""

from __future__ import annotations

from treechat.services.recovery import open_and_recover
from treechat.store.database import default_store_path

from ..conftest import Aio, Desk


def test_restore_puts_the_backup_in_place_and_says_so(desk: Desk, aio: Aio) -> None:
    backups = desk.controller.backups
    assert backups is not None
    assert backups.action.text() == "Restore a backup…"

    async def scenario() -> None:
        await desk.services.chat.sessions.create(title="Before the backup")
        await backups.service.create(desk.services.store)
        await desk.services.chat.sessions.create(title="After the backup")
        dialog = backups.open_dialog()
        await aio.until(lambda: dialog.list.count() == 1, what="listed")
        assert "manual" in dialog.list.item(0).text() and "MB" in dialog.list.item(0).text()
        await aio.until(dialog.restore_button.isEnabled, what="checked")
        assert dialog.message.text() == "This backup reads whole."
        dialog.restore_button.click()
        await aio.until(lambda: backups.restored, what="restored")
        assert "Restored the backup" in dialog.message.text()
        assert "kept as" in dialog.message.text()

    aio.run(scenario())
    store = open_and_recover(default_store_path(desk.data_dir))
    try:
        titles = [s.title for s in store.call(lambda r: r.list_sessions())]
    finally:
        store.close()
    assert titles == ["Before the backup"]
