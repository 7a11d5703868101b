"""A new user's first hour, scripted: each test walks what a person did on screen, through the
real services on a DuckDB file and the loopback provider, and checks what they would see."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QEnterEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QLabel, QWidget
from tests.support.loopback_server import Reply

from treechat.core.model import Session
from treechat.store.database import Store
from treechat.ui.controllers.history import CONTEXT_TAB
from treechat.ui.sessions.roles import SESSION_ID_ROLE

from .conftest import Aio, Desk, Seed, chat_session

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def shoot(desk: Desk, name: str) -> None:
    """With TREECHAT_SCREENSHOTS=1 (run on a real display), save the window as
    docs/screenshots/first-hour-<name>.png."""
    if os.environ.get("TREECHAT_SCREENSHOTS") == "1":
        desk.window.grab().save(str(SHOTS / f"first-hour-{name}.png"))


def type_and_send(desk: Desk, text: str) -> None:
    desk.composer.input.setFocus()
    desk.composer.set_text(text)
    QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)


def open_context_tab(desk: Desk) -> None:
    desk.window.dock.show()
    desk.window.dock_tabs.setCurrentIndex(CONTEXT_TAB)


async def turn_done(desk: Desk, aio: Aio, requests: int) -> None:
    await aio.until(lambda: desk.requests() >= requests
                    and not desk.controller.turns.is_running(), what="turn end")
    await desk.controller.tasks.idle()


def no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert failures == [], [r.getMessage() for r in failures]


def test_sending_with_the_context_tab_open_shows_no_error(
    desk: Desk, aio: Aio, caplog: pytest.LogCaptureFixture
) -> None:
    """The Context tab follows the chat while a message is on screen before the store has it:
    the reply arrives and nothing claims it failed."""
    caplog.set_level(logging.INFO)
    open_context_tab(desk)
    desk.provider.queue(Reply(text="first"), Reply(text="second", tokens_per_second=40))

    async def scenario() -> None:
        type_and_send(desk, "Hello there")
        await turn_done(desk, aio, 1)
        type_and_send(desk, "And again")
        await turn_done(desk, aio, 2)

    aio.run(scenario())
    shoot(desk, "context-tab-send")
    assert desk.window.banner.isHidden(), desk.window.banner.message.text()
    assert desk.chat.model.rows[-1].text == "second"
    no_traceback(caplog)
    # the tab shows the stored head's commit, not nothing
    assert desk.controller.history.timeline.commit is not None


def test_a_message_too_big_for_the_window_is_cut_only_when_asked(
    desk: Desk, aio: Aio, caplog: pytest.LogCaptureFixture
) -> None:
    """A paste larger than the model's window: nothing is sent until the user chooses; cut to
    fit, what is stored and sent is the cut text, and the ring, the /context dialog and the
    Context tab give the same figure for it."""
    caplog.set_level(logging.INFO)
    open_context_tab(desk)
    paste = " ".join(f"line{i} of the log file" for i in range(40_000))
    desk.provider.queue(Reply(text="fine"), Reply(text="read it"))

    async def scenario() -> None:
        type_and_send(desk, "hello")
        await turn_done(desk, aio, 1)
        type_and_send(desk, paste)
        await aio.until(lambda: not desk.window.banner.isHidden(), what="the choice")
        shoot(desk, "too-long-choice")
        assert desk.window.banner.action_keys() == ["cut_to_fit", "send_as_file", "cancel"]
        assert desk.requests() == 1  # nothing sent yet
        assert desk.composer.text() == paste  # and nothing lost
        # cancel keeps it in the composer, unsent
        QTest.mouseClick(desk.window.banner.button("cancel"), Qt.MouseButton.LeftButton)
        await aio.settle()
        assert desk.composer.text() == paste and desk.requests() == 1
        QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)
        await aio.until(lambda: not desk.window.banner.isHidden(), what="the choice again")
        QTest.mouseClick(desk.window.banner.button("cut_to_fit"), Qt.MouseButton.LeftButton)
        await turn_done(desk, aio, 2)
        await aio.until(lambda: desk.controller.history.timeline.total_text() != "",
                        what="the tab's total")

    aio.run(scenario())
    shoot(desk, "too-long-cut")
    assert desk.composer.text() == ""
    view = desk.controller.current_view
    assert view is not None
    sent = [n for n in view.path if n.role == "user"][-1].text
    assert "characters omitted" in sent and sent.startswith("line0 of the log file")
    assert len(sent) < len(paste)
    request = desk.provider.requests[-1]
    users = [m["content"] for m in request.body["messages"] if m["role"] == "user"]
    assert sent in str(users[-1]).replace("\\n", "\n")  # what was sent is what is stored
    ring = desk.composer.ring.occupancy
    assert ring is not None and ring.total_used <= ring.window
    desk.controller.occupancy.open_dialog()
    dialog = desk.controller.occupancy.context_dialog
    assert dialog is not None and dialog.occupancy is ring
    from treechat.ui.occupancy.format import headline
    assert desk.controller.history.timeline.total_text() == headline(ring)
    assert headline(ring) in desk.controller.history.timeline.header.text()
    dialog.close()
    no_traceback(caplog)


LONG = ("The history of the river valley is long and full of detail. " * 25).strip()


def short_and_long(store: Store) -> None:
    chat_session(store, "short", "A short chat", 900.0, ["hi", "hello"])
    chat_session(store, "long", "A long conversation", 1_000.0,
                 [f"{i}: {LONG}" for i in range(16)])


def test_compact_says_what_it_did(
    desk_with: Callable[[Seed | None], Desk], aio: Aio, caplog: pytest.LogCaptureFixture
) -> None:
    """/compact reports the items it folded, or that there is nothing to compact and why; never
    a drop in tokens that came from counting differently."""
    caplog.set_level(logging.INFO)
    desk = desk_with(short_and_long)
    status = desk.window.statusBar()

    async def compact(session_id: str) -> str:
        desk.window.sessions.select(session_id)
        await desk.controller.load_session(session_id)
        await desk.controller.tasks.idle()
        status.clearMessage()
        desk.composer.set_text("/compact")
        QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)
        await aio.until(lambda: status.currentMessage() != "", what="the report")
        await desk.controller.tasks.idle()
        return status.currentMessage()

    short = aio.run(compact("short"))
    assert short.startswith("Nothing to compact yet"), short
    assert "always sent in full" in short
    long = aio.run(compact("long"))
    shoot(desk, "compact-report")
    assert long.startswith("Compacted: "), long
    folded = int(long.split()[1])
    assert folded > 0 and "folded into 1 summary" in long
    view = desk.controller.current_view
    assert view is not None and view.head is not None
    commit = aio.run(desk.services.engine.commit_for("long", view.head,
                                                     now=desk.services.clock.now()))
    assert sum(1 for item in commit.items if item.state == "summarized") == folded
    again = aio.run(compact("long"))
    assert again.startswith("Nothing more to compact yet"), again
    no_traceback(caplog)


TITLE = ("A very long title that goes on and on about the migration plan for the storage layer "
         "and everything it touches, from the schema to the import of old exports")


def long_title(store: Store) -> None:
    chat_session(store, "titled", TITLE, 1_000.0, ["Where do we start?", "With the schema."])


def test_the_window_fits_a_laptop_with_the_dock_open(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    """At 1280×720 with the dock open every control is on screen; opening the dock, adding an
    attach chip and opening a chat with a long title never widen the window."""
    desk = desk_with(long_title)
    window = desk.window
    window.resize(1280, 720)
    window.dock.show()

    async def scenario() -> None:
        await aio.settle(0.2)
        width = window.width()
        assert width == 1280
        desk.window.sessions.select("titled")
        await desk.controller.load_session("titled")
        await desk.controller.tasks.idle()
        view = desk.controller.current_view
        assert view is not None
        desk.controller.history.stage("titled", view.path[0].id)
        await desk.controller.tasks.idle()
        await aio.settle(0.2)
        assert window.minimumSizeHint().width() <= 1280, window.minimumSizeHint()
        assert window.minimumWidth() <= 1280
        assert window.width() == width

    aio.run(scenario())
    shoot(desk, "laptop-1280")
    assert window.title.width() <= window.title.parentWidget().width()
    # the long title is elided, not cut: its whole text is in the tooltip
    assert window.title.toolTip() == TITLE or TITLE in window.title.toolTip()
    for button in (desk.composer.send_button, desk.composer.ring):
        assert button.isVisible()
        right = button.mapTo(window, button.rect().bottomRight())
        assert right.x() <= window.width() and right.y() <= window.height()


def test_inline_edit_sends_with_enter_and_esc_stops_the_reply_wherever_focus_is(
    desk: Desk, aio: Aio, caplog: pytest.LogCaptureFixture
) -> None:
    """Enter in an edit sends it, Shift+Enter is a new line; after sending, Esc stops the
    reply though focus is not in the composer."""
    caplog.set_level(logging.INFO)
    desk.provider.queue(Reply(text="about cats"),
                        Reply(text=" ".join(f"dog{i}" for i in range(600)), tokens_per_second=60))

    async def scenario() -> None:
        type_and_send(desk, "Tell me about cats")
        await turn_done(desk, aio, 1)
        user = desk.chat.model.rows[0]
        editor = desk.chat.start_edit(user.key)
        assert editor is not None
        editor.set_text("Tell me about dogs")
        QTest.keyClick(editor.text_edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
        assert editor.text() == "Tell me about dogs\n" and desk.requests() == 1
        shoot(desk, "inline-edit")
        QTest.keyClick(editor.text_edit, Qt.Key.Key_Return)  # sends
        await aio.until(lambda: len(desk.chat.model.stream_text()) > 20, what="streaming")
        desk.window.sessions.view.setFocus()
        assert not desk.composer.input.hasFocus()
        QTest.keyClick(desk.window.sessions.view, Qt.Key.Key_Escape)
        await aio.until(lambda: not desk.controller.turns.is_running(), what="stopped")
        await desk.controller.tasks.idle()

    aio.run(scenario())
    rows = desk.chat.model.rows
    assert rows[0].text == "Tell me about dogs" and rows[0].version == (2, 2)
    assert rows[-1].interrupted and rows[-1].text.startswith("dog0")
    assert desk.requests() == 2
    no_traceback(caplog)


def test_switching_branch_while_a_reply_streams_keeps_the_text_on_its_own_branch(
    desk: Desk, aio: Aio, caplog: pytest.LogCaptureFixture
) -> None:
    """Checking out the other version of a message while the reply streams shows that branch
    only; Stop does not move the view; going back shows the stopped reply where it belongs."""
    caplog.set_level(logging.INFO)
    long_reply = " ".join(f"dog{i}" for i in range(800))
    desk.provider.queue(Reply(text="about cats"), Reply(text=long_reply, tokens_per_second=40))

    async def scenario() -> None:
        type_and_send(desk, "Tell me about cats")
        await turn_done(desk, aio, 1)
        cats = desk.chat.model.rows[-1].node
        assert cats is not None
        desk.chat.editRequested.emit(desk.chat.model.rows[0].node.id, "Tell me about dogs")
        await aio.until(lambda: len(desk.chat.model.stream_text()) > 20, what="streaming")
        # the user goes back to the first branch while the dogs reply streams
        desk.controller.history.checkout(cats.id)
        await aio.until(lambda: desk.chat.model.rows[0].text == "Tell me about cats",
                        what="the other branch")
        await aio.settle(0.3)
        texts = [r.text for r in desk.chat.model.rows]
        assert texts == ["Tell me about cats", "about cats"], texts
        QTest.mouseClick(desk.composer.send_button, Qt.MouseButton.LeftButton)  # Stop
        await aio.until(lambda: not desk.controller.turns.is_running(), what="stopped")
        await desk.controller.tasks.idle()
        shoot(desk, "switch-while-streaming")
        texts = [r.text for r in desk.chat.model.rows]
        assert texts == ["Tell me about cats", "about cats"], texts

    aio.run(scenario())
    no_traceback(caplog)


def two_chats(store: Store) -> None:
    chat_session(store, "one", "Chat one", 1_000.0, ["first question", "first answer"])
    chat_session(store, "two", "Chat two", 900.0, ["second question", "second answer"])


def test_pressing_on_a_chat_to_drag_it_does_not_open_it(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    """The press that starts dragging a chat onto the message box leaves the open chat open
    (so the dragged one attaches to it); a click still opens the chat clicked."""
    desk = desk_with(two_chats)
    listing = desk.window.sessions

    async def scenario() -> None:
        listing.select("one")
        await desk.controller.load_session("one")
        await desk.controller.tasks.idle()
        model = listing.view.model()
        row = next(r for r in range(model.rowCount())
                   if model.index(r, 0).data(SESSION_ID_ROLE) == "two")
        point = listing.view.visualRect(model.index(row, 0)).center()
        viewport = listing.view.viewport()
        QTest.mousePress(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                         point)
        await aio.settle(0.2)
        await desk.controller.tasks.idle()
        assert desk.controller.current_session_id == "one"
        assert listing.current_session_id() == "one"
        QTest.mouseRelease(viewport, Qt.MouseButton.LeftButton,
                           Qt.KeyboardModifier.NoModifier, point)
        await aio.until(lambda: desk.controller.current_session_id == "two", what="click")
        await desk.controller.tasks.idle()

    aio.run(scenario())


def test_one_name_per_model_in_the_picker_the_chat_header_and_the_reply(
    desk: Desk, aio: Aio
) -> None:
    desk.provider.queue(Reply(text="hi", tokens_per_second=30))
    names: list[str] = []

    async def scenario() -> None:
        type_and_send(desk, "Hello")
        await aio.until(lambda: desk.chat.model.streaming, what="streaming")
        names.append(desk.chat.model.rows[-1].label)
        await turn_done(desk, aio, 1)

    aio.run(scenario())
    shoot(desk, "one-name")
    picker = desk.composer.picker.currentText()
    reply = desk.chat.model.rows[-1].label
    assert names == [picker] and reply == picker, (names, reply, picker)
    assert desk.window.subtitle.text().startswith(picker), desk.window.subtitle.text()


def test_the_chat_list_does_not_reorder_under_the_pointer(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    """A reply finishing in another chat moves it to the top only once the pointer has left
    the list, so a click lands on the chat it was aimed at."""
    desk = desk_with(two_chats)
    listing = desk.window.sessions
    view = listing.view

    def order() -> list[str]:
        model = view.model()
        ids = (model.index(r, 0).data(SESSION_ID_ROLE) for r in range(model.rowCount()))
        return [str(i) for i in ids if i]

    assert order() == ["one", "two"]
    point = QPointF(10, 10)
    QApplication.sendEvent(view, QEnterEvent(point, point, point))
    two = desk.services.store.call(lambda r: r.get_session("two"))
    assert two is not None
    listing.upsert(replace(two, updated_at=5_000.0), now=5_000.0)
    assert order() == ["one", "two"]  # held while the pointer is over it
    QApplication.sendEvent(view, QEvent(QEvent.Type.Leave))
    assert order() == ["two", "one"]


def test_help_lists_shortcuts_says_where_data_lives_and_copies_a_scrubbed_report(
    desk: Desk, aio: Aio, qapp: QApplication
) -> None:
    from treechat.providers.keys import remember_secret

    window = desk.window
    actions = [a.text() for a in window.menuBar().actions()]
    assert "&Help" in actions
    dialog = desk.controller.dialogs.open_shortcuts(window.shortcut_list())
    rows = dialog.visible_rows()
    assert ("Ctrl+N", "New chat") in rows and any(k.startswith("Ctrl+.") for k, _ in rows)
    assert len(rows) >= 12
    dialog.search.setText("version")
    found = dialog.visible_rows()
    assert found and all("version" in (k + w).lower() for k, w in found)
    shoot_widget(dialog, "help-shortcuts")
    dialog.close()

    about = desk.controller.dialogs.open_about()
    text = " ".join(label.text() for label in about.findChildren(QLabel))
    assert str(desk.data_dir) in text and str(desk.data_dir / "logs") in text
    assert set(about.open_buttons) == {"data", "logs"}
    shoot_widget(about, "help-about")
    about.close()

    key = "sk-test-" + "x7" * 20
    remember_secret(key)
    logs = desk.data_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (logs / "treechat.log").write_text(f"line one\nthe key was {key}\nlast line\n",
                                       encoding="utf-8")
    qapp.clipboard().clear()

    async def report() -> None:
        window.report_action.trigger()
        await aio.until(lambda: "last line" in qapp.clipboard().text(), what="the report")

    aio.run(report())
    copied = qapp.clipboard().text()
    assert copied.startswith("Treechat ") and "Platform: " in copied
    assert key not in copied and "the key was" in copied


def shoot_widget(widget: QWidget, name: str) -> None:
    if os.environ.get("TREECHAT_SCREENSHOTS") == "1":
        widget.grab().save(str(SHOTS / f"first-hour-{name}.png"))


def bundled_chats(store: Store) -> None:
    from treechat.services.models.catalog import BUNDLED_ID

    for sid, when in (("b1", 1_000.0), ("b2", 900.0)):
        store.call(lambda r, sid=sid, when=when: r.create_session(
            Session(sid, f"On the bundled model {sid}", None, BUNDLED_ID, when,
                    updated_at=when)))


def test_the_first_reply_from_the_bundled_model_says_once_what_it_is(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(bundled_chats)
    banner = desk.window.banner

    async def scenario() -> None:
        desk.window.sessions.select("b1")
        await desk.controller.load_session("b1")
        await desk.controller.tasks.idle()
        assert banner.isHidden()
        desk.controller.turnFinished.emit("b1")
        assert not banner.isHidden()
        assert banner.title.text() == "This is a tiny offline model for trying Treechat"
        assert "Settings" in banner.message.text() and banner.action_keys() == ["settings"]
        shoot(desk, "bundled-note")
        banner.dismiss()
        desk.window.sessions.select("b2")
        await desk.controller.load_session("b2")
        desk.controller.turnFinished.emit("b2")
        assert banner.isHidden()  # once

    aio.run(scenario())
    assert desk.prefs.value("notes/bundled_model_shown", False, type=bool)


FIXTURES = Path(__file__).resolve().parents[1] / "data" / "imports"


def numbers_agree(desk: Desk) -> None:
    """The ring, the /context dialog and the Context tab give one figure for the head."""
    from treechat.ui.occupancy.format import headline

    occ = desk.composer.ring.occupancy
    dialog = desk.controller.occupancy.context_dialog
    assert occ is not None
    if dialog is not None:
        assert dialog.occupancy is occ and dialog.headline.text() == headline(occ)
    tab = desk.controller.history.timeline
    view = desk.controller.current_view
    if view is not None and tab.commit is not None and tab.commit.head_node_id == occ.head:
        assert tab.total_text() == headline(occ), (tab.total_text(), headline(occ))


def no_error_banner(desk: Desk) -> None:
    banner = desk.window.banner
    assert banner.isHidden() or banner.property("level") != "error", banner.message.text()


def test_the_first_hour_scripted(
    desk_with: Callable[[Seed | None], Desk], aio: Aio, caplog: pytest.LogCaptureFixture
) -> None:
    """Send, stop, retry, versions, edit, branch, graph checkout, attach from the graph and
    from the list, merge, /context, /compact, a too-long message, settings and import, all
    with the Context tab open: no error banner, no traceback, one figure for the head."""
    caplog.set_level(logging.INFO)
    desk = desk_with(two_chats)
    open_context_tab(desk)
    c = desk.controller
    replies = ["first answer", " ".join(f"w{i}" for i in range(600)), "retried answer",
               "edited answer", "attached answer", "merged answer", "cut answer"]
    desk.provider.queue(*(Reply(text=t, tokens_per_second=80) for t in replies))

    async def settle() -> None:
        await aio.until(lambda: not c.turns.is_running(), what="turn end")
        await c.tasks.idle()
        await aio.settle(0.1)
        await c.tasks.idle()
        no_error_banner(desk)
        numbers_agree(desk)

    async def walk() -> None:
        # send
        c.new_chat()
        type_and_send(desk, "What is a tree?")
        await aio.until(lambda: desk.requests() == 1, what="first request")
        await settle()
        # send and stop
        type_and_send(desk, "Tell me more")
        await aio.until(lambda: len(desk.chat.model.stream_text()) > 20, what="streaming")
        QTest.keyClick(desk.window.sessions.view, Qt.Key.Key_Escape)
        await settle()
        assert desk.chat.model.rows[-1].interrupted
        # retry, then versions
        c.turns.retry()
        await aio.until(lambda: desk.requests() == 3, what="retry")
        await settle()
        last = desk.chat.model.rows[-1]
        assert last.text == "retried answer" and last.version == (2, 2)
        QTest.keyClick(desk.window, Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier)
        await aio.until(lambda: desk.chat.model.rows[-1].version == (1, 2), what="version 1")
        await settle()
        QTest.keyClick(desk.window, Qt.Key.Key_Right, Qt.KeyboardModifier.AltModifier)
        await aio.until(lambda: desk.chat.model.rows[-1].version == (2, 2), what="version 2")
        await settle()
        # edit the first message with Enter
        editor = desk.chat.start_edit(desk.chat.model.rows[0].key)
        assert editor is not None
        editor.set_text("What is a graph?")
        QTest.keyClick(editor.text_edit, Qt.Key.Key_Return)
        await aio.until(lambda: desk.requests() == 4, what="edit")
        await settle()
        view = c.current_view
        assert view is not None
        edited_head = view.head
        # graph checkout of the first branch (nothing sent)
        first = next(n for n in view.graph if n.role == "assistant"
                     and n.text == "first answer")
        c.history.checkout(first.id)
        await aio.until(lambda: desk.chat.model.rows[-1].text == "first answer",
                        what="checkout")
        await settle()
        assert desk.requests() == 4
        # attach from the graph (the edited branch's head) and from the list (chat two)
        assert edited_head is not None
        c.history.stage(c.current_session_id or "", edited_head)
        c.history.stage("two", None)
        await c.tasks.idle()
        await aio.until(lambda: len(c.history.chips.findChildren(QWidget)) > 0, what="chips")
        type_and_send(desk, "Compare them")
        await aio.until(lambda: desk.requests() == 5, what="attached send")
        await settle()
        body = str(desk.provider.requests[-1].body)
        assert "second answer" in body  # chat two's context reached the model
        # merge the two branch heads
        view = c.current_view
        assert view is not None and view.head is not None and edited_head is not None
        c.history.merge(view.head, [view.head, edited_head], "Combine both")
        await aio.until(lambda: desk.requests() == 6, what="merge")
        await settle()
        # /context and /compact
        desk.composer.set_text("/context")
        QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)
        await aio.until(lambda: c.occupancy.context_dialog is not None, what="/context")
        await settle()
        desk.window.statusBar().clearMessage()
        desk.composer.set_text("/compact")
        QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)
        await aio.until(lambda: desk.window.statusBar().currentMessage() != "",
                        what="/compact")
        await settle()
        report = desk.window.statusBar().currentMessage()
        assert report.startswith(("Compacted: ", "Nothing to compact yet",
                                  "Nothing more to compact yet")), report
        # a message too long for the window: cut to fit
        type_and_send(desk, " ".join(f"row{i} of the table" for i in range(20_000)))
        await aio.until(lambda: desk.window.banner.button("cut_to_fit") is not None
                        and not desk.window.banner.isHidden(), what="the choice")
        QTest.mouseClick(desk.window.banner.button("cut_to_fit"), Qt.MouseButton.LeftButton)
        await aio.until(lambda: desk.requests() == 7, what="cut send")
        await settle()
        ring = desk.composer.ring.occupancy
        assert ring is not None and ring.total_used <= ring.window
        # settings, opened and closed
        c.dialogs.open_settings()
        dialog = c.dialogs.settings_dialog
        assert dialog is not None and dialog.isVisible()
        dialog.reject()
        await settle()
        # import an export
        c.dialogs.open_import_dialog(str(FIXTURES / "librechat-tree.json"))
        importer = c.dialogs.import_dialog
        assert importer is not None
        await aio.until(lambda: importer.summary is not None, what="the import")
        importer.close()
        await settle()

    aio.run(walk(), timeout=240)
    shoot(desk, "scripted-walk")
    no_traceback(caplog)
    assert desk.window.sessions.model.session_count() >= 4


def test_the_delete_banner_names_the_chat(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(two_chats)

    async def scenario() -> None:
        desk.controller.session_list.delete("two")
        await aio.until(lambda: not desk.window.banner.isHidden(), what="the banner")

    aio.run(scenario())
    assert "“Chat two”" in desk.window.banner.message.text()


@pytest.mark.parametrize("mode", ["light", "dark"])
def test_settings_controls_draw_their_current_item(desk: Desk, aio: Aio, mode: str) -> None:
    """The current item of each combo box is drawn in the text colour (it was the base colour
    in light) and spin boxes keep their arrows."""
    from PySide6.QtGui import QColor
    from PySide6.QtWidgets import QAbstractSpinBox

    desk.theme.set_mode(mode)
    desk.theme.apply()
    desk.controller.dialogs.open_settings()
    dialog = desk.controller.dialogs.settings_dialog
    assert dialog is not None
    from PySide6.QtWidgets import QTabWidget

    tabs = dialog.findChild(QTabWidget)
    if tabs is not None:
        tabs.setCurrentIndex(next(i for i in range(tabs.count()) if tabs.tabText(i) == "General"))
    aio.run(aio.settle(0.2))
    shoot_widget(dialog, f"settings-{mode}")
    text = QColor(desk.theme.colors.text)
    for combo in (dialog.default_model, dialog.theme):
        assert combo.currentText()
        image = combo.grab().toImage()
        inked = sum(
            1 for x in range(0, image.width(), 2) for y in range(0, image.height(), 2)
            if abs(image.pixelColor(x, y).lightness() - text.lightness()) < 40
        )
        assert inked > 10, (combo.objectName(), mode, inked)
    for spin in (dialog.summarize_at, dialog.emergency_at):
        assert spin.buttonSymbols() != QAbstractSpinBox.ButtonSymbols.NoButtons
        assert "QSpinBox" not in desk.window.styleSheet() + QApplication.instance().styleSheet()
    dialog.reject()


def test_the_dialog_never_says_sent_in_full_when_something_was_cut() -> None:
    from treechat.ui.occupancy.format import CompactionState

    whole = CompactionState.from_states(["full", "full"])
    assert whole.describe().startswith("Not compacted: every message is sent in full")
    cut = replace(whole, cut=1)
    assert "sent in full" not in cut.describe()
    assert cut.describe().startswith("1 long item cut to the per-item cap")
