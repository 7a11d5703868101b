"""What a turn leaves in its records: the reply's usage metadata, the ledger row of each
request, a provider failure in the user's words, the next request's cost estimate, and the
ledger's last request read back as the engine's measurement."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...core.occupancy import MeasuredUsage
from ...providers import stream as provider_stream
from ...providers.errors import ErrorKind, ProviderFailure
from ...store import usage as ledger
from .events import TurnError

ACTIONS = {
    "overflow": "retry",
    "auth": "settings",
    "rate_limit": "wait",
    "offline": "retry",
    "server": "retry",
    "bad_request": "settings",
    "cancelled": "",
    "busy": "",
    "unavailable": "settings",
    "internal": "retry",
}


@dataclass(frozen=True, slots=True)
class CostEstimate:
    """The next request before it is sent: prompt tokens (cached ones counted whole) and its
    cost at the uncached price, and the ceiling if the reply runs to `max_reply_tokens`.
    `priced` False: the model has no known price (the costs are 0, meaning unknown)."""

    model: str
    prompt_tokens: int
    max_reply_tokens: int
    prompt_usd: float
    ceiling_usd: float
    priced: bool


def reply_usage(result: provider_stream.TurnResult) -> dict[str, Any] | None:
    u = result.usage
    if u is None:
        return None
    return {
        "prompt_tokens": u.prompt_tokens,
        "cache_read": u.cache_read,
        "cache_write": u.cache_write,
        "output_tokens": u.output_tokens,
        # Part of output_tokens, as providers bill it; shown apart beside "Thinking".
        "reasoning_tokens": u.reasoning_tokens,
        "cost_usd": result.cost.usd if result.cost else None,
    }


def turn_error(failure: ProviderFailure) -> TurnError:
    kind = failure.kind.value if isinstance(failure.kind, ErrorKind) else str(failure.kind)
    return TurnError(
        kind=kind,
        message=failure.message,
        retry=failure.retry,
        retry_after=failure.retry_after,
        action=ACTIONS.get(kind, "retry"),
    )


def usage_record(
    record_id: str,
    session_id: str,
    head: str | None,
    commit_id: str,
    model: str,
    result: provider_stream.TurnResult,
    estimated: int,
    now: float,
) -> ledger.UsageRecord:
    u = result.usage
    if u is None:
        return ledger.UsageRecord(
            id=record_id,
            session_id=session_id,
            model=model,
            created_at=now,
            estimated_tokens=estimated,
            basis="unmeasured",
            head=head,
            commit_id=commit_id,
            priced=False,
            phase="chat",
        )
    cost = result.cost
    return ledger.UsageRecord(
        id=record_id,
        session_id=session_id,
        model=model,
        created_at=now,
        input_tokens=u.prompt_tokens,
        cache_read=u.cache_read,
        cache_write=u.cache_write,
        output_tokens=u.output_tokens,
        cost_usd=cost.usd if cost else 0.0,
        priced=bool(cost and cost.priced),
        estimated_tokens=estimated,
        calibration=(u.prompt_tokens / estimated) if estimated else None,
        basis="measured",
        head=head,
        commit_id=commit_id,
        phase="chat",
    )


def measured_from(record: ledger.UsageRecord | None) -> MeasuredUsage | None:
    """The ledger's last request as the engine's measurement of a head."""
    if record is None or record.head is None:
        return None
    return MeasuredUsage(
        head=record.head,
        prompt_tokens=record.input_tokens,
        cache_read=record.cache_read,
        cache_write=record.cache_write,
        estimated_tokens=record.estimated_tokens,
    )
