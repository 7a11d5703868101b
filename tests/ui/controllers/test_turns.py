"""The send path in the window: a turn as the turn controller reports it (its signals, what
it gives back when a turn fails, what it refuses while one runs), through the real
services, a DuckDB file and the loopback provider."""

from __future__ import annotations

import threading
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from tests.support.loopback_server import Reply

from treechat.core.occupancy import Occupancy
from treechat.services.turns.events import TurnError
from treechat.store.database import Store
from treechat.ui.chat.model import RowKind

from ..conftest import Aio, Desk, Seed, chat_session


def type_and_send(desk: Desk, text: str) -> None:
    desk.composer.input.setFocus()
    desk.composer.set_text(text)
    QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)


def texts(desk: Desk) -> list[tuple[RowKind, str]]:
    return [(r.kind, r.text) for r in desk.chat.model.rows]


async def turn_done(desk: Desk, aio: Aio, requests: int) -> None:
    await aio.until(lambda: desk.requests() >= requests
                    and not desk.controller.turns.is_running(), what="turn end")
    await desk.controller.tasks.idle()


def two_chats(store: Store) -> None:
    chat_session(store, "a", "Alpha", 1000.0, ["first question", "first answer"])
    chat_session(store, "b", "Beta", 2000.0, ["second question", "second answer"])


def test_a_send_reports_busy_then_finished_and_the_ring_gets_the_turns_record(
        desk: Desk, aio: Aio) -> None:
    turns = desk.controller.turns
    busy: list[bool] = []
    finished: list[str] = []
    measured: list[Occupancy] = []
    turns.busyChanged.connect(busy.append)
    turns.turnFinished.connect(finished.append)
    turns.occupancyShown.connect(measured.append)
    window_busy: list[bool] = []
    desk.controller.busyChanged.connect(window_busy.append)
    desk.provider.queue(Reply(text="A short answer."))

    async def scenario() -> None:
        type_and_send(desk, "A short question")
        await turn_done(desk, aio, 1)

    aio.run(scenario())
    sid = desk.controller.current_session_id
    assert sid is not None and finished == [sid]
    assert busy[0] is True and busy[-1] is False
    assert True in window_busy and window_busy[-1] is False  # the window hears the same
    # the provider's measurement of the request, as the ring shows it
    assert measured and measured[-1].basis == "measured"
    assert measured[-1].total_used == desk.provider.requests[-1].prompt_tokens
    assert texts(desk) == [(RowKind.USER, "A short question"),
                           (RowKind.ASSISTANT, "A short answer.")]


def test_a_second_send_while_a_reply_runs_is_not_sent_and_stays_typed(
        desk: Desk, aio: Aio) -> None:
    release = threading.Event()
    desk.provider.queue(Reply(text="slow answer", hold=release))

    async def scenario() -> None:
        type_and_send(desk, "first")
        await aio.until(desk.controller.turns.is_running, what="the turn to start")
        type_and_send(desk, "second, too early")
        await aio.settle(0.2)
        assert desk.composer.text() == "second, too early"
        release.set()
        await turn_done(desk, aio, 1)

    aio.run(scenario())
    assert desk.requests() == 1
    assert texts(desk) == [(RowKind.USER, "first"), (RowKind.ASSISTANT, "slow answer")]
    assert desk.composer.text() == "second, too early"


def test_a_failed_turn_gives_the_text_back_and_a_changed_message_replaces_it(
        desk: Desk, aio: Aio) -> None:
    failures: list[object] = []
    desk.controller.turns.turnFailed.connect(failures.append)
    desk.provider.fail_next(401)
    desk.provider.queue(Reply(text="answer to the fixed question"))

    async def scenario() -> None:
        type_and_send(desk, "a question with a typo")
        await aio.until(desk.window.banner.isVisible, what="the error")
        await desk.controller.tasks.idle()
        assert desk.composer.text() == "a question with a typo"
        sid = desk.controller.current_session_id
        assert sid is not None and sid in desk.controller.last_errors
        type_and_send(desk, "a question without a typo")
        await turn_done(desk, aio, 2)

    aio.run(scenario())
    assert len(failures) == 1 and isinstance(failures[0], TurnError)
    assert failures[0].kind == "auth"
    # one message on the branch (the failed one is its first version), answered once
    rows = desk.chat.model.rows
    assert [(r.kind, r.text) for r in rows] == [
        (RowKind.USER, "a question without a typo"),
        (RowKind.ASSISTANT, "answer to the fixed question")]
    assert rows[0].version == (2, 2)
    assert desk.controller.current_session_id not in desk.controller.last_errors
    assert not desk.window.banner.isVisible()


def test_a_reply_that_fails_in_a_chat_not_shown_keeps_its_text_as_that_chats_draft(
        desk_with: Callable[[Seed | None], Desk], aio: Aio) -> None:
    desk = desk_with(two_chats)
    release = threading.Event()
    desk.provider.queue(Reply(status=401, hold=release))
    c = desk.controller

    async def scenario() -> None:
        c.open_session("a")
        await aio.until(lambda: c.current_session_id == "a", what="Alpha open")
        type_and_send(desk, "a follow-up for Alpha")
        await aio.until(c.turns.is_running, what="the turn to start")
        c.open_session("b")
        await aio.until(lambda: c.current_session_id == "b", what="Beta open")
        release.set()
        await aio.until(lambda: "a" in c.last_errors, what="the failure")
        await c.tasks.idle()
        assert not desk.window.banner.isVisible()  # Beta's screen says nothing of Alpha
        assert desk.composer.text() == ""
        c.open_session("a")
        await aio.until(lambda: c.current_session_id == "a", what="Alpha again")
        await c.tasks.idle()

    aio.run(scenario())
    assert desk.composer.text() == "a follow-up for Alpha"
    assert desk.window.banner.isVisible() and desk.window.banner.kind() == "auth"


def test_a_turn_started_elsewhere_streams_into_the_chat_like_a_send(
        desk: Desk, aio: Aio) -> None:
    release = threading.Event()
    desk.provider.queue(Reply(text="first answer"),
                        Reply(text="a longer second answer", hold=release))
    c = desk.controller

    async def scenario() -> None:
        type_and_send(desk, "a question")
        await turn_done(desk, aio, 1)
        view = c.current_view
        assert view is not None
        sid, user = view.session.id, view.path[0].id
        started = c.turns.run_external(
            lambda sink: c.chat_service.retry(sid, user, on_event=sink))
        assert started
        await aio.until(c.turns.is_running, what="the turn to start")
        # a second one while it runs is refused
        assert not c.turns.run_external(
            lambda sink: c.chat_service.retry(sid, user, on_event=sink))
        release.set()
        await turn_done(desk, aio, 2)

    aio.run(scenario())
    assert desk.requests() == 2
    last = desk.chat.model.rows[-1]
    assert last.text == "a longer second answer" and last.version == (2, 2)


def test_closing_stops_every_running_turn_and_keeps_what_streamed(
        desk: Desk, aio: Aio) -> None:
    desk.provider.queue(Reply(text="word " * 50, endless=True, tokens_per_second=80))
    c = desk.controller

    async def scenario() -> None:
        type_and_send(desk, "never stop")
        await aio.until(lambda: len(desk.chat.model.stream_text()) > 20, what="some text")
        await c.turns.stop_all()
        await c.tasks.idle()

    aio.run(scenario())
    assert not c.turns.is_running()
    view = c.current_view
    assert view is not None and view.path[-1].role == "assistant"
    assert view.path[-1].interrupted and view.path[-1].text.startswith("word")
