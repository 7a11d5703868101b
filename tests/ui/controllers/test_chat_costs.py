"""What the chat costs in the window: each reply's tokens and price on hover, the chat's
total in the header, the next request's estimate, and the Usage view; unpriced and local
models say what they are."""

from __future__ import annotations

from tests.support.loopback_server import Reply

from treechat.ui.dialogs.chat_controls import (
    UsageDialog,
)

from ..conftest import BIG_MODEL, MODEL, Aio, Desk
from .controls_desk import cell, controls, send, shoot, turn_done


def test_each_reply_says_its_tokens_and_cost_and_the_header_the_chats_total(
    desk: Desk, aio: Aio
) -> None:
    c = controls(desk)
    # litellm prices gpt-4o (the loopback serves it)
    desk.composer.picker.setCurrentIndex(desk.composer.model_ids().index(BIG_MODEL))
    desk.provider.queue(Reply(text="A priced answer."))

    async def scenario() -> None:
        send(desk, "What does this cost?")
        await turn_done(desk, aio, 1)
        sid = desk.controller.current_session_id
        assert sid is not None
        await aio.until(lambda: bool(c.costs.costs), what="costs")
        await c.costs.estimate(sid)

    aio.run(scenario())
    sid = desk.controller.current_session_id
    assert sid is not None
    reply = desk.chat.model.rows[-1].node
    assert reply is not None
    cost = c.costs.costs[reply.id]
    rec = desk.provider.requests[0]
    assert cost.input_tokens == rec.prompt_tokens and cost.output_tokens == rec.output_tokens
    assert cost.priced and cost.cost_usd > 0
    tip = c.costs.reply_text(reply.id)
    # what hovering the reply shows
    assert c.costs.tooltip_at(desk.chat.row_rect(reply.id).center().toPoint()) == tip
    assert f"{rec.prompt_tokens:,} tokens in" in tip and "$" in tip
    total = aio.run(desk.services.chat.spending.chat_total(sid))
    assert total.cost_usd == cost.cost_usd
    assert c.costs.cost_label.text().startswith("$")
    assert c.costs.estimate_label.text().startswith("next ≈ $")
    shoot(desk, "cost")

    usage = c.costs.open_usage()
    assert isinstance(usage, UsageDialog)
    aio.run(desk.controller.tasks.idle())
    assert usage.tables["day"].rowCount() == 1
    assert cell(usage.tables["model"], 0, 0) == "Loopback GPT-4o"  # as the picker names it
    assert usage.tables["model"].item(0, 0).toolTip().endswith("gpt-4o")
    assert cell(usage.tables["session"], 0, 0) == desk.window.title.text()
    shoot(desk, "usage", usage)


def test_an_unpriced_model_says_so(desk: Desk, aio: Aio) -> None:
    c = controls(desk)
    desk.provider.queue(Reply(text="free?"))

    async def scenario() -> None:
        send(desk, "Hello")
        await turn_done(desk, aio, 1)
        await aio.until(lambda: bool(c.costs.costs), what="costs")
        sid = desk.controller.current_session_id
        assert sid is not None
        await c.costs.estimate(sid)

    aio.run(scenario())
    reply = desk.chat.model.rows[-1].node
    assert reply is not None
    assert "unpriced" in c.costs.reply_text(reply.id)
    assert c.costs.cost_label.text() == "unpriced"
    assert c.costs.estimate_label.text() == "next: unpriced"
    usage = c.costs.open_usage()
    aio.run(desk.controller.tasks.idle())
    assert cell(usage.tables["day"], 0, 5) == "unpriced"
    assert "unpriced" in usage.note.text()


