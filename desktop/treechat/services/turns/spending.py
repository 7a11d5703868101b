"""What replies and chats cost, read from the usage ledger (the same table `treechat ledger`
reads): tokens and cost per reply, a chat's total, and spend by day, model or chat. A model
with no known price says so instead of counting as free."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from ...store import usage as ledger
from ...store.database import Store
from ...store.repository import Repository

SpendBy = Literal["day", "model", "session"]
SPEND_GROUPS: tuple[SpendBy, ...] = ("day", "model", "session")


@dataclass(frozen=True, slots=True)
class ReplyCost:
    """The requests that wrote one reply (usually one; an overflow retry is still one row):
    tokens in (whole prompt, cached included), of them cached, out, and cost. `priced` is
    False when some request's model had no known price."""

    node_id: str
    model: str
    requests: int
    input_tokens: int
    cache_read: int
    cache_write: int
    output_tokens: int
    cost_usd: float
    priced: bool

    @property
    def uncached_input_tokens(self) -> int:
        return self.input_tokens - self.cache_read - self.cache_write


@dataclass(frozen=True, slots=True)
class ChatTotal:
    """Every request a chat made, on any branch."""

    session_id: str
    requests: int
    input_tokens: int
    cache_read: int
    output_tokens: int
    cost_usd: float
    unpriced_requests: int
    # the models (addresses) of those requests: a local one costs nothing, a hosted one
    # has no known price
    unpriced_models: tuple[str, ...] = ()
    # requests to models on this computer (free; not among `unpriced_requests`), when the
    # caller said which models are local
    free_requests: int = 0

    @property
    def priced(self) -> bool:
        return self.unpriced_requests == 0


def _reply_cost(node_id: str, rows: Sequence[ledger.UsageRecord]) -> ReplyCost:
    return ReplyCost(
        node_id=node_id,
        model=rows[-1].model,
        requests=len(rows),
        input_tokens=sum(r.input_tokens for r in rows),
        cache_read=sum(r.cache_read for r in rows),
        cache_write=sum(r.cache_write for r in rows),
        output_tokens=sum(r.output_tokens for r in rows),
        cost_usd=sum(r.cost_usd for r in rows),
        priced=all(r.priced for r in rows),
    )


def reply_costs_of(records: Sequence[ledger.UsageRecord]) -> dict[str, ReplyCost]:
    """The cost of each reply these rows measured (a row measured at no node is left out),
    as `SpendingService.reply_costs` reads it from the store."""
    by_head: dict[str, list[ledger.UsageRecord]] = {}
    for record in records:
        if record.head is not None:
            by_head.setdefault(record.head, []).append(record)
    return {k: _reply_cost(k, v) for k, v in by_head.items()}


def with_records(total: ChatTotal, records: Sequence[ledger.UsageRecord],
                 local: Callable[[str], bool] | None = None) -> ChatTotal:
    """`total` with `records` (new requests of the same chat) counted in, as `chat_total`
    would count them once they are in the ledger."""
    is_local = local or _hosted
    hosted = [r for r in records if not is_local(r.model)]
    unpriced = [r.model for r in hosted if not r.priced]
    return replace(
        total,
        requests=total.requests + len(records),
        input_tokens=total.input_tokens + sum(r.input_tokens for r in records),
        cache_read=total.cache_read + sum(r.cache_read for r in records),
        output_tokens=total.output_tokens + sum(r.output_tokens for r in records),
        cost_usd=total.cost_usd + sum(r.cost_usd for r in hosted),
        unpriced_requests=total.unpriced_requests + len(unpriced),
        unpriced_models=total.unpriced_models + tuple(
            m for m in dict.fromkeys(unpriced) if m not in total.unpriced_models),
        free_requests=total.free_requests + len(records) - len(hosted),
    )


def _day(when: float) -> str:
    return _dt.datetime.fromtimestamp(when).date().isoformat()


def spend_by_day(rows: Sequence[ledger.UsageRecord]) -> tuple[ledger.SpendRow, ...]:
    """Requests grouped by local calendar day, newest day first."""
    return spend_grouped(rows, "day", _hosted)


def _hosted(_model: str) -> bool:
    return False


