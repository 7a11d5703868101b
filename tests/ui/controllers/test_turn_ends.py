"""A finished turn as the window draws it: from what the turn changed, never by reading the
chat again. After a send, retry, edit, continuation or stop, what the chat, its header, the
chat list, the costs and the ring show is what the store holds, and the session was not
loaded again to show it. Real services, a DuckDB file, litellm to the loopback server."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from tests.support.loopback_server import Reply

from treechat.services.turns.changes import TurnChanges
from treechat.services.turns.sessions import SessionService, SessionView
from treechat.ui.chat.model import ChatRow, RowKind, rows_for
from treechat.ui.controllers.chat_costs import ESTIMATE_DELAY_MS

from ..conftest import BIG_MODEL, Aio, Desk
from .controls_desk import controls


class ViewReads:
    """Counts the loads of a whole chat (`SessionService.view`) from the moment a turn's
    changes reach the window: a thin counting wrapper of the service's own method, which it
    calls through unchanged."""

    def __init__(self, desk: Desk, monkeypatch: pytest.MonkeyPatch) -> None:
        self.after_turn = 0
        self.applied: list[TurnChanges] = []
        self._counting = False
        sessions: SessionService = desk.services.chat.sessions
        load: Callable[[str], Coroutine[Any, Any, SessionView]] = sessions.view

        async def view(session_id: str) -> SessionView:
            if self._counting:
                self.after_turn += 1
            return await load(session_id)

        monkeypatch.setattr(sessions, "view", view)
        desk.controller.turns.turnApplied.connect(self._applied)

    def _applied(self, changes: TurnChanges) -> None:
        self.applied.append(changes)
        self._counting = True

    def again(self) -> None:
        """Count afresh for the next turn."""
        self._counting = False
        self.after_turn = 0


@pytest.fixture
def reads(desk: Desk, monkeypatch: pytest.MonkeyPatch) -> ViewReads:
    return ViewReads(desk, monkeypatch)


def type_and_send(desk: Desk, text: str) -> None:
    desk.composer.input.setFocus()
    desk.composer.set_text(text)
    QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)


async def turn_done(desk: Desk, aio: Aio, requests: int) -> None:
    await aio.until(lambda: desk.requests() >= requests
                    and not desk.controller.turns.is_running(), what="turn end")
    # past the next-cost estimate's pause too: it runs after every redraw
    await aio.settle(ESTIMATE_DELAY_MS / 1000 + 0.3)
    await desk.controller.tasks.idle()


def texts(desk: Desk) -> list[tuple[RowKind, str]]:
    return [(r.kind, r.text) for r in desk.chat.model.rows]


def shows_the_store(desk: Desk, aio: Aio) -> None:
    """What the window shows of the open chat is what a fresh read of the store shows: the
    rows, the header, the list row, the chat's cost."""
    c = desk.controller
    shown = c.current_view
    assert shown is not None
    stored = aio.run(desk.services.chat.sessions.view(shown.session.id))
    assert shown.session == stored.session
    assert [n.id for n in shown.path] == [n.id for n in stored.path]
    assert set(shown.graph.nodes) == set(stored.graph.nodes)
    def seen(rows: list[ChatRow]) -> list[tuple[object, ...]]:
        return [(r.kind, r.key, r.node, r.text, r.label, r.version, r.interrupted)
                for r in rows if r.kind != RowKind.ERROR]

    assert seen(desk.chat.model.rows) == seen(rows_for(stored, name=desk.chat.model.model_name))
    assert desk.window.title.text() == stored.session.title
    listed = desk.window.sessions.session(stored.session.id)
    assert listed == stored.session  # title and time in the chat list
    costs = controls(desk).costs
    replies = [n.id for n in stored.path if n.role == "assistant"]

    def on_path() -> dict[str, object]:  # what the replies on screen say on hover
        return {k: v for k, v in costs.costs.items() if k in replies}

    label, tip, held = costs.cost_label.text(), costs.cost_label.toolTip(), on_path()
    aio.run(costs.refresh_costs(stored.session.id))  # what reading the ledger would show
    assert (costs.cost_label.text(), costs.cost_label.toolTip()) == (label, tip)
    assert on_path() == held


def test_a_send_is_drawn_from_its_changes_without_loading_the_chat(
        desk: Desk, aio: Aio, reads: ViewReads) -> None:
    desk.composer.picker.setCurrentIndex(desk.composer.model_ids().index(BIG_MODEL))
    desk.provider.queue(Reply(text="A priced answer."))

    async def scenario() -> None:
        type_and_send(desk, "What is a tree?")
        await turn_done(desk, aio, 1)

    aio.run(scenario())
    assert texts(desk) == [(RowKind.USER, "What is a tree?"),
                           (RowKind.ASSISTANT, "A priced answer.")]
    assert reads.applied and reads.after_turn == 0
    (changes,) = reads.applied
    assert changes.session is not None and changes.session.title == "What is a tree?"
    costs = controls(desk).costs
    reply = desk.chat.model.rows[-1].node
    assert reply is not None and costs.costs[reply.id].output_tokens > 0
    assert costs.cost_label.text().startswith("$")
    ring = desk.composer.ring.occupancy
    assert ring is not None and ring.head == reply.id and ring.basis == "measured"
    shows_the_store(desk, aio)