def test_a_model_on_this_computer_is_free_not_unpriced(desk: Desk, aio: Aio) -> None:
    from treechat.services.models.catalog import ModelChoice

    local = "openai/loopback-local"
    catalog = desk.services.models
    catalog.extra = (*catalog.extra, ModelChoice(local, "Loopback local", "openai",
                                                 api_base=desk.provider.openai_base,
                                                 local=True))
    c = controls(desk)
    desk.provider.queue(Reply(text="free!"))

    async def scenario() -> None:
        await desk.controller.models.refresh()
        desk.composer.picker.setCurrentIndex(desk.composer.model_ids().index(local))
        send(desk, "Hello")
        await turn_done(desk, aio, 1)
        await aio.until(lambda: bool(c.costs.costs), what="costs")
        sid = desk.controller.current_session_id
        assert sid is not None
        await c.costs.refresh_costs(sid)
        await c.costs.estimate(sid)

    aio.run(scenario())
    reply = desk.chat.model.rows[-1].node
    assert reply is not None
    tip = c.costs.reply_text(reply.id)
    assert "free" in tip and "unpriced" not in tip and "Loopback local" in tip
    assert c.costs.cost_label.text() == "free"
    assert c.costs.estimate_label.text() == "next: free"
    shoot(desk, "free")
    usage = c.costs.open_usage()
    aio.run(desk.controller.tasks.idle())
    assert cell(usage.tables["model"], 0, 0) == "Loopback local"
    assert usage.tables["model"].item(0, 0).toolTip() == local
    assert cell(usage.tables["model"], 0, 5) == "free"
    assert "1 request to models on this computer cost nothing" in usage.note.text()
    assert "unpriced" not in usage.note.text()


def test_a_local_model_litellm_prices_is_free_in_every_label(desk: Desk, aio: Aio) -> None:
    """A model on this computer whose name litellm has a price for (a local server serving
    a model under a hosted name): free in the reply's tooltip, the header and by Send, never
    "$0" in one place and "free" in another."""
    from treechat.services.models.catalog import ModelChoice

    local = "openai/gpt-4o-mini"
    catalog = desk.services.models
    catalog.extra = (*catalog.extra, ModelChoice(local, "Mini on this computer", "openai",
                                                 api_base=desk.provider.openai_base,
                                                 local=True))
    c = controls(desk)
    desk.provider.queue(Reply(text="local and free"))

    async def scenario() -> None:
        await desk.controller.models.refresh()
        desk.composer.picker.setCurrentIndex(desk.composer.model_ids().index(local))
        send(desk, "Hello")
        await turn_done(desk, aio, 1)
        await aio.until(lambda: bool(c.costs.costs), what="costs")
        sid = desk.controller.current_session_id
        assert sid is not None
        await c.costs.refresh_costs(sid)
        await c.costs.estimate(sid)

    aio.run(scenario())
    reply = desk.chat.model.rows[-1].node
    assert reply is not None
    assert "free (runs on this computer)" in c.costs.reply_text(reply.id)
    assert c.costs.cost_label.text() == "free"
    assert c.costs.estimate_label.text() == "next: free"


def test_a_free_reply_beside_unpriced_ones_is_free_not_zero_dollars(desk: Desk, aio: Aio) -> None:
    """One reply from a model on this computer and two from a model with no known price:
    the header and the Usage day say "free + 2 unpriced", never "$0 + 2 unpriced"."""
    from treechat.services.models.catalog import ModelChoice

    local = "openai/loopback-local"
    catalog = desk.services.models
    catalog.extra = (*catalog.extra, ModelChoice(local, "Loopback local", "openai",
                                                 api_base=desk.provider.openai_base,
                                                 local=True))
    c = controls(desk)
    desk.provider.queue(Reply(text="free"), Reply(text="unpriced one"), Reply(text="two"))

    async def scenario() -> None:
        await desk.controller.models.refresh()
        desk.composer.picker.setCurrentIndex(desk.composer.model_ids().index(local))
        send(desk, "Hello")
        await turn_done(desk, aio, 1)
        desk.composer.picker.setCurrentIndex(desk.composer.model_ids().index(MODEL))
        for n, text in ((2, "And again"), (3, "Once more")):
            send(desk, text)
            await turn_done(desk, aio, n)
        sid = desk.controller.current_session_id
        assert sid is not None
        await c.costs.refresh_costs(sid)

    aio.run(scenario())
    assert c.costs.cost_label.text() == "free + 2 unpriced"
    usage = c.costs.open_usage()
    aio.run(desk.controller.tasks.idle())
    assert cell(usage.tables["day"], 0, 5) == "free + 2 unpriced"
    assert cell(usage.tables["session"], 0, 5) == "free + 2 unpriced"
    by_model = {cell(usage.tables["model"], i, 0): cell(usage.tables["model"], i, 5)
                for i in range(usage.tables["model"].rowCount())}
    assert by_model == {"Loopback local": "free", "Loopback": "unpriced"}
