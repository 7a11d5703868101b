"""A reply's Markdown laid out while it streams: the blocks it has finished are laid out once
and kept, and each flush lays out only the block still being written, so the cost of a paint
stays that of its tail instead of growing with the whole reply.

Markdown parsers (Qt's md4c among them) take a whole text, so the finished part and the tail
are parsed apart and put together in one document. That is only the same document as the
whole text's where the text splits into independent blocks; `finished_length` finds such a
place, and keeps anything in doubt in the tail. (A reference link defined after the place
it is used would not resolve until the reply ends, when it is laid out whole.)"""

from __future__ import annotations

import re

from PySide6.QtGui import QTextCursor, QTextDocument, QTextDocumentFragment

from .markdown import end_flush, finish, new_document, styled_part, tidy_tables
from .rendered import RenderedText
from .theme import MarkdownTheme

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"([-+*]|\d{1,9}[.)])(\s|$)")
_RULE = re.compile(r" {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,}|=+[ \t]*)")


def finished_length(text: str, start: int = 0) -> int:
    """Where the blocks of `text` that are finished end: the start of the last line that
    opens a block nothing before it can reach into (after a blank line, outside a fence, not
    indented, not a list item, and ended by its newline, so what it opens is known); `start`
    (such a place, or 0) when there is none after it. Qt lays a table, a code block or a
    rule out differently next to some blocks than at either end of a document, so a part
    neither begins nor ends with one: such blocks stay with their neighbours."""
    cut = start
    fence = ""
    blank = False
    plain_before = False  # the last line with text was a paragraph's, a heading's, a quote's
    at = start
    while True:
        end = text.find("\n", at)
        if end < 0:
            return cut  # the last line is still being written
        line = text[at:end]
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) \
                    and not line[opened.end():].strip():
                fence = ""
            plain_before = False
        elif opened:
            fence = opened.group(1)
            plain_before = False
        elif line.strip():
            plain = _plain(line)
            if blank and plain_before and plain and line[:1] not in (" ", "\t") \
                    and not _LIST_ITEM.match(line):
                cut = at
            plain_before = plain
        blank = not fence and not line.strip()
        at = end + 1


def _plain(line: str) -> bool:
    """A line of a paragraph, heading, quote or list item: no table row, no rule."""
    return "|" not in line and not _RULE.fullmatch(line)


class StreamedMarkdown:
    """One streaming reply's document: `render` the text so far at each flush."""

    def __init__(self) -> None:
        self._doc: QTextDocument | None = None
        self._key: tuple[int, str] = (0, "")
        self._done = ""  # the finished blocks' text, laid out in the document
        self._done_end = 0  # where they end in the document
        self._last: tuple[str, RenderedText] | None = None
        self.parsed_chars = 0  # characters parsed so far, all flushes told (tests read it)

    def render(self, text: str, width: float, theme: MarkdownTheme) -> RenderedText:
        key = (int(width), theme.key)
        if self._last is not None and self._last[0] == text and key == self._key:
            return self._last[1]
        doc = self._doc
        if doc is None or key != self._key or not text.startswith(self._done):
            doc = self._doc = new_document(theme, width)
            self._key, self._done, self._done_end = key, "", 0
        cursor = QTextCursor(doc)
        cursor.setPosition(self._done_end)
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()  # the tail as the last flush laid it out
        cut = finished_length(text, len(self._done))
        if cut > len(self._done):
            self._append(doc, text[len(self._done):cut], width, theme)
            self._done = text[:cut]
            self._done_end = doc.characterCount() - 1
        self._append(doc, text[cut:], width, theme)
        end_flush(doc)
        rendered = finish(doc, theme, width)
        self._last = (text, rendered)
        return rendered

    def _append(self, doc: QTextDocument, text: str, width: float, theme: MarkdownTheme
                ) -> None:
        """Lay `text` out apart and add its blocks at the end of `doc`, formats and all."""
        self.parsed_chars += len(text)
        first = doc.isEmpty()
        part = styled_part(text, width, theme, first=first)
        head = part.begin()
        cursor = QTextCursor(doc)
        cursor.movePosition(QTextCursor.MoveOperation.End)
        if first:
            cursor.setBlockFormat(head.blockFormat())
            cursor.setBlockCharFormat(head.charFormat())
        else:
            # a fragment's first block takes the format of the block it lands in: give it
            # a block of its own format to land in
            cursor.insertBlock(head.blockFormat(), head.charFormat())
        start = cursor.position()
        cursor.insertFragment(QTextDocumentFragment(part))
        tidy_tables(doc, start)

