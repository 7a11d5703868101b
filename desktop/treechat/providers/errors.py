"""One table from provider exceptions to the kinds Treechat acts on, each with a retry flag
and a message a person understands. Matched by class name along the MRO and the exception
chain, so this module never has to import litellm."""

from __future__ import annotations

import asyncio
import email.utils
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .keys import redact


class ErrorKind(StrEnum):
    OVERFLOW = "overflow"
    AUTH = "auth"
    RATE_LIMIT = "rate_limit"
    OFFLINE = "offline"
    SERVER = "server"
    BAD_REQUEST = "bad_request"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class ErrorInfo:
    kind: ErrorKind
    retry: bool
    message: str


MESSAGES: Mapping[ErrorKind, str] = {
    ErrorKind.OVERFLOW: "The conversation is longer than this model can read at once.",
    ErrorKind.AUTH: "The provider did not accept the API key. Check the key for this provider.",
    ErrorKind.RATE_LIMIT: "The provider is limiting how often you can send requests.",
    ErrorKind.OFFLINE: "The provider could not be reached. Check the network connection or "
    "the server address.",
    ErrorKind.SERVER: "The provider had a problem on its side.",
    ErrorKind.BAD_REQUEST: "The provider refused the request as invalid.",
    ErrorKind.CANCELLED: "The reply was stopped.",
}

_TIMED_OUT = "The provider did not answer in time. It may be down or overloaded."
_CUT_OFF = "The provider closed the connection before the reply was complete."

# The one table: exception class name -> what it means. The first name found walking the
# exception's MRO wins, so subclasses (ContextWindowExceededError < BadRequestError) come first
# naturally. Names cover litellm, the openai/anthropic SDKs, httpx and aiohttp.
TABLE: Mapping[str, ErrorInfo] = {
    # Sending the same request again cannot fit; the stream's one shrunken retry is separate.
    "ContextWindowExceededError": ErrorInfo(
        ErrorKind.OVERFLOW, False, MESSAGES[ErrorKind.OVERFLOW]
    ),
    "AuthenticationError": ErrorInfo(ErrorKind.AUTH, False, MESSAGES[ErrorKind.AUTH]),
    "PermissionDeniedError": ErrorInfo(
        ErrorKind.AUTH, False, "The API key is not allowed to use this model."
    ),
    "RateLimitError": ErrorInfo(ErrorKind.RATE_LIMIT, True, MESSAGES[ErrorKind.RATE_LIMIT]),
    "RouterRateLimitError": ErrorInfo(ErrorKind.RATE_LIMIT, True, MESSAGES[ErrorKind.RATE_LIMIT]),
    "BudgetExceededError": ErrorInfo(
        ErrorKind.RATE_LIMIT, False, "The spending limit for this provider has been reached."
    ),
    "MidStreamFallbackError": ErrorInfo(
        ErrorKind.SERVER,
        True,
        "The provider stopped in the middle of the reply. The text received so far was kept.",
    ),
    "Timeout": ErrorInfo(ErrorKind.OFFLINE, True, _TIMED_OUT),
    "APITimeoutError": ErrorInfo(ErrorKind.OFFLINE, True, _TIMED_OUT),
    "APIConnectionError": ErrorInfo(ErrorKind.OFFLINE, True, MESSAGES[ErrorKind.OFFLINE]),
    "ConnectError": ErrorInfo(ErrorKind.OFFLINE, True, MESSAGES[ErrorKind.OFFLINE]),
    "ConnectTimeout": ErrorInfo(ErrorKind.OFFLINE, True, MESSAGES[ErrorKind.OFFLINE]),
    "ReadTimeout": ErrorInfo(
        ErrorKind.OFFLINE, True, "The provider stopped sending. It may be down or overloaded."
    ),
    "ClientConnectorError": ErrorInfo(ErrorKind.OFFLINE, True, MESSAGES[ErrorKind.OFFLINE]),
    "ServerDisconnectedError": ErrorInfo(ErrorKind.SERVER, True, _CUT_OFF),
    "RemoteProtocolError": ErrorInfo(ErrorKind.SERVER, True, _CUT_OFF),
    "ClientPayloadError": ErrorInfo(ErrorKind.SERVER, True, _CUT_OFF),
    "ServiceUnavailableError": ErrorInfo(
        ErrorKind.SERVER, True, "The provider is overloaded or down for now."
    ),
    "InternalServerError": ErrorInfo(ErrorKind.SERVER, True, MESSAGES[ErrorKind.SERVER]),
    "BadGatewayError": ErrorInfo(ErrorKind.SERVER, True, MESSAGES[ErrorKind.SERVER]),
    "APIResponseValidationError": ErrorInfo(
        ErrorKind.SERVER, True, "The provider sent a reply Treechat could not read."
    ),
    "ContentPolicyViolationError": ErrorInfo(
        ErrorKind.BAD_REQUEST, False, "The provider refused the request under its content policy."
    ),
    "NotFoundError": ErrorInfo(
        ErrorKind.BAD_REQUEST,
        False,
        "The provider does not know this model (or the address is wrong).",
    ),
    "UnsupportedParamsError": ErrorInfo(
        ErrorKind.BAD_REQUEST, False, "The model does not support a setting this request used."
    ),
    "UnprocessableEntityError": ErrorInfo(
        ErrorKind.BAD_REQUEST, False, MESSAGES[ErrorKind.BAD_REQUEST]
    ),
    "BadRequestError": ErrorInfo(ErrorKind.BAD_REQUEST, False, MESSAGES[ErrorKind.BAD_REQUEST]),
    "InvalidRequestError": ErrorInfo(ErrorKind.BAD_REQUEST, False, MESSAGES[ErrorKind.BAD_REQUEST]),
    "CancelledError": ErrorInfo(ErrorKind.CANCELLED, False, MESSAGES[ErrorKind.CANCELLED]),
    "ConnectionRefusedError": ErrorInfo(ErrorKind.OFFLINE, True, MESSAGES[ErrorKind.OFFLINE]),
    "ConnectionResetError": ErrorInfo(ErrorKind.SERVER, True, _CUT_OFF),
    "TimeoutError": ErrorInfo(ErrorKind.OFFLINE, True, _TIMED_OUT),
    "gaierror": ErrorInfo(
        ErrorKind.OFFLINE, True, "The provider's address could not be resolved. Check the network."
    ),
}

