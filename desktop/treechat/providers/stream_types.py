"""What one streamed model call speaks: the request, the typed events it yields as the reply
arrives (text, reasoning, tool calls, the overflow retry, the end) and the result it returns."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import llm
from .errors import ProviderFailure


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of a tool call as it streams; `ToolCall` follows once it is complete."""

    index: int
    id: str | None
    name: str | None
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    index: int
    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> Any:
        """The arguments as JSON, or the raw string when the model wrote invalid JSON."""
        try:
            return json.loads(self.arguments) if self.arguments else {}
        except json.JSONDecodeError:
            return self.arguments


@dataclass(frozen=True, slots=True)
class Usage:
    """What the provider measured for one request. `prompt_tokens` is the total prompt,
    cached tokens included (a cached token still occupies the window; CTX-008)."""

    prompt_tokens: int
    cache_read: int = 0
    cache_write: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def uncached_prompt_tokens(self) -> int:
        return self.prompt_tokens - self.cache_read - self.cache_write


@dataclass(frozen=True, slots=True)
class OverflowRetry:
    """The provider said the prompt did not fit; the request is being sent once more with
    the history cut to `target_tokens` (half of what was sent)."""

    sent_history_tokens: int
    target_tokens: int
    messages_before: int
    messages_after: int
    failure: ProviderFailure


@dataclass(frozen=True, slots=True)
class Finished:
    """The stream ended normally. `usage` is None when the provider reported none (or an
    empty one): the caller keeps its last measurement."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage | None
    finish_reason: str | None
    attempts: int
    messages_sent: tuple[dict[str, Any], ...]
    unreadable_lines: int = 0  # stream lines that were not valid data (dropped by the parser)


StreamEvent = TextDelta | ReasoningDelta | ToolCallDelta | ToolCall | OverflowRetry | Finished


# --- request and result ---------------------------------------------------------------


@dataclass(frozen=True)
class TurnRequest:
    """One call to a model. `messages` are OpenAI-format dicts whose content blocks may carry
    `cache_control` (kept for Anthropic models only). The key is never shown in a repr."""

    model: str
    messages: Sequence[Mapping[str, Any]]
    tools: Sequence[Mapping[str, Any]] = ()
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    max_tokens: int | None = None
    temperature: float | None = None
    tool_choice: Any = None
    timeout: float | None = 600.0
    session_id: str = ""
    phase: str = "chat"
    lineage: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra headers the connection sends with every request."""
    connect_timeout: float | None = None
    """The connection's own setting: seconds allowed to connect and to receive the first
    byte (None: the default). A local server loading a model may want longer."""
    idle_timeout: float | None = None
    """Seconds the answer may fall silent between two chunks once it streams (None: the
    default for where the server is)."""
    total_timeout: float | None = None
    """Seconds one answer may take in all (None: the default, half an hour)."""

    @property
    def keyless(self) -> bool:
        """A server of our own choosing (api_base) with no key: no Authorization is sent."""
        return bool(self.api_base) and not self.api_key


@dataclass(frozen=True, slots=True)
class TurnResult:
    """The outcome of `stream_turn`. On failure `error` is set and `text`/`tool_calls` hold
    what arrived before it, so nothing streamed is lost."""

    model: str
    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: Usage | None
    cost: llm.Cost | None
    finish_reason: str | None
    attempts: int
    messages_sent: tuple[dict[str, Any], ...]
    error: ProviderFailure | None = None
    reasoning: str = ""
    unreadable_lines: int = 0  # the reply may be missing pieces: the stream had bad lines

    @property
    def ok(self) -> bool:
        return self.error is None
