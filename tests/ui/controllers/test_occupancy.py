"""/compact and the figures on screen, through the real services, DuckDB file and loopback
provider: /compact never makes the request bigger and says why when it does nothing; the
Context tab follows every new record at once; the ring shows the request a reply is being
written for while it is written, the figure the Context tab shows."""

from __future__ import annotations

import threading
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from tests.support.loopback_server import Reply

from treechat.store.database import Store
from treechat.ui.controllers.history import CONTEXT_TAB, HistoryPanels
from treechat.ui.occupancy import format as fmt

from ..conftest import Aio, Desk, Seed, chat_session

SHORT = ["A dragon?", "Yes, a small one.", "Its name?", "Ember.", "Its colour?", "Red.",
         "Where does it live?", "In a cave.", "Tell me more.", "It sleeps a lot."]
LONG = ("The history of the river valley is long and full of detail. " * 25).strip()


def panels(desk: Desk) -> HistoryPanels:
    found = desk.controller.history
    assert isinstance(found, HistoryPanels)
    return found


def short_chat(store: Store) -> None:
    chat_session(store, "dragon", "Dragon", 1_000.0, SHORT)


def middling_chat(store: Store) -> None:
    chat_session(store, "mid", "A middling conversation", 1_000.0,
                 [f"{i}: {LONG}" for i in range(4)])


def long_chat(store: Store) -> None:
    chat_session(store, "long", "A long conversation", 1_000.0,
                 [f"{i}: {LONG}" for i in range(16)])


async def open_with_context_tab(desk: Desk, aio: Aio, session_id: str) -> HistoryPanels:
    desk.window.dock.show()
    desk.window.dock_tabs.setCurrentIndex(CONTEXT_TAB)
    desk.window.sessions.select(session_id)
    await desk.controller.load_session(session_id)
    await desk.controller.tasks.idle()
    history = panels(desk)
    await aio.until(lambda: history.timeline.commit is not None, what="the Context tab")
    return history


def states(history: HistoryPanels) -> list[str]:
    commit = history.timeline.commit
    assert commit is not None
    return [item.state for item in commit.items]


def compact(desk: Desk) -> None:
    desk.composer.set_text("/compact")
    QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)