class SpendingService:
    """Reads the ledger on the store's worker."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def reply_costs(self, node_ids: Sequence[str]) -> dict[str, ReplyCost]:
        """Cost of each reply among `node_ids` that a request wrote (others are absent):
        what a reply's footer or tooltip shows."""
        ids = list(node_ids)
        found = await self.store.run(lambda r: ledger.usage_for_heads(r, ids))
        return {k: _reply_cost(k, v) for k, v in found.items()}

    async def reply_cost(self, node_id: str) -> ReplyCost | None:
        return (await self.reply_costs([node_id])).get(node_id)

    async def chat_total(self, session_id: str,
                         local: Callable[[str], bool] | None = None) -> ChatTotal:
        """The chat's spend so far (every branch), for its header; with `local`, requests
        to models on this computer are counted as free, apart from the unpriced."""
        rows = await self.store.run(lambda r: ledger.ledger(r, session_id))
        is_local = local or _hosted
        hosted = [r for r in rows if not is_local(r.model)]
        return ChatTotal(
            session_id=session_id,
            requests=sum(r.requests for r in rows),
            input_tokens=sum(r.input_tokens for r in rows),
            cache_read=sum(r.cache_read for r in rows),
            output_tokens=sum(r.output_tokens for r in rows),
            cost_usd=sum(r.cost_usd for r in hosted),
            unpriced_requests=sum(r.unpriced_requests for r in hosted),
            unpriced_models=tuple(r.model for r in hosted if r.unpriced_requests),
            free_requests=sum(r.requests for r in rows if is_local(r.model)),
        )

    async def spend(self, by: SpendBy, local: Callable[[str], bool] | None = None,
                    ) -> tuple[ledger.SpendRow, ...]:
        """Spend grouped by day (newest first), model or chat (costliest first). With
        `local`, every group counts requests to models on this computer as free, apart from
        the unpriced, so a day, a model and a chat say the same of the same requests."""
        if local is not None and by in SPEND_GROUPS:
            labelled = {} if by == "day" else {
                r.key: r.label for r in await self.store.run(lambda r: _spend(r, by))}
            records = await self.store.run(ledger.usage_rows)
            return spend_grouped(records, by, local, labelled)
        if by == "day":
            rows = await self.store.run(ledger.usage_rows)
            return spend_by_day(rows)
        if by not in SPEND_GROUPS:
            raise ValueError(f"cannot group usage by {by!r} (use day, model or session)")
        return await self.store.run(lambda r: _spend(r, by))


def _spend(repo: Repository, by: str) -> tuple[ledger.SpendRow, ...]:
    return ledger.spend_by(repo, by)


def spend_grouped(
    records: Sequence[ledger.UsageRecord], by: SpendBy, local: Callable[[str], bool],
    labels: dict[str, str] | None = None,
) -> tuple[ledger.SpendRow, ...]:
    """Requests grouped by day, model or chat, each group's free (local) requests apart from
    its unpriced ones: days newest first, the others costliest first."""
    def key_of(r: ledger.UsageRecord) -> str:
        return _day(r.created_at) if by == "day" else r.model if by == "model" \
            else r.session_id

    groups: dict[str, list[ledger.UsageRecord]] = {}
    for r in records:
        groups.setdefault(key_of(r), []).append(r)
    is_local = {m: local(m) for m in {r.model for r in records}}
    out = []
    for key, rs in groups.items():
        hosted = [r for r in rs if not is_local[r.model]]
        out.append(ledger.SpendRow(
            key=key,
            requests=len(rs),
            input_tokens=sum(r.input_tokens for r in rs),
            cache_read=sum(r.cache_read for r in rs),
            cache_write=sum(r.cache_write for r in rs),
            output_tokens=sum(r.output_tokens for r in rs),
            cost_usd=sum(r.cost_usd for r in hosted),
            unpriced_requests=sum(1 for r in hosted if not r.priced),
            first_at=min(r.created_at for r in rs),
            last_at=max(r.created_at for r in rs),
            label=(labels or {}).get(key, key),
            free_requests=len(rs) - len(hosted),
        ))
    if by == "day":
        return tuple(sorted(out, key=lambda s: s.key, reverse=True))
    return tuple(sorted(out, key=lambda s: (-s.cost_usd, s.key)))
