"""Settings → General → Summaries by: the choice reaches the chat service at once and is kept
in the store for the next start."""

from __future__ import annotations

from treechat.services.bootstrap import SETTINGS_SUMMARIZER

from ..conftest import Aio, Desk


def test_the_summarizer_choice_applies_and_persists(desk: Desk, aio: Aio) -> None:
    desk.controller.dialogs.open_settings()
    dialog = desk.controller.dialogs.settings_dialog
    assert dialog is not None
    assert dialog.summarizer.currentData() == ""  # offline by default
    dialog.summarizer.setCurrentIndex(dialog.summarizer.findData("session"))
    dialog.save_button.click()

    async def saved() -> None:
        await aio.until(lambda: desk.services.chat.config.summarizer == "session", what="set")
        await desk.controller.tasks.idle()

    aio.run(saved())
    stored = desk.services.store.call(lambda r: r.get_setting(SETTINGS_SUMMARIZER))
    assert stored == "session"
    desk.controller.dialogs.open_settings()
    again = desk.controller.dialogs.settings_dialog
    assert again is not None and again.summarizer.currentData() == "session"