# Causes that the wrapper litellm puts around them would make a plain "problem on its side",
# told apart by their class name or their wording anywhere in the chain: the server is not
# at fault in a way that trying again would mend.
_REDIRECTS = ErrorInfo(
    ErrorKind.OFFLINE, False,
    "The server kept sending the request elsewhere (too many redirects): the address may be "
    "wrong, or a proxy or a sign-in page is in the way. Check the server address.",
)
_HEADERS_TOO_LONG = ErrorInfo(
    ErrorKind.SERVER, False,
    "The server's answer could not be read: a header of it is longer than any client accepts.",
)
_CAUSES: tuple[tuple[frozenset[str], re.Pattern[str], ErrorInfo], ...] = (
    (frozenset({"TooManyRedirects"}),
     re.compile(r"exceeded maximum allowed redirects|too many redirects", re.IGNORECASE),
     _REDIRECTS),
    (frozenset({"LineTooLong"}),
     re.compile(r"got more than \d+ bytes when reading|header (line |value )?(is )?too long",
                re.IGNORECASE),
     _HEADERS_TOO_LONG),
)

_STATUS_KINDS: Mapping[int, ErrorKind] = {
    400: ErrorKind.BAD_REQUEST,
    401: ErrorKind.AUTH,
    403: ErrorKind.AUTH,
    404: ErrorKind.BAD_REQUEST,
    408: ErrorKind.OFFLINE,
    413: ErrorKind.OVERFLOW,
    422: ErrorKind.BAD_REQUEST,
    429: ErrorKind.RATE_LIMIT,
}

# Wording providers use for "the prompt does not fit", across OpenAI, Anthropic, Gemini,
# Mistral, Ollama, llama.cpp, vLLM and LM Studio.
_OVERFLOW_WORDING = re.compile(
    r"context[_ ]length[_ ]exceeded"
    r"|maximum context length"
    r"|context window"
    r"|prompt is too long"
    r"|input is too long"
    r"|too many (input )?tokens"
    r"|exceeds? the (model'?s? )?(context|maximum)"
    r"|reduce the length of the (messages|prompt)"
    r"|input length and `max_tokens` exceed context limit"
    r"|request too large"
    r"|exceed(s|ed)? context limit"
    r"|n_ctx"
    r"|longer than the model'?s context",
    re.IGNORECASE,
)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception and everything behind it: __cause__, __context__ and the
    `original_exception` litellm keeps, each visited once."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        for nxt in (
            getattr(current, "original_exception", None),
            current.__cause__,
            current.__context__,
        ):
            if isinstance(nxt, BaseException):
                stack.append(nxt)


def _text(exc: BaseException) -> str:
    parts = [str(exc)]
    message = getattr(exc, "message", None)
    if isinstance(message, str):
        parts.append(message)
    body = getattr(exc, "body", None)
    if body is not None:
        parts.append(str(body))
    return " ".join(parts)


def is_overflow(exc: BaseException) -> bool:
    """Whether a provider error means the prompt did not fit, by type or by wording anywhere
    in the exception chain (CTX-002)."""
    for link in _chain(exc):
        names = {cls.__name__ for cls in type(link).__mro__}
        if "ContextWindowExceededError" in names:
            return True
        if _OVERFLOW_WORDING.search(_text(link)):
            return True
    return False


def _headers_of(exc: BaseException) -> Mapping[str, Any] | None:
    for link in _chain(exc):
        for attr in ("litellm_response_headers", "headers"):
            headers = getattr(link, attr, None)
            if headers:
                return {str(k).lower(): v for k, v in dict(headers).items()}
        response = getattr(link, "response", None)
        headers = getattr(response, "headers", None)
        if headers:
            return {str(k).lower(): v for k, v in dict(headers).items()}
    return None


