"""Token counting seam: the `TokenCounter` protocol, a content-hash cache, per-message framing
and character budgets calibrated on the text in hand. No tokenizer is imported here."""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

# Chat formats wrap every message in a few tokens of role markup and prime the reply with a
# few more; budgets that ignore this undercount long histories by thousands of tokens.
MESSAGE_FRAMING_TOKENS = 4
REPLY_PRIMING_TOKENS = 3
TOOL_CALL_FRAMING_TOKENS = 3
TOOL_SCHEMA_FRAMING_TOKENS = 8

# Up to this length the text itself is the key: Python caches a string's (content) hash on
# the object, so recounting the same rendered text costs one lookup, not a rehash. Longer
# texts are keyed by a digest so the cache does not pin megabytes of text.
_TEXT_KEY_CHARS = 65_536
# Characters of text the cache may hold as keys before evicting the oldest.
_MAX_KEY_CHARS = 16_000_000


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens the way the model will; `count_messages` includes per-message framing."""

    def count(self, text: str) -> int: ...

    def count_messages(self, messages: Iterable[Mapping[str, Any]]) -> int: ...


def message_parts(message: Mapping[str, Any]) -> list[str]:
    """Every piece of countable text in one OpenAI-format message (content text, tool-call
    names and arguments, name)."""
    parts: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, Mapping):
                text = block.get("text")
                if isinstance(text, str):
                    parts.append(text)
            elif isinstance(block, str):
                parts.append(block)
    name = message.get("name")
    if isinstance(name, str) and name:
        parts.append(name)
    for call in message.get("tool_calls") or ():
        fn = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(fn, Mapping):
            parts.append(str(fn.get("name") or ""))
            args = fn.get("arguments")
            parts.append(args if isinstance(args, str) else json.dumps(args, sort_keys=True))
    return parts


def message_tokens(message: Mapping[str, Any], count: Callable[[str], int]) -> int:
    """Tokens one message occupies, framing included."""
    total = MESSAGE_FRAMING_TOKENS
    for part in message_parts(message):
        total += count(part)
    total += TOOL_CALL_FRAMING_TOKENS * len(message.get("tool_calls") or ())
    return total


def messages_tokens(messages: Iterable[Mapping[str, Any]], count: Callable[[str], int]) -> int:
    """Tokens a list of messages occupies, reply priming included (0 for no messages)."""
    total = 0
    any_message = False
    for message in messages:
        any_message = True
        total += message_tokens(message, count)
    return total + REPLY_PRIMING_TOKENS if any_message else 0


def tools_tokens(tools: Iterable[Mapping[str, Any]], count: Callable[[str], int]) -> int:
    """Tokens the tool schemas occupy (they ride in every request)."""
    total = 0
    for tool in tools:
        total += TOOL_SCHEMA_FRAMING_TOKENS + count(
            json.dumps(tool, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        )
    return total


def estimated_tokens(text: str) -> int:
    """About how many tokens `text` takes, with no tables: four bytes of UTF-8 a token
    (OpenAI's four characters of English; other scripts, more bytes a character, are not
    undercounted as badly as by characters)."""
    return (len(text.encode("utf-8")) + 3) // 4


def content_key(text: str) -> str | bytes:
    """The cache key for a text: the text itself (hash cached on the object, equality checked
    on a hit) or, for very long text, a 128-bit digest of its content."""
    if len(text) <= _TEXT_KEY_CHARS:
        return text
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class CachedCounter:
    """Wraps a counting function with a bounded content-hash cache. A trim pass sizes every
    message on every call, so repeated text must not be re-tokenized."""

    __slots__ = ("_cache", "_chars", "_count", "_maxsize", "hits", "misses")

    def __init__(self, count: Callable[[str], int], maxsize: int = 65_536) -> None:
        self._count = count
        self._cache: OrderedDict[str | bytes, int] = OrderedDict()
        self._maxsize = maxsize
        self._chars = 0
        self.hits = 0
        self.misses = 0

    def count(self, text: str) -> int:
        if not text:
            return 0
        key = content_key(text)
        cached = self._cache.get(key)
        if cached is not None:
            self.hits += 1
            self._cache.move_to_end(key)
            return cached
        self.misses += 1
        value = self._count(text)
        self._cache[key] = value
        self._chars += len(key)
        while len(self._cache) > self._maxsize or self._chars > _MAX_KEY_CHARS:
            old, _ = self._cache.popitem(last=False)
            self._chars -= len(old)
        return value

    def count_messages(self, messages: Iterable[Mapping[str, Any]]) -> int:
        return messages_tokens(messages, self.count)


def chars_for_tokens(text: str, tokens: int, counter: TokenCounter) -> int:
    """How many leading characters of `text` fit in `tokens` tokens.

    Calibrated on this text (its own chars-per-token ratio, then verified with the
    counter), so code, prose and CJK each get their true budget rather than a fixed 4:1.
    Always returns n with counter.count(text[:n]) <= tokens.
    """
    if tokens <= 0 or not text:
        return 0
    total = counter.count(text)
    if total <= tokens:
        return len(text)
    ratio = len(text) / max(total, 1)
    hi = len(text)  # smallest known length that does not fit
    lo = 0  # largest known length that fits
    guess = max(1, min(hi - 1, int(tokens * ratio)))
    for _ in range(8):
        used = counter.count(text[:guess])
        if used <= tokens:
            lo = guess
            if used >= tokens - max(1, tokens // 200):
                break
            step = int((tokens - used) * ratio * 0.9) or 1
            guess = min(hi - 1, guess + step)
        else:
            hi = guess
            guess = max(lo, int(guess * tokens / used * 0.97))
        if guess <= lo or guess >= hi:
            break
    # Bisection closes whatever gap calibration left, so the bound above always holds.
    while hi - lo > max(1, lo // 256):
        mid = (lo + hi) // 2
        if counter.count(text[:mid]) <= tokens:
            lo = mid
        else:
            hi = mid
    return lo


OMITTED_MARKER = "\n[… {omitted} characters omitted …]\n"


def truncate_to_tokens(
    text: str, tokens: int, counter: TokenCounter, marker: str = OMITTED_MARKER
) -> str:
    """Keep the head and tail of `text` within `tokens` tokens, marking the cut."""
    if counter.count(text) <= tokens:
        return text
    room = max(0, tokens - counter.count(marker.format(omitted=len(text))) - 2)
    head_chars = chars_for_tokens(text, room * 2 // 3, counter)
    tail_budget = room - counter.count(text[:head_chars])
    rev = text[::-1]
    tail_chars = chars_for_tokens(rev, max(0, tail_budget), counter)
    tail_chars = min(tail_chars, len(text) - head_chars)
    omitted = len(text) - head_chars - tail_chars
    tail = text[-tail_chars:] if tail_chars else ""
    out = text[:head_chars] + marker.format(omitted=omitted) + tail
    # Token boundaries at the seams can add a token or two; trim the head until it fits.
    while counter.count(out) > tokens and head_chars > 0:
        head_chars = max(0, head_chars - max(1, head_chars // 16))
        omitted = len(text) - head_chars - tail_chars
        out = text[:head_chars] + marker.format(omitted=omitted) + (
            text[-tail_chars:] if tail_chars else ""
        )
    if counter.count(out) > tokens:
        return text[: chars_for_tokens(text, tokens, counter)]
    return out


def cut_head_tail(text: str, max_chars: int) -> str:
    """Character cap that keeps the start and the end (errors usually sit at the end)."""
    if len(text) <= max_chars:
        return text
    width = len(f"\n[… {len(text)} characters cut …]\n")
    keep = max(0, max_chars - width)
    head = keep * 2 // 3
    tail = keep - head
    marker = f"\n[… {len(text) - keep} characters cut …]\n"
    return text[:head] + marker + (text[-tail:] if tail else "")
