"""Window and budget math: the four-way split of a model's window (system / history / tools /
output reserve, with a safety margin and per-message framing) and fitting a whole request."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .tokens import (
    MESSAGE_FRAMING_TOKENS,
    REPLY_PRIMING_TOKENS,
    TokenCounter,
    message_tokens,
    truncate_to_tokens,
)

# A conversation message cut below this many tokens says nothing useful.
MIN_MESSAGE_TOKENS = 32


class ContextOverflowError(ValueError):
    """The request cannot fit the model's window whatever is dropped from the history."""

    def __init__(self, message: str, *, needed: int, window: int) -> None:
        super().__init__(message)
        self.needed = needed
        self.window = window


@dataclass(frozen=True, slots=True)
class BudgetConfig:
    """Limits in tokens. The window is a ceiling, not a target: a 1M-token model must not
    silently multiply per-call cost, so `max_history_tokens` applies whatever the window."""

    max_history_tokens: int = 64_000
    history_share: float = 0.6
    max_output_tokens: int = 8_192
    output_share: float = 0.25
    min_output_tokens: int = 256
    safety_margin_share: float = 0.03
    min_safety_margin: int = 128


@dataclass(frozen=True, slots=True)
class Budget:
    """One request's split of the window."""

    window: int
    system: int
    tools: int
    output_reserve: int
    safety_margin: int
    history: int

    @property
    def prompt_allowance(self) -> int:
        """Most prompt tokens the request may carry (system + tools + history)."""
        return self.window - self.output_reserve - self.safety_margin

    @property
    def room_for_history(self) -> int:
        """What the window leaves for history once everything else is placed."""
        return max(0, self.prompt_allowance - self.system - self.tools)


