"""Spend from the ledger: per reply, per chat, and by day, model and chat."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from treechat.core.model import Session
from treechat.services.turns.spending import SpendingService, reply_costs_of, with_records
from treechat.store.database import Store
from treechat.store.usage import UsageRecord, record_usage


def at(day: int, hour: int) -> float:
    return dt.datetime(2026, 3, day, hour, 30).timestamp()  # local time, as shown


@pytest_asyncio.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = Store.open(tmp_path / "s.duckdb")
    opened.call(lambda r: r.create_session(
        Session(id="s1", title="Trip plans", head=None, model="", created_at=1, updated_at=1)))
    rows = [
        UsageRecord("u1", "s1", "openai/gpt-4o", at(1, 9), input_tokens=1000, cache_read=400,
                    output_tokens=50, cost_usd=0.002, head="a1"),
        UsageRecord("u2", "s1", "openai/gpt-4o", at(1, 23), input_tokens=1200, cache_read=1000,
                    output_tokens=60, cost_usd=0.001, head="a2"),
        UsageRecord("u3", "s2", "openai/local", at(2, 0), input_tokens=300, output_tokens=20,
                    priced=False, head="b1"),
    ]
    for row in rows:
        opened.call(lambda r, row=row: record_usage(r, row))
    yield opened
    opened.close()


@pytest.mark.asyncio
async def test_reply_costs_and_the_chat_total(store: Store) -> None:
    spending = SpendingService(store)
    costs = await spending.reply_costs(["a1", "a2", "user-node"])
    assert set(costs) == {"a1", "a2"}
    assert (costs["a1"].input_tokens, costs["a1"].cache_read, costs["a1"].output_tokens) == (
        1000, 400, 50)
    assert costs["a1"].uncached_input_tokens == 600 and costs["a1"].priced
    total = await spending.chat_total("s1")
    assert total.requests == 2 and total.cost_usd == pytest.approx(0.003) and total.priced
    local = await spending.chat_total("s2")
    assert not local.priced and local.cost_usd == 0.0


@pytest.mark.asyncio
async def test_spend_by_day_model_and_chat(store: Store) -> None:
    spending = SpendingService(store)
    days = await spending.spend("day")
    assert [(d.key, d.requests) for d in days] == [("2026-03-02", 1), ("2026-03-01", 2)]
    assert days[0].unpriced_requests == 1 and days[1].cost_usd == pytest.approx(0.003)
    models = await spending.spend("model")
    assert [m.key for m in models] == ["openai/gpt-4o", "openai/local"]
    chats = await spending.spend("session")
    assert [(c.key, c.label) for c in chats] == [("s1", "Trip plans"), ("s2", "s2")]
    with pytest.raises(ValueError):
        await spending.spend("week")  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_new_rows_counted_in_say_what_the_ledger_then_says(store: Store) -> None:
    spending = SpendingService(store)

    def local(model: str) -> bool:
        return model == "openai/local"

    before = await spending.chat_total("s1", local=local)
    new = [
        UsageRecord("u4", "s1", "openai/gpt-4o", at(3, 9), input_tokens=900, cache_read=100,
                    output_tokens=40, cost_usd=0.004, head="a3"),
        UsageRecord("u5", "s1", "openai/local", at(3, 9), input_tokens=50, output_tokens=5,
                    priced=False, head="a4"),
        UsageRecord("u6", "s1", "x/unknown", at(3, 10), input_tokens=70, priced=False,
                    head="a4"),
    ]
    for row in new:
        store.call(lambda r, row=row: record_usage(r, row))
    after = await spending.chat_total("s1", local=local)
    counted = with_records(before, new, local)
    assert counted.requests == after.requests == 5
    assert counted.cost_usd == pytest.approx(after.cost_usd)
    assert (counted.input_tokens, counted.cache_read, counted.output_tokens) == (
        after.input_tokens, after.cache_read, after.output_tokens)
    assert (counted.free_requests, counted.unpriced_requests) == (1, 1)
    assert set(counted.unpriced_models) == set(after.unpriced_models) == {"x/unknown"}
    assert reply_costs_of(new) == await spending.reply_costs(["a3", "a4"])
