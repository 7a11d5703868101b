"""The banner over a damaged store: it says what the store said, offers Restore a backup…
only when the window can run it (else it says where to find it), and Export always."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from treechat.ui.shell.damaged_store_banner import DamagedStoreBanner

MESSAGE = "The store's file is damaged: a page could not be read."


def test_without_a_restore_command_the_banner_says_where_to_find_one(qtbot: QtBot) -> None:
    banner = DamagedStoreBanner()
    qtbot.addWidget(banner)
    assert banner.isHidden()
    banner.show_damage(MESSAGE)
    assert not banner.isHidden()
    assert banner.message.text().startswith(MESSAGE)
    assert "Help → Restore a backup" in banner.message.text()
    assert banner.restore_button.isHidden() and not banner.export_button.isHidden()
    assert MESSAGE in banner.accessibleDescription()


def test_with_one_the_button_runs_it_and_export_runs_too(qtbot: QtBot) -> None:
    banner = DamagedStoreBanner()
    qtbot.addWidget(banner)
    banner.show_damage(MESSAGE)
    banner.offer_restore(True)
    assert not banner.restore_button.isHidden()
    assert banner.message.text() == MESSAGE
    asked: list[str] = []
    banner.restoreRequested.connect(lambda: asked.append("restore"))
    banner.exportRequested.connect(lambda: asked.append("export"))
    banner.restore_button.click()
    banner.export_button.click()
    assert asked == ["restore", "export"]
