"""The usage ledger on a real DuckDB file: one row per request, totals per model, and the last
measurement occupancy reads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from treechat.store.database import Store
from treechat.store.usage import (
    UsageRecord,
    last_measurement,
    ledger,
    record_usage,
    session_usage,
    usage_by_id,
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "treechat.duckdb") as opened:
        yield opened


def row(
    i: int, session: str = "s1", model: str = "anthropic/claude-sonnet-4-5", **kw: object
) -> UsageRecord:
    fields: dict[str, object] = {
        "id": f"u{session}{i}",
        "session_id": session,
        "model": model,
        "created_at": 1000.0 + i,
        "input_tokens": 1000 * (i + 1),
        "cache_read": 500 * i,
        "cache_write": 100,
        "output_tokens": 50,
        "cost_usd": 0.01 * (i + 1),
        "estimated_tokens": 900 * (i + 1),
    }
    fields.update(kw)
    return UsageRecord(**fields)  # type: ignore[arg-type]


def test_ledger_totals_per_model_and_per_session(store: Store) -> None:
    for i in range(3):
        store.call(lambda repo, i=i: record_usage(repo, row(i)))
    store.call(
        lambda repo: record_usage(
            repo, row(0, session="s2", model="openai/gpt-4o", cache_read=0, cost_usd=0.5)
        )
    )
    store.call(
        lambda repo: record_usage(
            repo, row(1, session="s2", model="openai/local", priced=False, cost_usd=0.0)
        )
    )
    everything = store.call(ledger)
    assert [r.model for r in everything] == [
        "openai/gpt-4o",
        "anthropic/claude-sonnet-4-5",
        "openai/local",
    ]
    claude = everything[1]
    assert claude.requests == 3
    assert claude.input_tokens == 1000 + 2000 + 3000
    assert claude.cache_read == 0 + 500 + 1000
    assert claude.cache_write == 300
    assert claude.output_tokens == 150
    assert claude.cost_usd == pytest.approx(0.06)
    assert claude.unpriced_requests == 0
    assert claude.cache_hit_rate == pytest.approx(1500 / 6000)
    assert everything[2].unpriced_requests == 1 and everything[2].cost_usd == 0
    only_s2 = store.call(lambda repo: ledger(repo, "s2"))
    assert {r.model for r in only_s2} == {"openai/gpt-4o", "openai/local"}


def test_occupancy_reads_the_last_request_never_a_sum(store: Store) -> None:
    assert store.call(lambda repo: last_measurement(repo, "s1")) is None
    for i in range(3):
        store.call(lambda repo, i=i: record_usage(repo, row(i)))
    last = store.call(lambda repo: last_measurement(repo, "s1"))
    assert last is not None
    assert last.input_tokens == 3000  # the third request, not 6000
    assert last.calibration is None
    # A request that reported no usage (estimated, or empty) does not replace the measurement.
    store.call(lambda repo: record_usage(repo, row(9, basis="estimated", input_tokens=0)))
    assert store.call(lambda repo: last_measurement(repo, "s1")).id == last.id  # type: ignore[union-attr]


def test_rows_round_trip_and_over_reports_are_clamped(store: Store) -> None:
    odd = row(
        0,
        cache_read=5000,
        cache_write=4000,
        output_tokens=-3,
        cost_usd=-1.0,
        calibration=1.07,
        head="n9",
        commit_id="c3",
    )
    store.call(lambda repo: record_usage(repo, odd))
    (back,) = store.call(lambda repo: session_usage(repo, "s1"))
    assert back.input_tokens == 1000
    assert (back.cache_read, back.cache_write) == (1000, 0)  # clamped to the prompt total
    assert back.output_tokens == 0 and back.cost_usd == 0.0
    assert back.calibration == pytest.approx(1.07)
    assert (back.head, back.commit_id, back.phase, back.basis) == ("n9", "c3", "chat", "measured")


def test_the_ledger_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "treechat.duckdb"
    with Store.open(path) as first:
        first.call(lambda repo: record_usage(repo, row(0)))
    with Store.open(path) as second:
        (only,) = second.call(ledger)
    assert only.requests == 1 and only.input_tokens == 1000


def test_spend_by_model_and_session_and_rows_per_reply(store: Store) -> None:
    from treechat.core.model import Session
    from treechat.store.usage import spend_by, usage_for_heads, usage_rows

    store.call(lambda r: r.create_session(
        Session(id="s1", title="First chat", head=None, model="", created_at=1.0, updated_at=1.0)))
    for record in (row(0, head="n1"), row(1, head="n2"),
                   row(2, session="s2", model="openai/local", priced=False, head="n3")):
        store.call(lambda r, rec=record: record_usage(r, rec))
    by_model = store.call(lambda r: spend_by(r, "model"))
    assert [(s.key, s.requests, s.priced) for s in by_model] == [
        ("anthropic/claude-sonnet-4-5", 2, True), ("openai/local", 1, False)]
    by_session = {s.key: s for s in store.call(lambda r: spend_by(r, "session"))}
    assert by_session["s1"].label == "First chat" and by_session["s2"].label == "s2"
    assert by_session["s1"].cost_usd == pytest.approx(0.03)
    assert by_session["s2"].cost_usd == 0.0 and by_session["s2"].unpriced_requests == 1
    per_reply = store.call(lambda r: usage_for_heads(r, ["n2", "n3", "missing"]))
    assert set(per_reply) == {"n2", "n3"} and per_reply["n2"][0].input_tokens == 2000
    assert len(store.call(lambda r: usage_rows(r, since=1001.0))) == 2
    with pytest.raises(ValueError):
        store.call(lambda r: spend_by(r, "colour"))


def test_rows_by_id_are_those_that_exist_in_the_order_made(store: Store) -> None:
    for i in (2, 0, 1):
        store.call(lambda r, i=i: record_usage(r, row(i)))
    found = store.call(lambda r: usage_by_id(r, ["us11", "nowhere", "us12"]))
    assert [f.id for f in found] == ["us11", "us12"]
    assert store.call(lambda r: usage_by_id(r, [])) == ()
