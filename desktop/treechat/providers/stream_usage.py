"""The usage a streamed call reports: litellm's usage object read into a `Usage`, and whether
the provider measured it or litellm only estimated it."""

from __future__ import annotations

from typing import Any

from . import llm
from .stream_types import Usage


def usage_from(raw: Any) -> Usage | None:
    """A `Usage` from litellm's usage object, or None when it is empty."""
    if raw is None:
        return None

    def num(obj: Any, *names: str) -> int:
        for name in names:
            value = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
            if isinstance(value, int | float) and value:
                return int(value)
        return 0

    prompt = num(raw, "prompt_tokens")
    output = num(raw, "completion_tokens")
    if prompt <= 0 and output <= 0:
        return None
    details = (
        raw.get("prompt_tokens_details")
        if isinstance(raw, dict)
        else getattr(raw, "prompt_tokens_details", None)
    )
    read = num(raw, "cache_read_input_tokens") or (num(details, "cached_tokens") if details else 0)
    write = num(raw, "cache_creation_input_tokens") or (
        num(details, "cache_creation_tokens", "cache_write_tokens") if details else 0
    )
    out_details = (
        raw.get("completion_tokens_details")
        if isinstance(raw, dict)
        else getattr(raw, "completion_tokens_details", None)
    )
    reasoning = num(out_details, "reasoning_tokens") if out_details else 0
    read, write = llm.clamp_cache_details(prompt, read, write)
    return Usage(prompt, read, write, output, reasoning)


def provider_reported_usage(response: Any) -> bool:
    """Whether the usage came from the provider. litellm fills in its own estimate when a
    server sends none; an estimate is not a measurement."""
    chunks = getattr(response, "chunks", None)
    if not isinstance(chunks, list):
        return True
    return any(getattr(c, "usage", None) is not None for c in chunks)


KEEP_EVERY = 256  # chunks streamed between two trims of what litellm keeps


def forget_streamed_chunks(response: Any) -> None:
    """Drop what litellm keeps of a stream that nothing reads. Its stream wrapper keeps every
    chunk (about 3.2 KB each: a 16,000-token reply holds 50 MB until it ends, once per reply
    streaming at the same time) to build a whole response for its logging, which is not used
    here. What is read of them stays: the first chunk, the chunks that carry usage (read at
    the end, here and by litellm), and the last two (litellm's check for a repeating
    stream). No setting of litellm turns the keeping off."""
    chunks = getattr(response, "chunks", None)
    if not isinstance(chunks, list) or len(chunks) <= KEEP_EVERY:
        return
    middle = [c for c in chunks[1:-2] if getattr(c, "usage", None) is not None]
    chunks[:] = [chunks[0], *middle, *chunks[-2:]]
