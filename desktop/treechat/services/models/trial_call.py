"""Testing a connection: its model list read again, then a one-token call to one of its
models; the outcome in the provider's own words when it fails."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...providers.connections import SERVER_KINDS, ConnectionProblem
from ...providers.stream import TurnRequest

if TYPE_CHECKING:
    from .connections import ConnectionService

TEST_PROMPT = "Reply with the single word: ok"


@dataclass(frozen=True, slots=True)
class TestOutcome:
    """What a one-token test call found. `detail` is the provider's own words on failure."""

    ok: bool
    connection: str
    model: str
    message: str
    detail: str = ""
    reply: str = ""


async def trial_call(service: ConnectionService, ident: str, model: str | None = None
                     ) -> TestOutcome:
    """List the connection's models, then make a one-token call to `model` (else its
    first model). On failure the outcome carries the provider's own words."""
    conn = service.find(ident)
    if conn is None:
        raise ConnectionProblem(f"no connection is named {ident!r}")
    if conn.kind == "bundled":
        raise ConnectionProblem(
            "the bundled model starts on demand; `treechat --smoke` runs a turn on it"
        )
    if any(c.id == conn.id for c in service.saved()) and conn.kind in SERVER_KINDS:
        status = await service.refresh_one(conn.id)
        conn = status.connection
        if status.state != "ready":
            return TestOutcome(False, conn.id, model or "", f"{conn.display_label}: "
                               f"the model list could not be read", status.reason)
    elif conn.detected and service.detector is not None:
        await service.detector.refresh()
        conn = service.find(ident) or conn
        reason = service.detector.last_error(ident)
        if reason:
            return TestOutcome(False, conn.id, model or "", f"{conn.display_label} did "
                               "not answer", reason)
    name = model or next((m.name for m in conn.offered()), "")
    if not name:
        return TestOutcome(False, conn.id, "", f"{conn.display_label} offers no model to test")
    key = await service.key_for(conn)
    if conn.kind == "hosted" and not key and not conn.base_url:
        return TestOutcome(False, conn.id, name, f"{conn.display_label} has no API key",
                           "store one with `treechat connections add ... --key-from-env VAR`")
    request = TurnRequest(
        model=conn.litellm_model(name),
        messages=[{"role": "user", "content": TEST_PROMPT}],
        api_base=conn.api_base,
        api_key=key,
        max_tokens=1,
        timeout=conn.timeout or 60.0,
        phase="test",
        extra={"extra_headers": dict(conn.headers)} if conn.headers else {},
    )
    result = await service.provider.stream_turn(request)
    if result.error is not None:
        failure = result.error
        return TestOutcome(
            False, conn.id, name, failure.message, failure.detail or failure.message
        )
    return TestOutcome(True, conn.id, name, f"{conn.display_label} answered", reply=result.text)
