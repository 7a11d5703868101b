"""The window end to end: typing, streaming, stopping, retrying, switching versions, editing
and branching, through the real services, a DuckDB file and the loopback provider."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from tests.support.loopback_server import Reply

from treechat.ui.chat.model import RowKind

from ..conftest import Aio, Desk, Seed, chat_session


def row_texts(desk: Desk) -> list[tuple[str, str]]:
    return [(r.kind.value, r.text) for r in desk.chat.model.rows]


def type_and_send(desk: Desk, text: str) -> None:
    desk.composer.input.setFocus()
    desk.composer.set_text(text)
    QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)


def test_send_streams_a_reply_into_the_window(desk: Desk, aio: Aio) -> None:
    desk.provider.queue(Reply(text="Hello from the loopback provider, streamed in pieces.",
                              tokens_per_second=40))

    async def scenario() -> None:
        type_and_send(desk, "Say hello")
        assert desk.composer.text() == ""
        # the message is shown at once and the reply streams in before it is finished
        await aio.until(lambda: any(k == "stream" and t for k, t in row_texts(desk)),
                        what="streamed text")
        assert ("user", "Say hello") in row_texts(desk)
        assert desk.composer.running and desk.composer.send_button.text() == "Stop"
        await aio.until(lambda: not desk.controller.turns.is_running(), what="turn end")
        await desk.controller.tasks.idle()

    aio.run(scenario())
    kinds = [r.kind for r in desk.chat.model.rows]
    assert kinds == [RowKind.USER, RowKind.ASSISTANT]
    assert desk.chat.model.rows[-1].text == "Hello from the loopback provider, streamed in pieces."
    assert desk.composer.send_button.text() == "Send"
    # the new chat is in the list, titled from the message, and selected
    sid = desk.controller.current_session_id
    assert sid is not None and desk.window.sessions.current_session_id() == sid
    assert desk.window.sessions.session(sid).title == "Say hello"
    assert desk.window.title.text() == "Say hello"
    # the ring shows the provider's measurement of the request
    occ = desk.composer.ring.occupancy
    assert occ is not None and occ.basis == "measured"
    assert occ.total_used == desk.provider.requests[-1].prompt_tokens


def test_stop_mid_stream_keeps_what_arrived(desk: Desk, aio: Aio) -> None:
    desk.provider.queue(Reply(text=" ".join(f"word{i}" for i in range(500)),
                              tokens_per_second=60))

    async def scenario() -> None:
        type_and_send(desk, "Write a lot")
        await aio.until(lambda: len(desk.chat.model.stream_text()) > 30, what="some text")
        QTest.mouseClick(desk.composer.send_button, Qt.MouseButton.LeftButton)  # Stop
        await aio.until(lambda: not desk.controller.turns.is_running(), what="turn end")
        await desk.controller.tasks.idle()

    aio.run(scenario())
    last = desk.chat.model.rows[-1]
    assert last.kind == RowKind.ASSISTANT and last.interrupted
    assert last.text.startswith("word0 word1") and len(last.text) < len(
        " ".join(f"word{i}" for i in range(500)))
    view = desk.controller.current_view
    assert view is not None and view.path[-1].interrupted
    assert desk.services.store.call(lambda r: r.drafts()) == ()
    assert not desk.composer.running


def test_retry_then_switch_versions_sends_nothing(desk: Desk, aio: Aio) -> None:
    desk.provider.queue(Reply(text="first answer"), Reply(text="second answer"))

    async def scenario() -> None:
        type_and_send(desk, "A question")
        await aio.until(lambda: desk.requests() == 1 and not desk.controller.turns.is_running())
        await desk.controller.tasks.idle()
        QTest.keyClick(desk.window, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
        await aio.until(lambda: desk.requests() == 2 and not desk.controller.turns.is_running())
        await desk.controller.tasks.idle()

    aio.run(scenario())
    rows = desk.chat.model.rows
    assert rows[-1].text == "second answer" and rows[-1].version == (2, 2)
    answer = rows[-1].node.id
    sent = desk.requests()

    async def switch() -> None:
        desk.chat.versionRequested.emit(answer, 1)
        await aio.until(lambda: desk.chat.model.rows[-1].text == "first answer")
        assert desk.chat.model.rows[-1].version == (1, 2)
        QTest.keyClick(desk.window, Qt.Key.Key_Right, Qt.KeyboardModifier.AltModifier)
        await aio.until(lambda: desk.chat.model.rows[-1].text == "second answer")
        await desk.controller.tasks.idle()

    aio.run(switch())
    assert desk.chat.model.rows[-1].version == (2, 2)
    assert desk.requests() == sent  # switching versions never reached the provider
    assert desk.composer.ring.occupancy is not None


def test_edit_forks_the_message(desk: Desk, aio: Aio) -> None:
    desk.provider.queue(Reply(text="about cats"), Reply(text="about dogs"))

    async def scenario() -> None:
        type_and_send(desk, "Tell me about cats")
        await aio.until(lambda: desk.requests() == 1 and not desk.controller.turns.is_running())
        await desk.controller.tasks.idle()
        user = desk.chat.model.rows[0].node
        desk.chat.editRequested.emit(user.id, "Tell me about dogs")
        await aio.until(lambda: desk.requests() == 2 and not desk.controller.turns.is_running())
        await desk.controller.tasks.idle()

    aio.run(scenario())
    rows = desk.chat.model.rows
    assert [(r.kind, r.text) for r in rows] == [
        (RowKind.USER, "Tell me about dogs"), (RowKind.ASSISTANT, "about dogs")]
    assert rows[0].version == (2, 2)

    async def back() -> None:
        desk.chat.versionRequested.emit(rows[0].node.id, 1)
        await aio.until(lambda: desk.chat.model.rows[0].text == "Tell me about cats")
        await desk.controller.tasks.idle()

    aio.run(back())
    assert desk.chat.model.rows[-1].text == "about cats"
    assert desk.requests() == 2


def test_branch_into_a_new_session(desk: Desk, aio: Aio) -> None:
    desk.provider.queue(Reply(text="shared answer"))

    async def scenario() -> None:
        type_and_send(desk, "Start here")
        await aio.until(lambda: desk.requests() == 1 and not desk.controller.turns.is_running())
        await desk.controller.tasks.idle()
        original = desk.controller.current_session_id
        answer = desk.chat.model.rows[-1].node.id
        desk.chat.branchRequested.emit(answer)
        await aio.until(lambda: desk.controller.current_session_id not in (None, original))
        await desk.controller.tasks.idle()
        branch = desk.controller.current_session_id
        assert desk.window.sessions.current_session_id() == branch
        session = desk.window.sessions.session(branch)
        assert session is not None and session.forked_from == original
        assert session.title == "Start here (branch)"
        assert [r.text for r in desk.chat.model.rows] == ["Start here", "shared answer"]
        # the branch moves on by itself; the original does not change
        desk.provider.queue(Reply(text="only in the branch"))
        type_and_send(desk, "Go on")
        await aio.until(lambda: desk.requests() == 2 and not desk.controller.turns.is_running())
        await desk.controller.tasks.idle()
        original_view = await desk.services.chat.sessions.view(original)
        assert [n.text for n in original_view.path] == ["Start here", "shared answer"]

    aio.run(scenario())
    assert [r.text for r in desk.chat.model.rows][-1] == "only in the branch"


def test_overflow_is_explained_and_the_typed_text_survives(desk: Desk, aio: Aio) -> None:
    huge = "Please read all of this. " + "lorem ipsum dolor sit amet " * 300
    desk.provider.window = 400  # the provider reads less than the model facts promise

    async def scenario() -> None:
        type_and_send(desk, huge)
        await aio.until(desk.window.banner.isVisible, what="the error")
        await aio.until(lambda: not desk.controller.turns.is_running())
        await desk.controller.tasks.idle()

    aio.run(scenario())
    assert desk.requests() == 2  # the one retry with the history halved, then the error
    banner = desk.window.banner
    assert banner.kind() == "overflow"
    assert banner.title.text() == "Too long for this model"
    assert "longer than this model can read" in banner.message.text()
    assert banner.action_keys() == ["compact", "retry"]
    assert desk.composer.text() == huge  # nothing typed is lost
    # the message itself is in the graph too: sending again does not repeat it
    view = desk.controller.current_view
    assert view is not None and view.path[-1].role == "user"


def test_auth_error_offers_settings(desk: Desk, aio: Aio) -> None:
    desk.provider.fail_next(401)

    async def scenario() -> None:
        type_and_send(desk, "hello?")
        await aio.until(desk.window.banner.isVisible, what="the error")
        await desk.controller.tasks.idle()
        assert desk.window.banner.kind() == "auth"
        assert desk.window.banner.action_keys() == ["settings"]
        assert desk.composer.text() == "hello?"
        desk.window.banner.button("settings").click()
        await desk.controller.tasks.idle()

    aio.run(scenario())
    dialog = desk.controller.dialogs.settings_dialog
    assert dialog is not None and dialog.isVisible()
    assert not desk.window.banner.isVisible()
    dialog.reject()


def test_rate_limit_waits_then_retry_answers_the_same_message(desk: Desk, aio: Aio) -> None:
    desk.provider.fail_next(429, retry_after=2)
    desk.provider.queue(Reply(text="finally"))

    async def scenario() -> None:
        type_and_send(desk, "ping")
        await aio.until(desk.window.banner.isVisible, what="the error")
        button = desk.window.banner.button("retry")
        assert button is not None and not button.isEnabled()
        assert button.text().startswith("Retry in ")
        await aio.until(button.isEnabled, what="the wait to end", timeout=15)
        assert button.text() == "Retry"
        button.click()
        await aio.until(lambda: desk.requests() == 2 and not desk.controller.turns.is_running())
        await desk.controller.tasks.idle()

    aio.run(scenario())
    texts = [r.text for r in desk.chat.model.rows]
    assert texts == ["ping", "finally"]  # one message, answered once it could be


def test_closing_mid_reply_keeps_the_streamed_text(desk: Desk, aio: Aio) -> None:
    from treechat.app import _shutdown
    from treechat.store.database import Store, default_store_path

    desk.provider.queue(Reply(text=" ".join(f"part{i}" for i in range(400)),
                              tokens_per_second=50))

    async def scenario() -> str:
        type_and_send(desk, "A long answer please")
        await aio.until(lambda: len(desk.chat.model.stream_text()) > 20, what="some text")
        session_id = desk.controller.current_session_id
        assert session_id is not None
        await _shutdown(desk.controller, desk.services)  # what closing the window runs
        return session_id

    session_id = aio.run(scenario())
    store = Store.open(default_store_path(desk.data_dir))
    try:
        assert store.call(lambda r: r.drafts()) == ()
        session = store.call(lambda r: r.get_session(session_id))
        assert session is not None and session.head is not None
        reply = store.call(lambda r: r.get_node(session.head))
        assert reply is not None and reply.role == "assistant" and reply.interrupted
        assert reply.text.startswith("part0 part1")
    finally:
        store.close()


def test_unsent_text_survives_a_restart(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    from treechat.app import _shutdown

    first = desk_with(lambda store: chat_session(store, "c", "Chat", 100.0, ["hi", "hello"]))

    async def write_then_close() -> None:
        first.window.sessions.select("c")
        await first.controller.load_session("c")
        first.composer.set_text("half a thought, not sent")
        await _shutdown(first.controller, first.services)

    aio.run(write_then_close())
    first.window.close_now()
    second = desk_with(None)

    async def reopen() -> None:
        second.window.sessions.select("c")
        await second.controller.load_session("c")

    aio.run(reopen())
    assert second.composer.text() == "half a thought, not sent"


def test_the_message_box_has_the_keyboard_once_the_window_is_ready(desk: Desk) -> None:
    """A person who opens the app and types is typing a message, without a click first."""
    assert desk.window.focusWidget() is desk.composer.input
