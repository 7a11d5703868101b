"""Chats waiting for their turn say so in the list: two chats sent to one local server (the
loopback provider, holding its answers) through the real window and services. The second row
reads "queued · next" until the first reply is done, then "replying…", and the server never
has two requests at once; rows are redrawn in place, never reordered for it."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from tests.support.loopback_server import Reply

from treechat.store.database import Store
from treechat.ui.sessions.model import ACTIVITY_ROLE, SESSION_ID_ROLE, activity_text, ordinal

from ..conftest import Aio, Desk, Seed, chat_session

SHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"


def two_chats(store: Store) -> None:
    chat_session(store, "one", "Plan the trip", 2_000.0, ["where?", "Lisbon"])
    chat_session(store, "two", "Draft the letter", 1_000.0, ["to whom?", "the bank"])


def test_a_chat_waiting_for_the_local_server_says_queued_then_replying(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(two_chats)
    listing = desk.window.sessions
    model = listing.model
    holds = [threading.Event(), threading.Event()]
    desk.provider.queue(Reply(text="Pack light.", hold=holds[0]),
                        Reply(text="Dear Sir or Madam,", hold=holds[1]))

    def doing(session_id: str) -> str:
        return str(model.index_of(session_id).data(ACTIVITY_ROLE) or "")

    def order() -> list[str]:
        ids = (model.index(r).data(SESSION_ID_ROLE) for r in range(model.rowCount()))
        return [str(i) for i in ids if i]

    async def send(session_id: str, text: str) -> None:
        listing.select(session_id)
        await desk.controller.load_session(session_id)
        desk.composer.set_text(text)
        desk.composer.submit()

    async def scenario() -> None:
        await send("one", "what to pack?")
        await aio.until(lambda: desk.requests() == 1, what="the first request")
        await aio.until(lambda: doing("one") == "replying…", what="one replying")
        await send("two", "make it short")
        await aio.until(lambda: doing("two") == "queued · next", what="two queued")
        rows = order()
        assert desk.requests() == 1  # the local server has one request at a time
        tip = str(model.index_of("two").data(Qt.ItemDataRole.ToolTipRole))
        assert "one chat at a time" in tip and "1 chat before this one" in tip
        assert "Waiting for its turn" in desk.window.statusBar().currentMessage()
        stream = desk.chat.model.rows[-1]
        assert stream.streaming and stream.waiting == "queued · next"  # not "writing…"
        await desk.controller.load_session("one")
        desk.window.statusBar().clearMessage()
        await desk.controller.load_session("two")  # opened again while it waits
        assert "1 chat before this one" in desk.window.statusBar().currentMessage()
        if os.environ.get("TREECHAT_SCREENSHOTS") == "1":
            for mode in ("light", "dark"):
                desk.theme.set_mode(mode)
                await aio.settle(0.2)
                listing.grab().save(str(SHOTS / f"first-hour-queued-{mode}.png"))

        holds[0].set()
        await aio.until(lambda: doing("two") == "replying…", what="two's turn")
        assert doing("one") == ""
        assert order() == rows  # the words changed in place
        holds[1].set()
        await aio.until(lambda: doing("two") == "" and not desk.services.chat.is_running("two"),
                        what="two answered")
        await desk.controller.tasks.idle()
        assert desk.requests() == 2
        one = await desk.services.chat.sessions.view("one")
        two = await desk.services.chat.sessions.view("two")
        assert one.path[-1].output == "Pack light."
        assert two.path[-1].output == "Dear Sir or Madam,"
        assert desk.window.banner.isHidden()

    aio.run(scenario())


def test_a_queued_place_reads_as_people_say_it() -> None:
    from treechat.services.turns.turn_queue import TurnActivity

    def queued(place: int) -> str:
        return activity_text(TurnActivity("s", "queued", "127.0.0.1:8080", True, place))

    assert [queued(p) for p in (1, 2, 3, 4)] == [
        "queued · next", "queued · 2nd", "queued · 3rd", "queued · 4th"]
    assert [ordinal(n) for n in (11, 12, 13, 21, 22, 101)] == [
        "11th", "12th", "13th", "21st", "22nd", "101st"]
    assert activity_text(None) == ""
    assert activity_text(TurnActivity("s", "replying", "api.openai.com", False)) == "replying…"
