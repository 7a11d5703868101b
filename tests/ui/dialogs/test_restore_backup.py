"""Restore a backup… in the window, on a real DuckDB store and its real backups: the list
shows each backup read through; restoring asks first, then puts the backup in place (the chat
written after it is gone, the replaced store kept) and the window goes on with the restored
store without a restart. A restore that fails leaves the store as it was and says why."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox

from treechat.store.backup import list_backups

from ..conftest import Aio, Desk


def listed_titles(desk: Desk) -> list[str]:
    model = desk.window.sessions.model
    found = (model.session_at(model.index(row)) for row in range(model.rowCount()))
    return [s.title for s in found if s is not None]


def confirm(dialog: object, aio: Aio) -> QMessageBox:
    box = getattr(dialog, "confirmation", None)
    assert isinstance(box, QMessageBox) and box.isVisible()
    return box


def test_restore_asks_then_puts_the_backup_in_place_and_goes_on(desk: Desk, aio: Aio) -> None:
    backups = desk.controller.backups
    assert backups is not None
    assert backups.action.text() == "Restore a backup…"
    store = desk.services.store

    async def scenario() -> None:
        sessions = desk.services.chat.sessions
        before = await sessions.create(title="Before the backup")
        await sessions.append_message(before.id, "kept by the backup")
        await backups.service.create()
        await sessions.create(title="After the backup")
        await desk.controller.session_list.reload()
        await desk.controller.load_session(before.id)
        assert listed_titles(desk) == ["After the backup", "Before the backup"]

        dialog = backups.open_dialog()
        await aio.until(lambda: dialog.list.count() == 1, what="listed")
        assert "manual" in dialog.list.item(0).text() and "MB" in dialog.list.item(0).text()
        await aio.until(dialog.restore_button.isEnabled, what="checked")
        assert dialog.message.text() == "This backup reads whole."

        dialog.restore_button.click()  # asked first; Cancel changes nothing
        box = confirm(dialog, aio)
        assert "Restore the backup of" in box.text() and "kept beside" in box.informativeText()
        box.button(QMessageBox.StandardButton.Cancel).click()
        await aio.until(lambda: dialog.confirmation is None, what="cancelled")
        assert not backups.restored and len(listed_titles(desk)) == 2

        dialog.restore_button.click()
        box = confirm(dialog, aio)
        (restore,) = [b for b in box.buttons() if b.text() == "Restore"]
        restore.click()
        await aio.until(lambda: backups.restored, what="restored")
        await aio.until(lambda: listed_titles(desk) == ["Before the backup"], what="reloaded")
        assert "Restored the backup" in dialog.message.text()
        assert "kept as" in dialog.message.text()
        # The same window and store go on: the open chat is shown from the restored file,
        # and a new chat is written to it.
        view = desk.controller.current_view
        assert view is not None and view.session.id == before.id
        assert [n.text for n in view.graph.nodes.values()] == ["kept by the backup"]
        assert not store.released
        await sessions.create(title="After the restore")
        assert {s.title for s in await sessions.list()} == {
            "Before the backup", "After the restore"}

    aio.run(scenario())
    replaced = list(desk.data_dir.glob("treechat.duckdb.before-restore-*"))
    assert len(replaced) == 1  # the store it replaced, beside it


def test_a_failed_restore_leaves_the_store_as_it_was_and_says_why(
    desk: Desk, aio: Aio
) -> None:
    backups = desk.controller.backups
    assert backups is not None
    store = desk.services.store

    async def scenario() -> None:
        sessions = desk.services.chat.sessions
        await sessions.create(title="In the backup")
        backup = await backups.service.create()
        await sessions.create(title="Only in the store")
        await desk.controller.session_list.reload()
        # The backup is damaged after it was listed and checked: the restore refuses it.
        data = backup.path.read_bytes()
        backup.path.write_bytes(data[: len(data) // 2])
        dialog = backups.open_dialog()
        await aio.until(lambda: dialog.list.count() == 1, what="listed")
        dialog._start_restore(list_backups(store.path)[0])
        await aio.until(lambda: "not restored" in dialog.message.text(), what="refused")
        assert "The current store was not changed" in dialog.message.text()
        assert not backups.restored
        assert listed_titles(desk) == ["Only in the store", "In the backup"]
        await sessions.create(title="Still written")
        assert len(await sessions.list()) == 3

    aio.run(scenario())
    assert not list(desk.data_dir.glob("treechat.duckdb.before-restore-*"))


def test_a_chat_newer_than_the_backup_leaves_the_screen_and_keeps_what_was_typed(
    desk: Desk, aio: Aio
) -> None:
    """The chat on screen was written after the backup: once restored, the window does not
    go on showing it (a send into it would fail), and the text typed into it is kept as a
    new chat's."""
    backups = desk.controller.backups
    assert backups is not None

    async def scenario() -> None:
        sessions = desk.services.chat.sessions
        await sessions.create(title="In the backup")
        backup = await backups.service.create()
        newer = await sessions.create(title="Only after the backup")
        await sessions.append_message(newer.id, "written after it")
        await desk.controller.session_list.reload()
        await desk.controller.load_session(newer.id)
        desk.composer.set_text("half a thought")
        await backups.restore(backup)
        assert listed_titles(desk) == ["In the backup"]
        assert desk.controller.current_view is None
        assert desk.controller.current_session_id is None
        assert desk.composer.text() == "half a thought"
        assert "not in this backup" in desk.window.statusBar().currentMessage()

    aio.run(scenario())
