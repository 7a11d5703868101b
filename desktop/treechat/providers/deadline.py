"""How long a provider may take to connect and send the first byte of its answer, how long
it may fall silent once it streams, and how long one answer may take in all.

A server that accepts the connection and then says nothing, or sends one piece and then
nothing, would otherwise hold a turn for as long as the HTTP client's read timeout (ten
minutes). Three bounds: connecting and the first streamed chunk; the silence between two
chunks (a slow stream that keeps talking is not cut); and the whole answer. A connection sets
its own first-byte bound (`TurnRequest.connect_timeout`) and a request its own silence and
total (`TurnRequest.idle_timeout`, `TurnRequest.total_timeout`); the first-byte defaults never
exceed two minutes.
"""

from __future__ import annotations

import asyncio
import ipaddress
from urllib.parse import urlsplit

from .errors import ErrorKind, ProviderFailure

FIRST_BYTE_TIMEOUT_S = 30.0
# A server on this machine may be loading a model into memory before its first token.
LOCAL_FIRST_BYTE_TIMEOUT_S = 120.0
MAX_DEFAULT_TIMEOUT_S = 120.0
# Silence allowed between two chunks once the answer streams; a local server gets longer (it
# may be swapping a model's layers on a small machine).
BETWEEN_CHUNKS_TIMEOUT_S = 90.0
LOCAL_BETWEEN_CHUNKS_TIMEOUT_S = 120.0
# One answer in all: a reply still streaming after this long is ended and kept as it is.
TOTAL_TIMEOUT_S = 1800.0
# No model writes a reply this long (about a million tokens); a server streaming past it is
# sending something else, and the reply so far is kept rather than grown until memory ends.
MAX_REPLY_CHARS = 4_000_000


def is_local(api_base: str | None) -> bool:
    if not api_base:
        return False
    host = (urlsplit(api_base).hostname or "").lower()
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def first_byte_timeout(setting: float | None, api_base: str | None) -> float:
    """The connection's own setting when it has one, else the default for where it is."""
    if setting is not None and setting > 0:
        return float(setting)
    return LOCAL_FIRST_BYTE_TIMEOUT_S if is_local(api_base) else FIRST_BYTE_TIMEOUT_S


def between_chunks_timeout(setting: float | None, api_base: str | None) -> float:
    if setting is not None and setting > 0:
        return float(setting)
    return LOCAL_BETWEEN_CHUNKS_TIMEOUT_S if is_local(api_base) else BETWEEN_CHUNKS_TIMEOUT_S


def total_timeout(setting: float | None) -> float:
    return float(setting) if setting is not None and setting > 0 else TOTAL_TIMEOUT_S


def _where(api_base: str | None, model: str) -> str:
    """Who failed to answer, as a failure names it: the server's host, else the model."""
    return urlsplit(api_base).netloc if api_base else model


def no_answer_failure(seconds: float, api_base: str | None, model: str) -> ProviderFailure:
    where = _where(api_base, model)
    return ProviderFailure(
        ErrorKind.OFFLINE,
        retry=True,
        message=(
            f"No answer from {where} within {seconds:g} s (it did not connect, or sent "
            "nothing back). Try again, or give this connection a longer timeout in Settings."
        ),
        exception_type="FirstByteTimeout",
    )


def stalled_failure(
    which: str, seconds: float, api_base: str | None, model: str
) -> ProviderFailure:
    """The answer had started and then stopped coming (`which` is "idle"), or ran past the
    whole answer's bound ("total"). What streamed is kept by the caller."""
    where = _where(api_base, model)
    if which == "total":
        said = f"{where} was still answering after {seconds:g} s, the most one answer may take"
    else:
        said = f"{where} stopped sending for {seconds:g} s in the middle of its answer"
    return ProviderFailure(
        ErrorKind.OFFLINE,
        retry=True,
        message=f"{said}; the reply so far is kept. Try again, or continue the reply.",
        exception_type="StreamStalled" if which != "total" else "StreamTooLong",
    )


def too_long_failure(received: int, api_base: str | None, model: str) -> ProviderFailure:
    where = _where(api_base, model)
    return ProviderFailure(
        ErrorKind.SERVER,
        retry=False,
        message=(
            f"{where} sent more than {MAX_REPLY_CHARS:,} characters in one reply, more than "
            "any model writes; it was stopped there and the reply so far is kept."
        ),
        exception_type="ReplyTooLong",
    )


def long_line_failure(chars: int, api_base: str | None, model: str) -> ProviderFailure:
    where = _where(api_base, model)
    return ProviderFailure(
        ErrorKind.SERVER,
        retry=False,
        message=(
            f"{where} sent a line of more than {chars:,} characters in its stream without "
            "ending it, longer than any reply; it was stopped there and the reply so far is "
            "kept."
        ),
        exception_type="StreamLineTooLong",
    )


class StreamDeadline:
    """Cancels the current task when the answer does not start within `first_byte` seconds,
    then when it falls silent for `idle` seconds between two chunks, or runs past `total`.

    Call `arrived()` on every chunk and `done()` when the stream ends; in the task's
    `except CancelledError`, `absorb()` says whether the cancel was the deadline's (and takes
    it back), or the caller's; `which` then says which bound it was."""

    def __init__(self, first_byte: float, idle: float | None = None,
                 total: float | None = None) -> None:
        self.first_byte = first_byte
        self.idle = idle
        self.total = total
        self.expired = False
        self.which = ""
        self.started = False
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("StreamDeadline needs a running task")
        self._task = task
        self._loop = asyncio.get_running_loop()
        self._handle: asyncio.TimerHandle | None = self._loop.call_later(
            first_byte, self._fire, "first_byte"
        )
        self._total: asyncio.TimerHandle | None = (
            self._loop.call_later(total, self._fire, "total") if total is not None else None
        )

    @property
    def seconds(self) -> float:
        """The bound that ended the stream, in seconds."""
        return {"idle": self.idle, "total": self.total}.get(self.which) or self.first_byte

    def _fire(self, which: str) -> None:
        if self.expired:
            return
        self.expired = True
        self.which = which
        self.done()
        self._task.cancel()

    def arrived(self) -> None:
        self.started = True
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self.idle is not None and not self.expired:
            self._handle = self._loop.call_later(self.idle, self._fire, "idle")

    def done(self) -> None:
        for handle in (self._handle, self._total):
            if handle is not None:
                handle.cancel()
        self._handle = self._total = None

    def absorb(self) -> bool:
        if not self.expired:
            return False
        self._task.uncancel()
        return True
