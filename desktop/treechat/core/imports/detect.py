"""Which app wrote an export, from the shape of its parsed JSON, and reading it as such."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from . import aistudio, chatgpt, claude, deepseek, grok, librechat, openwebui, treechat
from .model import ImportedConversation, ImportFileError, ParsedExport, Skipped

FORMAT_NAMES: dict[str, str] = {
    treechat.FORMAT: "Treechat",
    chatgpt.FORMAT: "ChatGPT",
    claude.FORMAT: "Claude.ai",
    deepseek.FORMAT: "DeepSeek",
    grok.FORMAT: "Grok",
    aistudio.FORMAT: "Google AI Studio",
    openwebui.FORMAT: "Open WebUI",
    librechat.FORMAT: "LibreChat",
}

# Most specific first: DeepSeek's `mapping` is told from ChatGPT's by its `fragments`.
_PROBES: tuple[tuple[str, Callable[[Any], bool]], ...] = (
    (treechat.FORMAT, treechat.looks_like),
    (deepseek.FORMAT, deepseek.looks_like),
    (chatgpt.FORMAT, chatgpt.looks_like),
    (claude.FORMAT, claude.looks_like),
    (grok.FORMAT, grok.looks_like),
    (aistudio.FORMAT, aistudio.looks_like),
    (openwebui.FORMAT, openwebui.looks_like),
    (librechat.FORMAT, librechat.looks_like),
)

_PARSERS: dict[str, Callable[[Any, int], ParsedExport]] = {
    treechat.FORMAT: treechat.parse,
    chatgpt.FORMAT: chatgpt.parse,
    claude.FORMAT: claude.parse,
    deepseek.FORMAT: deepseek.parse,
    grok.FORMAT: grok.parse,
    aistudio.FORMAT: aistudio.parse,
    openwebui.FORMAT: openwebui.parse,
    librechat.FORMAT: librechat.parse,
}

KNOWN = ("ChatGPT (conversations.json or its zip), Claude.ai, DeepSeek, Grok, Google AI Studio, "
         "LibreChat, Open WebUI or Treechat")

# How many conversations of a list to look at: enough to get past a damaged first entry.
SAMPLE = 50


def decode_json(raw: bytes | str, name: str = "the file") -> Any:
    """Parse JSON text, turning a damaged or truncated file into a clear `ImportFileError`."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ImportFileError(
                f"{name} is not a text export (it is not UTF-8). Choose the JSON file or the "
                "zip the app gave you."
            ) from None
    if not raw.strip():
        raise ImportFileError(f"{name} is empty.")
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        # An unterminated string can only end at the end of the input.
        at_end = exc.pos >= len(raw.rstrip()) - 1 or exc.msg.startswith("Unterminated string")
        why = "it ends too early (truncated?)" if at_end else "it is damaged"
        raise ImportFileError(
            f"{name} is not valid JSON: {why} — {exc.msg} (line {exc.lineno}, "
            f"column {exc.colno})."
        ) from None
    except ValueError as exc:  # a value JSON allows and Python will not make
        raise ImportFileError(unreadable_value(name, exc)) from None


def unreadable_value(name: str, exc: ValueError) -> str:
    """One line for JSON that parses but holds a value Python will not make: a number of
    more digits than it converts (4,300), which no chat export holds."""
    if "integer string conversion" in str(exc):
        return (f"{name} holds a number of more than {sys.get_int_max_str_digits():,} digits, "
                "which no chat export has (a damaged or hostile file)")
    return f"{name} holds a value that cannot be read ({exc})"


def detect_format(data: Any) -> str:
    """The format id ("chatgpt", "claude", "librechat", "openwebui", "treechat") of parsed
    export JSON, or `ImportFileError` saying what is readable."""
    if isinstance(data, list):
        if not data:
            raise ImportFileError("The file holds an empty list: there are no conversations in it.")
        sample = data[:SAMPLE]
    elif isinstance(data, dict):
        sample = [data]
    else:
        raise ImportFileError(f"This is not a chat export (the JSON is a {type(data).__name__}). "
                              f"Treechat reads {KNOWN} exports.")
    fmt = probe_format(sample)
    if fmt is None:
        raise ImportFileError(f"Treechat does not recognise this file's format. It reads "
                              f"{KNOWN} exports.")
    return fmt


