"""How long a provider may take to connect and send the first byte of its answer.

A server that accepts the connection and then says nothing would otherwise hold a turn for
as long as the HTTP client's read timeout (ten minutes). The deadline covers connecting and
waiting for the first streamed chunk; once the answer streams, it is lifted (a long reply is
not a slow server). A connection sets its own (`TurnRequest.connect_timeout`); the defaults
never exceed two minutes.
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


def no_answer_failure(seconds: float, api_base: str | None, model: str) -> ProviderFailure:
    where = urlsplit(api_base).netloc if api_base else model
    return ProviderFailure(
        ErrorKind.OFFLINE,
        retry=True,
        message=(
            f"No answer from {where} within {seconds:g} s (it did not connect, or sent "
            "nothing back). Try again, or give this connection a longer timeout in Settings."
        ),
        exception_type="FirstByteTimeout",
    )


class FirstByteDeadline:
    """Cancels the current task if nothing has arrived after `seconds`.

    Call `arrived()` on the first chunk; in the task's `except CancelledError`, `absorb()`
    says whether the cancel was the deadline's (and takes it back), or the caller's."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("FirstByteDeadline needs a running task")
        self._task = task
        self._handle: asyncio.TimerHandle | None = asyncio.get_running_loop().call_later(
            seconds, self._fire
        )

    def _fire(self) -> None:
        self._handle = None
        self.expired = True
        self._task.cancel()

    def arrived(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def absorb(self) -> bool:
        if not self.expired:
            return False
        self._task.uncancel()
        return True
