"""A reply `treechat send` could not write while the window held the store (the command kept
it in its journal and ended): the window takes it into the store and shows it in its chat,
on a real store and a real journal file beside it."""

from __future__ import annotations

from treechat.services.store_life.drafts import ReplyJournal
from treechat.store.repository import Draft
from treechat.ui.controllers.command_replies import CommandReplies

from ..conftest import Aio, Desk


def test_a_commands_journaled_reply_shows_up_in_its_open_chat(desk: Desk, aio: Aio) -> None:
    (watcher,) = desk.controller.findChildren(CommandReplies)
    store = desk.services.store

    async def scenario() -> None:
        sessions = desk.services.chat.sessions
        chat = await sessions.create(title="Asked from the terminal")
        question = await sessions.append_message(chat.id, "what is a journal?")
        await desk.controller.session_list.reload()
        await desk.controller.load_session(chat.id)
        # What the command left when it gave up: its draft row and the whole text beside it.
        now = desk.services.clock.now()
        await store.run(lambda r: r.write_draft(
            Draft("cli-draft", chat.id, question.id, "openai/gpt-4o-mini", "", now, now, {})))
        ReplyJournal(store.path, "cli-draft").write(Draft(
            "cli-draft", chat.id, question.id, "openai/gpt-4o-mini",
            "A file kept beside the store.", now, now + 1, {}))
        watcher.look()

        def shown() -> bool:
            view = desk.controller.current_view
            return view is not None and "A file kept beside the store." in [
                n.text for n in view.graph.nodes.values()]

        await aio.until(shown, what="the reply in the open chat")
        assert [n.output for n in watcher.adopted] == ["A file kept beside the store."]
        assert await store.run(lambda r: r.drafts()) == ()
        assert not ReplyJournal(store.path, "cli-draft").path.exists()

    aio.run(scenario())
