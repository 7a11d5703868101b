"""Prompt-cache divergence diagnostics (CTX-007): fingerprint each request and log the earliest
place it stopped matching the previous request of the same session, phase and lineage.

Off by default. Scoping is load-bearing: without phase and lineage, unrelated calls that happen
to share a session would be diffed against each other and every first call would "diverge".
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("treechat.providers.cache")

ENV_FLAG = "TREECHAT_CACHE_DIAGNOSTICS"
_MAX_KEYS = 256


def _strip_marks(value: Any) -> Any:
    """The value without `cache_control`: moving a breakpoint does not change the prefix."""
    if isinstance(value, dict):
        return {k: _strip_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip_marks(v) for v in value]
    return value


def _canonical(value: Any) -> str:
    return json.dumps(_strip_marks(value), sort_keys=True, ensure_ascii=False, default=str)


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """Hashes of the parts of a request in the order a provider caches them, with the token
    size of each part so a divergence can say how much cache it cost."""

    model: str
    system: str
    tools: str
    messages: tuple[str, ...]
    system_tokens: int
    tools_tokens: int
    message_tokens: tuple[int, ...]

    @property
    def total_tokens(self) -> int:
        return self.system_tokens + self.tools_tokens + sum(self.message_tokens)


@dataclass(frozen=True, slots=True)
class Divergence:
    """The earliest part of a request that differs from the previous one in its scope.
    `part` is "model", "tools", "system" or "message"; `index` is the message number for
    "message"; `tokens` is how much of the previous prefix can no longer be read from cache."""

    part: str
    index: int | None
    tokens: int

    def describe(self) -> str:
        where = f"message {self.index}" if self.part == "message" else self.part
        return f"{where} changed, ~{self.tokens} tokens behind it no longer cached"


def fingerprint(
    model: str,
    messages: Sequence[dict[str, Any]],
    tools: Sequence[dict[str, Any]] | None,
    count: Callable[[str], int],
) -> Fingerprint:
    system_parts = [m for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    system_text = _canonical(system_parts)
    tools_text = _canonical(list(tools or []))
    rendered = [_canonical(m) for m in rest]
    return Fingerprint(
        model=model,
        system=_digest(system_text),
        tools=_digest(tools_text),
        messages=tuple(_digest(t) for t in rendered),
        system_tokens=count(system_text) if system_parts else 0,
        tools_tokens=count(tools_text) if tools else 0,
        message_tokens=tuple(count(t) for t in rendered),
    )


def earliest_divergence(previous: Fingerprint, current: Fingerprint) -> Divergence | None:
    """Where `current` stops extending `previous`, in the order providers cache (tools ahead
    of the system prompt, then messages); None when it extends it unchanged."""
    if previous.model != current.model:
        return Divergence("model", None, previous.total_tokens)
    if previous.tools != current.tools:
        return Divergence("tools", None, previous.total_tokens)
    if previous.system != current.system:
        return Divergence("system", None, previous.total_tokens - previous.tools_tokens)
    for i, old in enumerate(previous.messages):
        if i >= len(current.messages) or current.messages[i] != old:
            return Divergence("message", i, sum(previous.message_tokens[i:]))
    return None


def lineage_of(messages: Sequence[dict[str, Any]]) -> str:
    """The conversation a request belongs to: a hash of its opening non-system message."""
    for message in messages:
        if message.get("role") != "system":
            return _digest(_canonical(message))
    return ""


class CacheDiagnostics:
    """Remembers the last fingerprint per (session, phase, lineage) and logs divergences."""

    def __init__(self, enabled: bool | None = None, logger: logging.Logger | None = None) -> None:
        if enabled is None:
            enabled = os.environ.get(ENV_FLAG, "").lower() in {"1", "true", "yes", "on"}
        self.enabled = enabled
        self._log = logger or log
        self._last: OrderedDict[tuple[str, str, str], Fingerprint] = OrderedDict()

    def observe(
        self,
        *,
        session_id: str,
        phase: str,
        model: str,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None,
        count: Callable[[str], int],
        lineage: str | None = None,
    ) -> Divergence | None:
        """Record this request; return (and log) its earliest divergence from the previous
        request in the same scope. Does nothing while disabled."""
        if not self.enabled:
            return None
        key = (session_id, phase, lineage if lineage is not None else lineage_of(messages))
        current = fingerprint(model, messages, tools, count)
        previous = self._last.pop(key, None)
        self._last[key] = current
        while len(self._last) > _MAX_KEYS:
            self._last.popitem(last=False)
        if previous is None:
            return None
        found = earliest_divergence(previous, current)
        if found is not None:
            self._log.info(
                "cache divergence session=%s phase=%s lineage=%s: %s",
                session_id,
                phase,
                key[2],
                found.describe(),
            )
        return found
