"""The ring of a chat with no message yet, on the real window and services: its few percent
are the system prompt and the tool definitions every request carries, the tooltip says so
with the same figures the /context dialog lists, and a new chat (nothing to send yet) shows
no figure at all rather than the last chat's."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.loopback_server import Reply

from treechat.ui.occupancy.format import tokens

from ..conftest import Aio, Desk

SHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"


def test_an_empty_chat_says_its_figure_is_the_system_prompt_and_tools(
    desk: Desk, aio: Aio
) -> None:
    c = desk.controller
    ring = desk.composer.ring

    async def scenario() -> None:
        session = await desk.services.chat.sessions.create()
        c.parts.sessions.upsert(session, c.clock.now())
        c.parts.sessions.select(session.id)
        await c.load_session(session.id)
        await c.tasks.idle()
        occ = ring.occupancy
        assert occ is not None
        parts = dict(occ.breakdown)
        carried = occ.total_used
        system, tool_specs = parts["system"], parts["tools"]
        assert system > 0 and tool_specs > 0
        assert ring.label() != "–"
        tip = ring.toolTip()
        assert (f"System prompt {tokens(system)} · tool definitions {tokens(tool_specs)}, "
                "sent with every request") in tip
        assert tokens(occ.total_used) in tip

        c.occupancy.open_dialog()
        dialog = c.occupancy.context_dialog
        assert dialog is not None and dialog.occupancy is occ  # one record for both
        table = dialog.table
        cells = [(table.item(r, 0), table.item(r, 1)) for r in range(table.rowCount())]
        listed = {name.text(): amount.text() for name, amount in cells
                  if name is not None and amount is not None}
        assert listed["System prompt"] == tokens(system)
        assert listed["Tool definitions"] == tokens(tool_specs)
        if os.environ.get("TREECHAT_SCREENSHOTS") == "1":
            for mode in ("light", "dark"):
                desk.theme.set_mode(mode)
                await aio.settle(0.2)
                desk.composer.grab().save(str(SHOTS / f"first-hour-empty-chat-ring-{mode}.png"))
            desk.theme.set_mode("light")
        dialog.close()

        desk.provider.queue(Reply(text="Hello."))
        desk.composer.set_text("hi")
        desk.composer.submit()
        await aio.until(lambda: not desk.services.chat.is_running(session.id)
                        and desk.requests() == 1, what="the reply")
        await c.tasks.idle()
        after = ring.occupancy
        assert after is not None and after.total_used > carried
        c.new_chat()
        await c.tasks.idle()
        assert ring.label() == "–" and ring.occupancy is None  # not the last chat's figure
        assert c.occupancy.record is None

    aio.run(scenario())