def output_reserve(window: int, config: BudgetConfig = BudgetConfig()) -> int:
    """Tokens reserved for the reply: a share of the window, capped, never below a floor."""
    share = int(window * config.output_share)
    return max(min(config.min_output_tokens, window // 2), min(config.max_output_tokens, share))


def safety_margin(window: int, config: BudgetConfig = BudgetConfig()) -> int:
    """Slack for tokenizer drift between our count and the provider's."""
    return min(window // 8, max(config.min_safety_margin, int(window * config.safety_margin_share)))


def history_budget(window: int, config: BudgetConfig = BudgetConfig()) -> int:
    """min(configured max, window × share): the history ceiling before the split."""
    return max(0, min(config.max_history_tokens, int(window * config.history_share)))


def plan_budget(
    window: int,
    *,
    system_tokens: int,
    tools_tokens: int,
    config: BudgetConfig = BudgetConfig(),
) -> Budget:
    """Split `window` four ways. The reply reserve shrinks (to its floor) before the history
    budget goes negative; if system prompt and tools alone leave no room, that is an error
    the user must see, not a crash or a silently failing request."""
    if window <= 0:
        raise ValueError(f"window must be positive, got {window}")
    margin = safety_margin(window, config)
    reserve = output_reserve(window, config)
    floor = min(config.min_output_tokens, reserve)
    fixed = system_tokens + tools_tokens + REPLY_PRIMING_TOKENS
    if fixed + margin + floor + MIN_MESSAGE_TOKENS > window:
        raise ContextOverflowError(
            f"The system prompt and tool schemas need {fixed:,} tokens, which leaves no room "
            f"for the conversation in this model's {window:,}-token window "
            f"(keeping {floor:,} for the reply and {margin:,} as margin). Shorten the "
            "instructions or memory, disable some tools, or pick a model with a larger window.",
            needed=fixed + margin + floor + MIN_MESSAGE_TOKENS,
            window=window,
        )
    reserve = max(floor, min(reserve, window - fixed - margin - MIN_MESSAGE_TOKENS))
    room = window - fixed - reserve - margin
    history = max(0, min(history_budget(window, config), room))
    return Budget(
        window=window,
        system=system_tokens,
        tools=tools_tokens,
        output_reserve=reserve,
        safety_margin=margin,
        history=history,
    )


@dataclass(frozen=True, slots=True)
class FitResult:
    """A request cut to fit: the messages, which input indexes survive (in order), which of
    those had their content cut, and the messages' token count (framing and priming in)."""

    messages: tuple[dict[str, Any], ...]
    kept: tuple[int, ...]
    truncated: tuple[int, ...]
    tokens: int
    dropped: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.truncated) or self.dropped > 0


def leading_system(messages: Sequence[Mapping[str, Any]]) -> int:
    """How many messages at the start are system messages (kept whole by every cut)."""
    n = 0
    while n < len(messages) and messages[n].get("role") == "system":
        n += 1
    return n


def fit_to_window(
    messages: Sequence[Mapping[str, Any]],
    *,
    window: int,
    counter: TokenCounter,
    tools_tokens: int = 0,
    max_output_tokens: int = 0,
    config: BudgetConfig = BudgetConfig(),
    sizes: Sequence[int] | None = None,
) -> FitResult:
    """Fit the whole request (messages + tools + reply allowance + margin) into `window`.

    Leading system messages are kept whole; the conversation is trimmed oldest first with
    tool pairing kept valid; a single message too large for the room is cut head and tail.
    Raises `ContextOverflowError` when the system prompt and tools alone do not fit.
    `sizes`, when given, are the messages' token counts (saves counting them again).
    """
    if sizes is None:
        sizes = [message_tokens(m, counter.count) for m in messages]
    margin = safety_margin(window, config)
    n_sys = leading_system(messages)
    sys_tokens = sum(sizes[:n_sys])
    fixed = sys_tokens + tools_tokens + REPLY_PRIMING_TOKENS
    room = window - max_output_tokens - margin - fixed
    has_history = len(messages) > n_sys
    if room < (MIN_MESSAGE_TOKENS if has_history else 0):
        raise ContextOverflowError(
            f"The system prompt and tool schemas need {fixed:,} tokens; with "
            f"{max_output_tokens:,} reserved for the reply this model's {window:,}-token "
            "window has no room left for the conversation. Shorten the instructions or "
            "memory, disable some tools, or pick a model with a larger window.",
            needed=fixed + max_output_tokens + margin + (MIN_MESSAGE_TOKENS if has_history else 0),
            window=window,
        )
    kept, truncated, history = _fit_suffix(messages, n_sys, room, counter, sizes)
    out = tuple(dict(m) for m in messages[:n_sys]) + history
    tokens = fixed - tools_tokens + sum(
        message_tokens(m, counter.count) if i in truncated else sizes[i]
        for i, m in zip(kept, history, strict=True)
    )
    return FitResult(
        messages=out,
        kept=tuple(range(n_sys)) + kept,
        truncated=truncated,
        tokens=tokens if out else 0,
        dropped=len(messages) - len(out),
    )


def shrink_history(
    messages: Sequence[Mapping[str, Any]], target_tokens: int, counter: TokenCounter
) -> tuple[dict[str, Any], ...]:
    """The overflow retry: keep the system messages and the newest conversation that fits
    `target_tokens` (history halved relative to what was sent, computed by the caller)."""
    n_sys = leading_system(messages)
    _, _, history = _fit_suffix(messages, n_sys, max(MIN_MESSAGE_TOKENS, target_tokens), counter)
    return tuple(dict(m) for m in messages[:n_sys]) + history


def history_tokens(messages: Sequence[Mapping[str, Any]], counter: TokenCounter) -> int:
    """Tokens of the conversation part (everything after the leading system messages)."""
    n_sys = leading_system(messages)
    return sum(message_tokens(m, counter.count) for m in messages[n_sys:])


def _fit_suffix(
    messages: Sequence[Mapping[str, Any]], start: int, room: int, counter: TokenCounter,
    sizes: Sequence[int] | None = None,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[dict[str, Any], ...]]:
    """The newest messages from `start` on that fit `room`, starting on a valid boundary."""
    if start >= len(messages):
        return (), (), ()
    if sizes is None:
        sizes = [message_tokens(m, counter.count) for m in messages]
    used = 0
    first = len(messages)
    for i in range(len(messages) - 1, start - 1, -1):
        size = sizes[i]
        if used + size > room:
            break
        used += size
        first = i
    # A tool result without the assistant message that called it is a protocol error.
    while first < len(messages) and messages[first].get("role") == "tool":
        first += 1
    # Start on a user message when the kept part has one (some providers require it).
    for j in range(first, len(messages)):
        if messages[j].get("role") == "user":
            first = j
            break
    kept = list(range(first, len(messages)))
    out = [dict(messages[i]) for i in kept]
    truncated: list[int] = []
    if not kept:
        # Even the newest message alone is too big: keep it, cut to the room.
        last = len(messages) - 1
        while last > start and messages[last].get("role") == "tool":
            last -= 1
        message = dict(messages[last])
        if message.get("role") == "tool" or message.get("tool_calls"):
            message = _as_text(message)
        out = [_cut_message(message, room, counter)]
        kept = [last]
        truncated = [last]
    return tuple(kept), tuple(truncated), tuple(out)


def _as_text(message: dict[str, Any]) -> dict[str, Any]:
    """A tool call or result whose partner cannot be sent becomes plain user text."""
    parts = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        parts.extend(str(b.get("text", "")) for b in content if isinstance(b, Mapping))
    for call in message.get("tool_calls") or ():
        fn = call.get("function", {})
        parts.append(f"[called {fn.get('name', '')}({fn.get('arguments', '')})]")
    return {"role": "user", "content": "\n".join(p for p in parts if p)}


def _cut_message(message: dict[str, Any], room: int, counter: TokenCounter) -> dict[str, Any]:
    budget = max(1, room - MESSAGE_FRAMING_TOKENS)
    content = message.get("content")
    if isinstance(content, str):
        message["content"] = truncate_to_tokens(content, budget, counter)
    elif isinstance(content, list):
        blocks = [dict(b) if isinstance(b, Mapping) else b for b in content]
        texts = [
            i for i, b in enumerate(blocks)
            if isinstance(b, dict) and isinstance(b.get("text"), str)
        ]
        if texts:
            other = sum(counter.count(blocks[i]["text"]) for i in texts[:-1])
            if other >= budget:
                for i in texts[:-1]:
                    blocks[i]["text"] = ""
                other = 0
            last = texts[-1]
            blocks[last]["text"] = truncate_to_tokens(blocks[last]["text"], budget - other, counter)
        message["content"] = blocks
    return message