def probe_format(sample: list[Any]) -> str | None:
    """The format one of `sample`'s conversations has, if any is recognised."""
    for fmt, probe in _PROBES:
        if any(probe(item) for item in sample):
            return fmt
    return None


def parse_export(
    data: Any, fmt: str | None = None, *, first_index: int = 0
) -> ParsedExport:
    """Read parsed export JSON into conversations, detecting the format unless given.
    `first_index` numbers the conversations of a list read in pieces (conversations without
    an id of their own are named by their place in the file)."""
    try:
        fmt = fmt or detect_format(data)
    except RecursionError:
        raise ImportFileError(TOO_DEEP) from None
    try:
        parser = _PARSERS[fmt]
    except KeyError:
        raise ImportFileError(f"unknown import format {fmt!r}") from None
    try:
        parsed = parser(data, first_index)
    except _MALFORMED as exc:
        if not isinstance(data, list):
            raise ImportFileError(_why_unreadable(exc)) from None
        parsed = _one_by_one(parser, fmt, data, first_index)
    return _without_deep_values(parsed)


TOO_DEEP = "a value in this file is nested too deeply to read (a damaged or hostile export)"
# What a parser meets in an entry of the wrong shape (a list where an object belongs, a
# missing field, a value nested past the stack): that entry is skipped, with the reason.
_MALFORMED = (RecursionError, TypeError, AttributeError, KeyError, IndexError, ValueError)


def _why_unreadable(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return TOO_DEEP
    return ("this export is damaged: a field holds a value of the wrong kind "
            f"({type(exc).__name__}), so it cannot be read")
# Past this depth a stored node's input, output or metadata is not kept: JSON this deep is
# no chat app's, and writing or reading it would overflow the stack.
MAX_VALUE_DEPTH = 200


def _one_by_one(
    parser: Callable[[Any, int], ParsedExport], fmt: str, data: list[Any], first_index: int
) -> ParsedExport:
    """The conversations of a list read one at a time, so one that cannot be read is skipped
    and the others are kept."""
    conversations: list[ImportedConversation] = []
    skipped: list[Skipped] = []
    for offset, item in enumerate(data):
        try:
            part = parser([item], first_index + offset)
        except _MALFORMED as exc:
            skipped.append(Skipped(f"conversation {first_index + offset + 1}: "
                                   f"{_why_unreadable(exc)}", ""))
            continue
        conversations.extend(part.conversations)
        skipped.extend(part.skipped)
    return ParsedExport(fmt, tuple(conversations), tuple(skipped))


def _without_deep_values(parsed: ParsedExport) -> ParsedExport:
    kept: list[ImportedConversation] = []
    skipped = list(parsed.skipped)
    for conversation in parsed.conversations:
        if any(depth_over(value, MAX_VALUE_DEPTH)
               for node in conversation.nodes
               for value in (node.input, node.output, node.metadata)):
            skipped.append(Skipped(f"a message holds a value nested deeper than "
                                   f"{MAX_VALUE_DEPTH} levels", conversation.source_id,
                                   conversation.title))
        else:
            kept.append(conversation)
    kept = _distinct_ids(kept)
    if len(kept) == len(parsed.conversations) and all(
            a is b for a, b in zip(kept, parsed.conversations, strict=True)):
        return parsed
    return ParsedExport(parsed.source_format, tuple(kept), tuple(skipped))


def _distinct_ids(conversations: list[ImportedConversation]) -> list[ImportedConversation]:
    """Two conversations of one file that share an id are two chats, not one: the later ones
    get the id with `#2`, `#3`… (the same every time the file is read, so a second import
    still finds them imported)."""
    seen: dict[str, int] = {}
    out: list[ImportedConversation] = []
    for conversation in conversations:
        count = seen.get(conversation.source_id, 0) + 1
        seen[conversation.source_id] = count
        out.append(conversation if count == 1 else
                   replace(conversation, source_id=f"{conversation.source_id}#{count}"))
    return out


def depth_over(value: Any, limit: int) -> bool:
    """Whether lists and objects nest deeper than `limit` in `value` (walked without
    recursion, so any depth is measured safely)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
