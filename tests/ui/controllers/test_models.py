"""The model picker's controller on the real window: the library's Use in this chat puts
the model in the picker, and a reply through a server the picker had not checked marks it
reachable (the whole path is in tests/ui/dialogs/test_connections_page.py)."""

from __future__ import annotations

from tests.ui.conftest import Desk

from treechat.services.models.catalog import BUNDLED_ID


def test_a_model_picked_from_the_library_is_the_next_chats(desk: Desk) -> None:
    async def scenario() -> None:
        desk.window.local_models_action.trigger()
        dialog = desk.controller.dialogs.model_library_dialog
        assert dialog is not None
        dialog.useRequested.emit(BUNDLED_ID)  # what its Use in this chat sends
        await desk.controller.tasks.idle()
        assert desk.controller.models.next_model == BUNDLED_ID
        assert desk.composer.current_model() == BUNDLED_ID

    desk.aio.run(scenario())


def test_a_reply_of_no_connection_changes_nothing(desk: Desk) -> None:
    async def scenario() -> None:
        session = await desk.services.chat.sessions.create()
        before = desk.services.models.connections.statuses()
        desk.controller.models.reply_finished(session.id)  # a chat with no reply yet
        await desk.controller.tasks.idle()
        assert desk.services.models.connections.statuses() == before
        desk.controller.models.reply_finished("a-chat-deleted-meanwhile")  # said nowhere
        await desk.controller.tasks.idle()
        assert "went wrong" not in desk.window.statusBar().currentMessage()

    desk.aio.run(scenario())