def test_compact_on_short_turns_changes_nothing_and_says_why(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(short_chat)

    async def scenario() -> None:
        history = await open_with_context_tab(desk, aio, "dragon")
        before = desk.composer.ring.occupancy
        assert before is not None
        compact(desk)
        status = desk.window.statusBar()
        await aio.until(lambda: "compact" in status.currentMessage(), what="/compact's reply")
        await desk.controller.tasks.idle()
        message = status.currentMessage()
        assert message.startswith("Nothing to compact yet"), message
        assert "too short to gain from a summary" in message
        after = desk.composer.ring.occupancy
        assert after is not None and after.total_used <= before.total_used
        assert set(states(history)) == {"full"}

    aio.run(scenario(), timeout=120)


def test_a_compact_that_changes_nothing_keeps_the_measured_request(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    """/context after a reply reads the provider's own count of it; a "Compact now" that
    finds nothing to fold leaves that record as it was (it said "no request measured on
    this exact branch yet" afterwards, though nothing had changed)."""
    desk = desk_with(short_chat)
    desk.provider.queue(Reply(text="Embers, mostly."))

    async def scenario() -> None:
        await open_with_context_tab(desk, aio, "dragon")
        desk.composer.set_text("What does it eat?")
        QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)
        await aio.until(lambda: desk.requests() == 1 and not desk.controller.turns.is_running(),
                        what="the reply")
        await desk.controller.tasks.idle()
        await desk.controller.occupancy.refresh()
        before = desk.composer.ring.occupancy
        assert before is not None and before.basis == "measured"
        compact(desk)
        status = desk.window.statusBar()
        await aio.until(lambda: "compact" in status.currentMessage(), what="/compact's reply")
        await desk.controller.tasks.idle()
        assert status.currentMessage().startswith("Nothing to compact yet")
        after = desk.composer.ring.occupancy
        assert after is not None and after.basis == "measured"
        assert after.total_used == before.total_used

    aio.run(scenario(), timeout=120)


def test_the_context_tab_shows_the_compacted_commit_without_a_tab_switch(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(long_chat)

    async def scenario() -> None:
        history = await open_with_context_tab(desk, aio, "long")
        assert "summary" not in states(history)
        compact(desk)
        await aio.until(lambda: "Compacted" in desk.window.statusBar().currentMessage(),
                        what="/compact's reply")
        await desk.controller.tasks.idle()
        # no tab switch: the tab is still the Context tab and already shows the summary
        assert desk.window.dock_tabs.currentIndex() == CONTEXT_TAB
        await aio.until(lambda: "summary" in states(history), what="the tab refreshed")
        occ = desk.composer.ring.occupancy
        assert occ is not None and fmt.headline(occ) in history.timeline.header.text()

    aio.run(scenario(), timeout=120)


def test_while_a_reply_is_written_the_ring_shows_its_request(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(middling_chat)
    release = threading.Event()
    desk.provider.queue(Reply(text="A short answer.", hold=release))

    async def scenario() -> None:
        history = await open_with_context_tab(desk, aio, "mid")
        ring = desk.composer.ring
        before = ring.occupancy
        assert before is not None
        desk.composer.set_text("And what came after? " + LONG)
        QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)
        await aio.until(lambda: desk.requests() == 1, what="the request sent")
        await aio.until(lambda: ring.occupancy is not None and ring.occupancy.head
                        not in (None, before.head), what="the ring on the new request")
        occ = ring.occupancy
        assert occ is not None and desk.controller.turns.is_running()
        # the request's size, not the old head's (nothing was compacted to get there)
        assert occ.total_used > before.total_used
        assert "summary" not in states(history)
        await aio.until(lambda: history.timeline.commit is not None
                        and history.timeline.commit.head_node_id == occ.head,
                        what="the Context tab on the request")
        await aio.until(lambda: fmt.headline(occ) in history.timeline.header.text(),
                        what="the same figure in the Context tab")
        release.set()
        await aio.until(lambda: not desk.controller.turns.is_running(), what="the reply")
        await desk.controller.tasks.idle()

    try:
        aio.run(scenario(), timeout=120)
    finally:
        release.set()


def test_what_the_box_holds_is_one_figure_in_ring_context_tab_and_dialog(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(middling_chat)

    async def scenario() -> None:
        history = await open_with_context_tab(desk, aio, "mid")
        ring = desk.composer.ring
        occ = ring.occupancy
        assert occ is not None
        desk.controller.command("context")
        await desk.controller.tasks.idle()
        dialog = desk.controller.occupancy.context_dialog
        assert dialog is not None
        plain = ring.label()
        desk.composer.set_text(LONG)
        typed = desk.services.engine.counter.count(LONG)
        await aio.until(lambda: ring.pending == typed, what="the draft counted")
        desk.controller.attachments.add_data(b"The key is under the mat.\n" * 40, "notes.txt")
        await aio.until(lambda: desk.controller.attachments.current()
                        and desk.controller.attachments.current()[0].tokens
                        and ring.pending > typed, what="the chip counted")
        chip = desk.controller.attachments.current()[0].tokens
        assert chip is not None and ring.pending == typed + chip
        expected = fmt.pending_text(occ, typed + chip)
        assert expected.startswith("With what you are typing and attaching: +")
        # one figure, the same words, in all three places
        assert expected in ring.toolTip()
        assert dialog.pending.text() == expected
        assert expected in history.timeline.header.text()
        # the ring's figure counts it; the request's own figure stays what /context heads
        assert ring.label() == fmt.percent((occ.total_used + typed + chip) / occ.window)
        assert ring.label() != plain
        assert dialog.headline.text() == fmt.headline(occ)
        desk.composer.set_text("")
        desk.controller.attachments.remove(desk.controller.attachments.current()[0].key)
        await aio.until(lambda: ring.pending == 0, what="the box emptied")
        assert ring.label() == plain and dialog.pending.text() == ""

    aio.run(scenario(), timeout=120)


def test_the_context_tab_counts_its_items_as_the_dialog_does(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(middling_chat)

    async def scenario() -> None:
        history = await open_with_context_tab(desk, aio, "mid")
        desk.controller.command("context")
        await desk.controller.tasks.idle()
        dialog = desk.controller.occupancy.context_dialog
        assert dialog is not None
        rows = {r[0]: int(r[1].replace(",", "")) for r in dialog.table_rows()}
        items = rows["Messages"] + rows["Summaries"] + rows["Tool calls and results"]
        await aio.until(lambda: f"({items:,} of it in messages" in history.timeline.header.text(),
                        what="the tab's items figure")

    aio.run(scenario(), timeout=120)


def test_a_chips_cost_is_the_dialogs_attachments_figure_after_sending(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(middling_chat)
    desk.provider.queue(Reply(text="The key is under the mat."))

    async def scenario() -> int:
        await open_with_context_tab(desk, aio, "mid")
        files = desk.controller.attachments
        files.add_data(b"The key is under the mat.\n" * 3, "notes.txt")
        await aio.until(lambda: files.current() and files.current()[0].tokens,
                        what="the chip's cost")
        cost = files.current()[0].tokens
        assert cost is not None
        desk.composer.set_text("Where is the key?")
        QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)
        await aio.until(lambda: desk.requests() == 1 and not desk.controller.turns.is_running(),
                        what="the reply")
        await desk.controller.tasks.idle()
        desk.controller.command("context")
        await desk.controller.tasks.idle()
        return cost

    cost = aio.run(scenario(), timeout=120)
    dialog = desk.controller.occupancy.context_dialog
    assert dialog is not None
    occ = dialog.occupancy
    assert occ is not None and occ.basis == "measured"
    rows = {r[0]: int(r[1].replace(",", "")) for r in dialog.table_rows()}
    assert rows["Attachments"] == cost


def test_a_new_chat_counts_its_chips_against_the_chosen_models_window(
    desk: Desk, aio: Aio
) -> None:
    async def scenario() -> None:
        desk.controller.new_chat()
        ring = desk.composer.ring
        assert ring.occupancy is None and ring.label() == "–"
        files = desk.controller.attachments
        files.add_data(b"The key is under the mat.\n" * 40, "notes.txt")
        await aio.until(lambda: files.current() and files.current()[0].tokens
                        and ring.pending > 0, what="the chip counted")
        chip = files.current()[0].tokens
        assert chip is not None and ring.pending == chip
        window = (await desk.services.chat.model_endpoint(desk.composer.current_model())).window
        assert ring.label() == fmt.percent(chip / window)
        assert fmt.new_chat_pending_text(chip, window) in ring.toolTip()

    aio.run(scenario(), timeout=120)


def test_ctrl_n_leaves_no_trace_of_the_previous_chat_in_the_inspector(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(short_chat)

    async def scenario() -> None:
        history = await open_with_context_tab(desk, aio, "dragon")
        history.refresh_timeline()  # a read of the chat still on its way…
        desk.window.new_chat_action.trigger()  # …when Ctrl+N opens a new chat
        await desk.controller.tasks.idle()
        await aio.settle(0.2)
        assert desk.controller.current_view is None
        assert history.timeline.commit is None
        assert history.timeline.model.rowCount() == 0
        assert history.timeline.header.text() == "No context yet: send a message."
        assert history.graph.view.graph_scene.nodes == {}

    aio.run(scenario())


def test_switching_branch_while_a_reply_streams_keeps_the_ring_on_the_branch_shown(
    desk: Desk, aio: Aio
) -> None:
    """The reply being written finishes on the other branch: the ring and /context read the
    branch on screen, its own measured request, never the other branch's."""
    release = threading.Event()

    async def scenario() -> None:
        desk.provider.queue(Reply(text="The first answer."))
        desk.composer.set_text("A first question")
        QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)
        await aio.until(lambda: desk.requests() == 1 and not desk.controller.turns.is_running(),
                        what="the first reply")
        await desk.controller.tasks.idle()
        view = desk.controller.current_view
        assert view is not None
        first_head = view.head
        first_prompt = desk.provider.requests[0].prompt_tokens
        desk.provider.queue(Reply(text="A second answer, written on the other branch.",
                                  hold=release))
        desk.composer.set_text("A second question, much longer than the first one: " + LONG)
        QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)
        await aio.until(lambda: desk.requests() == 2, what="the second request")
        assert first_head is not None
        desk.controller.history.checkout(first_head)  # back to the first answer meanwhile
        await aio.until(lambda: desk.controller.current_view is not None
                        and desk.controller.current_view.head == first_head, what="checkout")
        release.set()
        await aio.until(lambda: not desk.controller.turns.is_running(), what="the reply")
        await desk.controller.tasks.idle()
        await aio.settle(0.3)
        await desk.controller.tasks.idle()
        occ = desk.composer.ring.occupancy
        assert occ is not None and occ.head == first_head
        assert occ.basis == "measured" and occ.total_used == first_prompt
        desk.controller.occupancy.open_dialog()
        dialog = desk.controller.occupancy.context_dialog
        assert dialog is not None and fmt.headline(occ) in dialog.headline.text()

    try:
        aio.run(scenario(), timeout=120)
    finally:
        release.set()
