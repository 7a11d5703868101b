"""Count the stream lines litellm could not read, so a reply built around them is marked;
and stop a stream line that never ends.

litellm parses each `data:` line of a server-sent-event stream with `json.loads` and drops a
line that fails without a word: a stream with garbled lines looks complete. Its parser is
wrapped once, at import, to count such lines for the stream being read (a context variable,
so concurrent streams on the provider loop keep their own counts). Its line splitter holds a
line until it ends: a server that never ends one (an endless `data:` line) grew a `send` by
100 MB a second, so the splitter is wrapped too, to stop at `MAX_LINE_CHARS`. And it reads
on after the end marker (`data: [DONE]`) until the server closes the body: a server that
kept the connection open held a finished reply until the idle bound (two minutes), so the
stream ends at the marker.
"""

from __future__ import annotations

import contextvars
import io
from dataclasses import dataclass, field
from typing import Any

_SSE_FIELDS = (":", "event:", "id:", "retry:")
_installed = False
_capped = False

MAX_LINE_CHARS = 4_000_000
"""The longest stream line read: as long as the longest reply a model writes
(`deadline.MAX_REPLY_CHARS`); a server sends a reply in many lines, one piece in each."""


class LineTooLong(Exception):
    """A stream line ran past `MAX_LINE_CHARS` without ending."""


@dataclass
class Unreadable:
    count: int = 0
    samples: list[str] = field(default_factory=list)
    too_long: int = 0  # characters of the line that was stopped, if one was

    def add(self, line: str) -> None:
        self.count += 1
        if len(self.samples) < 3:
            self.samples.append(line[:120])


_current: contextvars.ContextVar[Unreadable | None] = contextvars.ContextVar(
    "treechat_unreadable_sse", default=None
)


def is_unreadable(line: str, parsed: Any) -> bool:
    """A line that carried data but could not be parsed (comments, event names and the
    end marker are not data)."""
    if parsed is not None:
        return False
    text = line.strip()
    if not text or text.startswith(_SSE_FIELDS):
        return False
    payload = text[5:].strip() if text.startswith("data:") else text
    return payload not in ("", "[DONE]")


# The parser of litellm's `BaseModelResponseIterator` that `install` wraps.
_PARSER = "_string_to_dict_parser"


# Its method that turns one line into a chunk, and its async step, that `install` wraps so
# the stream ends at the end marker.
_HANDLER = "_handle_string_chunk"
_ENDED = "_treechat_ended"


def is_end_marker(line: object) -> bool:
    """The line that ends an OpenAI-style stream (`data: [DONE]`)."""
    if not isinstance(line, str):
        return False
    text = line.strip()
    return text.startswith("data:") and text[5:].strip() == "[DONE]"


def install(iterator: type | None) -> None:
    """Wrap the SSE line parser of litellm's `BaseModelResponseIterator` (handed in by
    `llm`, litellm's one importer; idempotent; nothing happens if it moved), and end its
    streams at the end marker."""
    global _installed
    if _installed or iterator is None:
        return
    original = iterator.__dict__.get(_PARSER)
    if not isinstance(original, staticmethod):
        return
    parse = original.__func__
    _end_at_marker(iterator)

    def counting_parser(str_line: str) -> Any:
        parsed = parse(str_line)
        seen = _current.get()
        if seen is not None and isinstance(str_line, str) and is_unreadable(str_line, parsed):
            seen.add(str_line)
        return parsed

    setattr(iterator, _PARSER, staticmethod(counting_parser))
    _installed = True


def _end_at_marker(iterator: type) -> None:
    """After the end marker, the iterator's next step ends the stream (litellm then
    finishes it as a server's close would: the usage chunk, the body let go) instead of
    reading on until the server closes."""
    handle = iterator.__dict__.get(_HANDLER)
    step = iterator.__dict__.get("__anext__")
    if not callable(handle) or not callable(step):
        return

    def handle_line(self: Any, str_line: str) -> Any:
        chunk = handle(self, str_line)
        if is_end_marker(str_line):
            setattr(self, _ENDED, True)
        return chunk

    async def next_chunk(self: Any) -> Any:
        if getattr(self, _ENDED, False):
            raise StopAsyncIteration
        return await step(self)

    setattr(iterator, _HANDLER, handle_line)
    iterator.__anext__ = next_chunk  # type: ignore[attr-defined]


def install_line_cap(splitter: type | None) -> None:
    """Wrap `feed` of litellm's SSE line splitter (handed in by `llm`; idempotent; nothing
    happens if it moved) so a line held past `MAX_LINE_CHARS` is let go of and the stream
    ends with `LineTooLong`, recorded for the stream being read (litellm may wrap what it
    raises)."""
    global _capped
    if _capped or splitter is None:
        return
    feed = splitter.__dict__.get("feed")
    if not callable(feed):
        return

    def capped_feed(self: Any, text: str) -> Any:
        lines = feed(self, text)
        held = getattr(self, "_partial_line", None)
        size = held.tell() if isinstance(held, io.StringIO) else 0
        if size > MAX_LINE_CHARS:
            self._partial_line = io.StringIO()
            seen = _current.get()
            if seen is not None:
                seen.too_long = size
            raise LineTooLong(f"a stream line of more than {MAX_LINE_CHARS:,} characters")
        return lines

    splitter.feed = capped_feed  # type: ignore[attr-defined]
    _capped = True


def begin() -> Unreadable:
    """Count the unreadable lines of the stream this task reads from now on."""
    seen = Unreadable()
    _current.set(seen)
    return seen
