"""The one table from provider exceptions to kinds, retry flags and messages."""

from __future__ import annotations

import asyncio
import email.utils

import httpx
import pytest

from treechat.providers import llm
from treechat.providers.errors import (
    ErrorKind,
    ProviderError,
    classify,
    is_overflow,
    retry_after_seconds,
)

litellm = llm.litellm_module()
REQ = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")


def response(status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers or {}, request=REQ)


def chained(outer: BaseException, inner: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except BaseException as e:
            raise outer from e
    except BaseException as caught:
        return caught


def test_overflow_by_type() -> None:
    exc = litellm.ContextWindowExceededError(
        message="too long", model="gpt-4o", llm_provider="openai"
    )
    failure = classify(exc)
    assert failure.kind is ErrorKind.OVERFLOW
    assert failure.retry is False  # the same request cannot fit; only a shrunken one may


@pytest.mark.parametrize(
    "wording",
    [
        "This model's maximum context length is 8192 tokens. However, your messages resulted "
        "in 9000 tokens.",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000",
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        "the request exceeds the available context size, try increasing it (n_ctx)",
    ],
)
def test_overflow_by_wording_deep_in_the_chain(wording: str) -> None:
    generic = litellm.BadRequestError(message="bad request", model="m", llm_provider="openai")
    exc = chained(RuntimeError("turn failed"), chained(generic, ValueError(wording)))
    assert is_overflow(exc)
    assert classify(exc).kind is ErrorKind.OVERFLOW


def test_a_plain_bad_request_is_not_an_overflow() -> None:
    exc = litellm.BadRequestError(
        message="messages: field required", model="m", llm_provider="anthropic"
    )
    failure = classify(exc)
    assert failure.kind is ErrorKind.BAD_REQUEST and failure.retry is False
    assert not is_overflow(exc)


def test_rate_limit_reads_retry_after_header() -> None:
    exc = litellm.RateLimitError(
        message="slow down",
        llm_provider="openai",
        model="gpt-4o",
        response=response(429, {"retry-after": "12"}),
    )
    failure = classify(exc)
    assert failure.kind is ErrorKind.RATE_LIMIT and failure.retry
    assert failure.retry_after == 12
    assert failure.message.endswith("Try again in 12 seconds.")


def test_retry_after_forms() -> None:
    ms = litellm.RateLimitError(
        message="x",
        llm_provider="openai",
        model="m",
        response=response(429, {"retry-after-ms": "1500"}),
    )
    assert retry_after_seconds(ms) == 1.5
    when = email.utils.formatdate(1_000_120.0, usegmt=True)
    dated = litellm.RateLimitError(
        message="x", llm_provider="openai", model="m", response=response(429, {"retry-after": when})
    )
    assert retry_after_seconds(dated, now=1_000_000.0) == pytest.approx(120)
    worded = litellm.RateLimitError(
        message="Rate limit reached. Please try again in 2.5s.",
        llm_provider="openai",
        model="m",
        response=response(429),
    )
    assert retry_after_seconds(worded) == 2.5
    assert classify(worded).message.endswith("Try again in 2 seconds.")
    bare = litellm.RateLimitError(
        message="x", llm_provider="openai", model="m", response=response(429)
    )
    assert retry_after_seconds(bare) is None
    assert classify(bare).message.endswith("Wait a moment and try again.")


@pytest.mark.parametrize(
    ("exc", "kind", "retry"),
    [
        (
            litellm.AuthenticationError(message="bad key", llm_provider="openai", model="m"),
            ErrorKind.AUTH,
            False,
        ),
        (
            litellm.InternalServerError(message="boom", llm_provider="openai", model="m"),
            ErrorKind.SERVER,
            True,
        ),
        (
            litellm.ServiceUnavailableError(message="down", llm_provider="openai", model="m"),
            ErrorKind.SERVER,
            True,
        ),
        (
            litellm.Timeout(message="slow", model="m", llm_provider="openai"),
            ErrorKind.OFFLINE,
            True,
        ),
        (
            litellm.NotFoundError(message="no such model", model="m", llm_provider="openai"),
            ErrorKind.BAD_REQUEST,
            False,
        ),
        (ConnectionRefusedError(111, "Connection refused"), ErrorKind.OFFLINE, True),
        (httpx.ConnectError("refused", request=REQ), ErrorKind.OFFLINE, True),
        (asyncio.CancelledError(), ErrorKind.CANCELLED, False),
    ],
)
def test_table_kinds(exc: BaseException, kind: ErrorKind, retry: bool) -> None:
    failure = classify(exc)
    assert failure.kind is kind
    assert failure.retry is retry
    assert failure.message and failure.message[0].isupper() and failure.message.endswith(".")


def test_a_refused_connection_wrapped_as_a_server_error_is_offline() -> None:
    inner = httpx.ConnectError("Cannot connect to host 127.0.0.1:9", request=REQ)
    exc = chained(
        litellm.InternalServerError(message="Connection error.", llm_provider="openai", model="m"),
        inner,
    )
    assert classify(exc).kind is ErrorKind.OFFLINE


def test_unknown_exceptions_fall_back_on_status() -> None:
    class Weird(Exception):
        status_code = 429

    assert classify(Weird("?")).kind is ErrorKind.RATE_LIMIT
    assert classify(RuntimeError("?")).kind is ErrorKind.SERVER


def test_keys_never_appear_in_messages_or_details() -> None:
    key = "sk-proj-" + "A1b2C3d4" * 6
    exc = litellm.AuthenticationError(
        message=f"Incorrect API key provided: {key}.", llm_provider="openai", model="m"
    )
    failure = classify(exc)
    error = ProviderError(failure)
    for text in (failure.message, failure.detail, str(error), repr(failure)):
        assert key not in text
    assert "[redacted]" in failure.detail


@pytest.mark.parametrize(("inner", "says"), [
    (httpx.TooManyRedirects("Exceeded maximum allowed redirects.", request=REQ),
     "too many redirects"),
    (ValueError("400, message='Got more than 8190 bytes when reading: b\"aaaa\"'"),
     "longer than any client accepts"),
])
def test_causes_under_a_server_error_are_told_apart(inner: BaseException, says: str) -> None:
    outer = litellm.InternalServerError(message="OpenAIException - failed", model="m",
                                        llm_provider="openai")
    failure = classify(chained(outer, inner))
    assert says in failure.message and failure.retry is False
    plain = classify(litellm.InternalServerError(  # no such cause: worth a retry
        message="OpenAIException - failed", model="m", llm_provider="openai"))
    assert plain.kind is ErrorKind.SERVER and plain.retry is True