def test_retry_edit_and_continue_are_drawn_from_their_changes(
        desk: Desk, aio: Aio, reads: ViewReads) -> None:
    desk.provider.queue(Reply(text="first answer"), Reply(text="second answer"),
                        Reply(text="to the new wording, cut", finish="length"),
                        Reply(text=" and carried on."))
    c = desk.controller

    async def scenario() -> None:
        type_and_send(desk, "a question")
        await turn_done(desk, aio, 1)
        reads.again()
        c.turns.retry()
        await turn_done(desk, aio, 2)
        assert reads.after_turn == 0 and len(reads.applied) == 2
        assert texts(desk)[-1] == (RowKind.ASSISTANT, "second answer")
        assert desk.chat.model.rows[-1].version == (2, 2)
        view = c.current_view
        assert view is not None
        reads.again()
        c.turns.edit(view.path[0].id, "a new wording")
        await turn_done(desk, aio, 3)
        assert reads.after_turn == 0 and len(reads.applied) == 3
        assert texts(desk) == [(RowKind.USER, "a new wording"),
                               (RowKind.ASSISTANT, "to the new wording, cut")]
        assert desk.chat.model.rows[0].version == (2, 2)
        assert controls(desk).continue_action.isEnabled()  # the reply was cut short
        reads.again()
        controls(desk).replies.continue_last()
        await turn_done(desk, aio, 4)

    aio.run(scenario())
    assert reads.after_turn == 0 and len(reads.applied) == 4
    last = [r for r in desk.chat.model.rows if r.kind == RowKind.ASSISTANT]
    assert "".join(r.text for r in last) == "to the new wording, cut and carried on."
    assert not controls(desk).continue_action.isEnabled()
    shows_the_store(desk, aio)


def test_a_stopped_reply_is_drawn_from_its_changes(
        desk: Desk, aio: Aio, reads: ViewReads) -> None:
    desk.provider.queue(Reply(text="word " * 50, endless=True, tokens_per_second=80))
    c = desk.controller

    async def scenario() -> None:
        type_and_send(desk, "never stop")
        await aio.until(lambda: len(desk.chat.model.stream_text()) > 20, what="some text")
        c.turns.stop()
        await turn_done(desk, aio, 1)

    aio.run(scenario())
    assert reads.after_turn == 0 and len(reads.applied) == 1
    row = desk.chat.model.rows[-1]
    assert row.kind == RowKind.ASSISTANT and row.interrupted and row.text.startswith("word")
    shows_the_store(desk, aio)


def test_a_failed_turn_keeps_the_message_drawn_from_its_changes(
        desk: Desk, aio: Aio, reads: ViewReads) -> None:
    desk.provider.fail_next(401)

    async def scenario() -> None:
        type_and_send(desk, "this one fails")
        await aio.until(desk.window.banner.isVisible, what="the error")
        await turn_done(desk, aio, 1)

    aio.run(scenario())
    assert reads.after_turn == 0 and len(reads.applied) == 1
    assert texts(desk)[0] == (RowKind.USER, "this one fails")
    assert desk.window.banner.kind() == "auth"
    shows_the_store(desk, aio)


def test_a_turn_whose_chat_was_left_is_read_afresh_when_it_is_opened_again(
        desk: Desk, aio: Aio, reads: ViewReads) -> None:
    import threading

    gate = threading.Event()
    desk.provider.queue(Reply(text="first"), Reply(text="answered while away", hold=gate))
    c = desk.controller

    async def scenario() -> None:
        type_and_send(desk, "one")
        await turn_done(desk, aio, 1)
        first = c.current_session_id
        assert first is not None
        reads.again()
        type_and_send(desk, "two")
        await aio.until(c.turns.is_running, what="the turn to start")
        c.new_chat()
        gate.set()
        await turn_done(desk, aio, 2)
        # the list row moved on from the turn's changes, with no read of the chat
        listed = desk.window.sessions.session(first)
        stored = await desk.services.chat.sessions.get(first)
        assert listed == stored and reads.after_turn == 0
        c.open_session(first)
        await aio.until(lambda: c.current_session_id == first, what="the chat again")
        await desk.controller.tasks.idle()

    aio.run(scenario())
    assert texts(desk)[-1] == (RowKind.ASSISTANT, "answered while away")
    shows_the_store(desk, aio)
