"""A knowledge file's text as passages, each with the page and line it starts at: plain text,
Markdown and code as they are, HTML without its markup (the standard library's parser; script
and style left out), PDF page by page through PDFium (the attachments' reader)."""

from __future__ import annotations

import html.parser
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from ...core.bounded_read import Bounds, ReadLimitError, read_path
from ...core.chunking import chunks
from ..attachments import AttachmentError, pdf_pages_text

MAX_FILE_BYTES = 50 * 1024 * 1024
# A file on a slow network share still reads in this; one that stalls this long is passed over.
READ_BOUNDS = Bounds(cap=MAX_FILE_BYTES, deadline=120.0, idle=30.0)
MAX_PDF_PAGES = 5000
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})


class ExtractError(ValueError):
    """A file that cannot be read as text (binary, damaged, too large)."""


class _Text(html.parser.HTMLParser):
    _SKIP = frozenset({"script", "style", "template", "noscript"})
    _BLOCK = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6",
                        "pre", "section", "article", "table", "blockquote"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skipping += 1
        elif tag in self._BLOCK:
            self.parts.append("\n\n" if tag != "br" else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self._skipping:
            self._skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def html_text(source: str) -> str:
    parser = _Text()
    parser.feed(source)
    parser.close()
    lines = [" ".join(line.split()) for line in "".join(parser.parts).split("\n")]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip() + "\n"


def _decode(data: bytes, name: str) -> str:
    if b"\x00" in data[:8192]:
        raise ExtractError(f"{name} is not a text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _with_lines(text: str, page: int) -> Iterator[tuple[int, int, str]]:
    line = 1
    last = 0
    for offset, piece in chunks(text):
        line += text.count("\n", last, offset)
        last = offset
        if piece.strip():
            yield page, line, piece


def file_passages(path: Path) -> list[tuple[int, int, str]]:
    """(page, line, text) of every passage of the file (page 0 for a file without pages)."""
    info = os.stat(path)  # through a link, as the read will go
    if not stat.S_ISREG(info.st_mode):  # a pipe waits for a writer, a device never ends
        raise ExtractError(f"{path.name} is a pipe, a device or a socket, not a file")
    if info.st_size > MAX_FILE_BYTES:
        raise ExtractError(f"{path.name} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
    try:
        data = read_path(path, READ_BOUNDS, path.name)
    except ReadLimitError as exc:  # it grew, or a share stalled, while it was read
        raise ExtractError(str(exc)) from None
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        try:
            pages = pdf_pages_text(data, path.name, MAX_PDF_PAGES)
        except AttachmentError as exc:
            raise ExtractError(str(exc)) from exc
        return [p for n, text in enumerate(pages, start=1) for p in _with_lines(text, n)]
    text = _decode(data, path.name)
    if suffix in HTML_SUFFIXES:
        text = html_text(text)
    return list(_with_lines(text, 0))
