"""What a request leaves in the records: the reply's usage, the ledger row (measured or not),
a provider failure in the user's words with what to do, and the measurement read back."""

from __future__ import annotations

from treechat.providers import stream as provider_stream
from treechat.providers.errors import ErrorKind, ProviderFailure
from treechat.services.turns.turn_records import (
    measured_from,
    reply_usage,
    turn_error,
    usage_record,
)


def _result(usage: provider_stream.Usage | None) -> provider_stream.TurnResult:
    return provider_stream.TurnResult(
        model="openai/m", text="x", tool_calls=(), usage=usage, cost=None,
        finish_reason="stop", attempts=1, messages_sent=())


def test_a_reply_without_usage_is_an_unmeasured_row() -> None:
    result = _result(None)
    assert reply_usage(result) is None
    row = usage_record("row", "s", "h", "c", "openai/m", result, 120, 7.0)
    assert row.basis == "unmeasured" and row.estimated_tokens == 120 and not row.priced
    assert measured_from(row) is not None  # the head is known: the estimate is still its own


def test_a_measured_row_calibrates_the_estimate() -> None:
    usage = provider_stream.Usage(prompt_tokens=150, cache_read=50, output_tokens=20,
                                  reasoning_tokens=5)
    result = _result(usage)
    assert reply_usage(result) == {
        "prompt_tokens": 150, "cache_read": 50, "cache_write": 0, "output_tokens": 20,
        "reasoning_tokens": 5, "cost_usd": None}
    row = usage_record("row", "s", "h", "c", "openai/m", result, 100, 7.0)
    assert row.basis == "measured" and row.calibration == 1.5
    measured = measured_from(row)
    assert measured is not None
    assert (measured.head, measured.prompt_tokens, measured.cache_read) == ("h", 150, 50)


def test_a_row_without_a_head_is_no_measurement() -> None:
    row = usage_record("row", "s", None, "c", "openai/m", _result(None), 10, 1.0)
    assert measured_from(row) is None and measured_from(None) is None


def test_a_failure_says_what_to_do() -> None:
    auth = turn_error(ProviderFailure(ErrorKind.AUTH, False, "The key was refused."))
    assert (auth.kind, auth.action, auth.retry) == ("auth", "settings", False)
    limited = turn_error(ProviderFailure(ErrorKind.RATE_LIMIT, True, "Slow down.",
                                         retry_after=4.0))
    assert (limited.action, limited.retry_after) == ("wait", 4.0)