_RETRY_IN_TEXT = re.compile(r"try again in (\d+(?:\.\d+)?)\s*(ms|s|sec|seconds?)\b", re.IGNORECASE)


def retry_after_seconds(exc: BaseException, now: float | None = None) -> float | None:
    """Seconds the provider asked us to wait: `retry-after-ms`, `retry-after` (seconds or an
    HTTP date), or the "try again in Ns" wording OpenAI puts in the message."""
    headers = _headers_of(exc) or {}
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(float(raw_ms) / 1000.0, 0.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is not None:
        try:
            return max(float(raw), 0.0)
        except ValueError:
            parsed = email.utils.parsedate_to_datetime(str(raw)) if raw else None
            if parsed is not None:
                current = time.time() if now is None else now
                return max(parsed.timestamp() - current, 0.0)
    for link in _chain(exc):
        found = _RETRY_IN_TEXT.search(_text(link))
        if found:
            value = float(found.group(1))
            return value / 1000.0 if found.group(2).lower() == "ms" else value
    return None


def _status_of(exc: BaseException) -> int | None:
    for link in _chain(exc):
        status = getattr(link, "status_code", None)
        if isinstance(status, int) and status > 0:
            return status
    return None


@dataclass(frozen=True, slots=True)
class ProviderFailure:
    """What went wrong, in Treechat's terms. `message` is for a person and never holds a key;
    `detail` is the provider's own wording, redacted and shortened."""

    kind: ErrorKind
    retry: bool
    message: str
    retry_after: float | None = None
    status: int | None = None
    exception_type: str = ""
    detail: str = ""


class ProviderError(Exception):
    """Raised by the provider layer instead of the provider's exception, which may carry
    request details; the original is deliberately not chained."""

    def __init__(self, failure: ProviderFailure, partial_text: str = "") -> None:
        super().__init__(failure.message)
        self.failure = failure
        self.partial_text = partial_text

    @property
    def kind(self) -> ErrorKind:
        return self.failure.kind


_CONNECT_FAILURES = frozenset(
    {
        "ConnectError",
        "ConnectTimeout",
        "ClientConnectorError",
        "ClientConnectorDNSError",
        "ConnectionRefusedError",
        "gaierror",
    }
)


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _connect_failed(exc: BaseException) -> bool:
    """Whether the request never reached the provider (refused, unresolvable, timed out
    while connecting), anywhere in the chain."""
    return any(_names(link) & _CONNECT_FAILURES for link in _chain(exc))


def _cause(exc: BaseException) -> ErrorInfo | None:
    """A cause of `_CAUSES` anywhere in the chain, by class name or wording."""
    for link in _chain(exc):
        for names, wording, info in _CAUSES:
            if _names(link) & names or wording.search(_text(link)):
                return info
    return None


def _lookup(exc: BaseException) -> ErrorInfo | None:
    for link in _chain(exc):
        for cls in type(link).__mro__:
            info = TABLE.get(cls.__name__)
            if info is not None:
                return info
    return None


def _rate_message(base: str, wait: float | None) -> str:
    if wait is None:
        return base + " Wait a moment and try again."
    if wait < 1.5:
        return base + " Try again in a second."
    if wait < 90:
        return base + f" Try again in {round(wait)} seconds."
    return base + f" Try again in {round(wait / 60)} minutes."


def classify(exc: BaseException) -> ProviderFailure:
    """Map any exception from a provider call onto one row of the table."""
    if isinstance(exc, ProviderError):
        return exc.failure
    if isinstance(exc, asyncio.CancelledError):
        info: ErrorInfo | None = TABLE["CancelledError"]
    elif is_overflow(exc):
        info = TABLE["ContextWindowExceededError"]
    else:
        info = _cause(exc) or _lookup(exc)
        # litellm reports a refused connection as a server error; the chain says otherwise.
        if (
            info is not None
            and info.kind is ErrorKind.SERVER
            and "MidStreamFallbackError" not in _names(exc)
            and _connect_failed(exc)
        ):
            info = TABLE["ConnectError"]
    status = _status_of(exc)
    if info is None:
        by_status = _STATUS_KINDS.get(status or 0)
        if by_status is not None:
            retry = by_status in {ErrorKind.RATE_LIMIT, ErrorKind.OFFLINE}
            info = ErrorInfo(by_status, retry, MESSAGES[by_status])
        elif status is not None and status >= 500:
            info = ErrorInfo(ErrorKind.SERVER, True, MESSAGES[ErrorKind.SERVER])
        else:
            info = ErrorInfo(ErrorKind.SERVER, False, "The provider call failed unexpectedly.")
    wait = retry_after_seconds(exc) if info.kind is ErrorKind.RATE_LIMIT else None
    message = (
        _rate_message(info.message, wait) if info.kind is ErrorKind.RATE_LIMIT else info.message
    )
    detail = redact(" ".join(_text(exc).split()))[:400]
    return ProviderFailure(
        kind=info.kind,
        retry=info.retry,
        message=redact(message),
        retry_after=wait,
        status=status,
        exception_type=type(exc).__name__,
        detail=detail,
    )
