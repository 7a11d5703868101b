"""A reply's menu: its Thinking shown apart from the answer, and Continue on a reply cut
short, joined to it."""

from __future__ import annotations

from tests.support.loopback_server import Reply

from treechat.core.reply import continuation_of, reasoning_of
from treechat.ui.chat.model import THINKING_KEY

from ..conftest import Aio, Desk
from .controls_desk import controls, send, shoot, turn_done


def test_thinking_is_shown_apart_and_a_cut_reply_continues_joined(desk: Desk, aio: Aio) -> None:
    c = controls(desk)
    desk.provider.queue(
        Reply(text="The first half", reasoning="Let me think it through.", finish="length"),
        Reply(text=" and the rest."),
    )

    said: list[str] = []
    desk.window.statusBar().messageChanged.connect(said.append)

    async def scenario() -> None:
        send(desk, "Tell me")
        await turn_done(desk, aio, 1)
        assert "Thinking…" in said  # while the reasoning streamed

    aio.run(scenario())
    partial = desk.chat.model.rows[-1].node
    assert partial is not None
    assert reasoning_of(partial) == "Let me think it through."
    assert "Let me think" not in partial.output
    rows = desk.chat.model.rows
    thinking = rows[-2]
    assert thinking.key == THINKING_KEY + partial.id and thinking.label == "Thinking"
    assert thinking.text == "Let me think it through." and not thinking.expanded
    assert thinking.starts_turn and not rows[-1].starts_turn  # one reply: Thinking, answer
    desk.chat.trigger(thinking.key, "toggle")
    assert desk.chat.model.rows[-2].expanded
    assert c.continue_action.isEnabled()
    menu = desk.chat.context_menu(partial.id)
    labels = [a.text() for a in menu.actions()]
    assert "Show thinking…" in labels and "Continue this reply" in labels
    next(a for a in menu.actions() if a.text() == "Show thinking…").trigger()
    assert c.replies.dialog is not None and c.replies.dialog.objectName() == "ThinkingDialog"
    shoot(desk, "thinking", c.replies.dialog)
    c.replies.dialog.close()
    next(a for a in menu.actions() if a.text() == "Continue this reply").trigger()
    aio.run(turn_done(desk, aio, 2))
    view = desk.controller.current_view
    assert view is not None
    last = view.path[-1]
    assert continuation_of(last) == partial.id
    assert view.path[-2].id == partial.id  # appended after the partial reply
    assert not c.continue_action.isEnabled()
    # drawn joined: the continuation carries on the reply, no header of its own
    joined = desk.chat.model.rows[-1]
    assert joined.key == last.id and not joined.starts_turn
    shoot(desk, "continued")
