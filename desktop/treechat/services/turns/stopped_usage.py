"""The ledger row of a reply stopped before the provider sent its usage: a hosted provider
bills the prompt and every token it streamed, so the request is counted, with the prompt as
estimated before it was sent and the output counted from the text kept (basis "estimated",
never taken as a measurement)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from ...core.model import Node
from ...core.reply import reasoning_of
from ...store import usage as ledger
from ...store.database import Store

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class StoppedRequest:
    """What was sent before the stop: the request's ids, its model and its prompt's size."""

    record_id: str
    session_id: str
    commit_id: str
    model: str  # the address the reply is recorded under
    litellm_model: str  # what prices it
    prompt_tokens: int
    now: float

    def record(self, node: Node, output_tokens: int) -> ledger.UsageRecord:
        from ...providers import llm

        cost = llm.reservation_cost(self.litellm_model, self.prompt_tokens, output_tokens)
        return ledger.UsageRecord(
            id=self.record_id, session_id=self.session_id, model=self.model,
            created_at=self.now, input_tokens=self.prompt_tokens, output_tokens=output_tokens,
            cost_usd=cost.usd if cost.priced else 0.0, priced=cost.priced,
            estimated_tokens=self.prompt_tokens, basis="estimated", head=node.id,
            commit_id=self.commit_id, phase="chat",
        )


async def record_stopped(
    store: Store, count: Callable[[str], int], node: Node, request: StoppedRequest
) -> bool:
    """Count the stopped reply's request (True once its row is written); a failure is
    logged, never raised (the stop itself must go through)."""
    try:
        streamed = (node.output or "") + (reasoning_of(node) or "")
        output = await asyncio.to_thread(count, streamed) if streamed else 0
        row = await asyncio.to_thread(request.record, node, output)
        await store.run(lambda r: ledger.record_usage(r, row))
    except Exception:
        log.warning("the stopped reply's usage was not recorded", exc_info=True)
        return False
    return True
