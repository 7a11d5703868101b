"""Cutting a text into passages for retrieval: paragraphs, fenced code blocks and the sections
of a tool's result (a heading, a rule or a `[section]` line starts one), only tiny neighbours
(a heading and its first line) packed together and a long one cut at line breaks, then at
spaces. Passages stay about one paragraph: an embedding averages what a passage says, so a
fact packed among five unrelated paragraphs is lost in their average.

The passages are contiguous spans: joined in order they give the text back exactly, and each
knows where it starts, so a match names the characters it came from. Pure and deterministic:
the lexical and the semantic index cut a text the same way and share passage numbers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

TARGET_CHARS = 400
LABEL_CHARS = 80
MAX_CHARS = 1000

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
# A line that opens a section of its own: a Markdown heading, a rule, an INI/TOML-style
# `[section]`, a `==> file <==` banner (head, tail) or a `--- name ---` divider.
_SECTION = re.compile(r"^\s{0,3}(#{1,6}\s|[-=*_]{3,}\s*$|\[[^\]\n]{1,80}\]\s*$|==>|---\s\S)")


def _blocks(text: str) -> Iterator[tuple[int, int, bool]]:
    """(start, end, is_code) spans: paragraphs and whole fenced code blocks, each span taking
    the blank lines after it, so the spans cover the text."""
    lines = text.splitlines(keepends=True)
    start = pos = 0
    in_code = False
    fence = ""
    blank_run = False
    for line in lines:
        stripped = line.strip()
        if in_code:
            pos += len(line)
            if stripped.startswith(fence):
                in_code = False
                yield start, pos, True
                start = pos
            continue
        opens = _FENCE.match(line)
        if opens or (_SECTION.match(line) and pos > start) or (blank_run and stripped):
            if pos > start:
                yield start, pos, False
            start = pos
        blank_run = not stripped and pos > start
        pos += len(line)
        if opens:
            in_code, fence = True, opens.group(1)
            blank_run = False
    if pos > start:
        yield start, pos, in_code


def _cut(text: str, start: int, end: int, size: int) -> Iterator[tuple[int, int]]:
    """A span longer than `size` cut after a line break in the second half of each piece,
    else after a space, else hard."""
    while end - start > size:
        stop = start + size
        cut = text.rfind("\n", start + size // 2, stop)
        if cut < 0:
            cut = text.rfind(" ", start + size // 2, stop)
        at = cut + 1 if cut >= 0 else stop
        yield start, at
        start = at
    if end > start:
        yield start, end


def _is_label(text: str) -> bool:
    """A heading, a label or a section line: one short line that is not a sentence. It
    joins the passage after it, which it names."""
    body = text.strip()
    return (0 < len(body) <= LABEL_CHARS and "\n" not in body
            and not body.endswith((".", "!", "?")))


def chunk_spans(text: str, target: int = TARGET_CHARS,
                size: int = MAX_CHARS) -> Iterator[tuple[int, int]]:
    """(start, end) of each passage of `text`, in order, covering it."""
    pending: tuple[int, int] | None = None
    for start, end, _ in _blocks(text):
        for a, b in _cut(text, start, end, size):
            if pending is None:
                pending = (a, b)
            elif (b - pending[0] <= target and _is_label(text[pending[0]:pending[1]])) or (
                    not text[pending[0]:pending[1]].strip()):
                pending = (pending[0], b)
            else:
                yield pending
                pending = (a, b)
    if pending is not None:
        yield pending


def chunks(text: str, target: int = TARGET_CHARS,
           size: int = MAX_CHARS) -> Iterator[tuple[int, str]]:
    """(offset, passage) pieces of `text`, each at most `size` characters."""
    for a, b in chunk_spans(text, target, size):
        yield a, text[a:b]


# A passage is embedded as several units (sentences, or groups of lines for text without
# sentences), and matches by its best unit: a static embedding averages its tokens, so one
# sentence's meaning is lost in a paragraph of others.
UNITS_PER_PASSAGE = 16
UNIT_CHARS = 240
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|\n+")


def units(passage: str, *, most: int = UNITS_PER_PASSAGE,
          width: int = UNIT_CHARS) -> list[str]:
    """The passage's sentences (lines, for code and lists), a fragment joined to its
    neighbour up to `width` characters, at most `most` of them (the rest joins the last)."""
    out: list[str] = []
    for raw in _SENTENCE_END.split(passage):
        piece = raw.strip()
        if not piece:
            continue
        if out and (len(out[-1]) < 40 or len(piece) < 25) and len(out[-1]) + len(piece) < width:
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    if len(out) > most:
        out = [*out[:most - 1], " ".join(out[most - 1:])]
    return out or [passage.strip() or passage]
