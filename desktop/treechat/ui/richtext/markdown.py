"""Markdown (and plain text) to laid-out QTextDocuments for chat messages: GitHub dialect,
no HTML, no external resources; code blocks highlighted and given room for their chrome."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from PySide6.QtCore import QRectF, QSizeF
from PySide6.QtGui import (
    QFont,
    QTextBlock,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextFrame,
    QTextFrameFormat,
    QTextLength,
    QTextOption,
    QTextTable,
    QTextTableFormat,
)

from .highlighting import highlight
from .rendered import (
    CODE_HEADER,
    CODE_PAD_X,
    CODE_PAD_Y,
    COPY_BUTTON_H,
    COPY_BUTTON_W,
    CodeBlock,
    RenderedText,
)
from .theme import LINE_HEIGHT, MarkdownTheme

MARKDOWN_FEATURES = QTextDocument.MarkdownFeature(
    QTextDocument.MarkdownFeature.MarkdownDialectGitHub.value
    | QTextDocument.MarkdownFeature.MarkdownNoHTML.value
)

# Code block chrome, in pixels: a header strip for the language and the copy button, and
# padding around the code itself.

QUOTE_INDENT = 16.0
PROPORTIONAL = QTextBlockFormat.LineHeightTypes.ProportionalHeight.value
HEADING_SCALE = {1: 1.45, 2: 1.28, 3: 1.14, 4: 1.04, 5: 1.0, 6: 1.0}



# --- building documents ------------------------------------------------------------------


class _Document(QTextDocument):
    """A document that never loads external resources: message text is untrusted."""

    def loadResource(self, kind: int, name: Any) -> Any:
        return None


def _new_document(theme: MarkdownTheme, width: float) -> QTextDocument:
    doc = _Document()
    doc.setUndoRedoEnabled(False)
    doc.setDocumentMargin(0)
    doc.setIndentWidth(22)
    doc.setDefaultFont(theme.font)
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    doc.setDefaultTextOption(option)
    doc.setTextWidth(max(40.0, width))
    return doc


def render_markdown(text: str, width: float, theme: MarkdownTheme) -> RenderedText:
    """Lay `text` out as GitHub Markdown at `width` pixels (raw HTML shown as text)."""
    doc = _new_document(theme, width)
    doc.setMarkdown(text, MARKDOWN_FEATURES)
    _style_document(doc, theme)
    doc.setTextWidth(max(40.0, width))
    return finish(doc, theme, width)


def styled_part(text: str, width: float, theme: MarkdownTheme, *, first: bool) -> QTextDocument:
    """A part of a longer text, styled as it is within the whole (`first`: it begins the
    text); the end of the text is made flush by whoever puts the parts together."""
    doc = _new_document(theme, width)
    doc.setMarkdown(text, MARKDOWN_FEATURES)
    _style_document(doc, theme, first=first, last=False)
    return doc


def new_document(theme: MarkdownTheme, width: float) -> QTextDocument:
    """An empty document laid out as every message body is."""
    return _new_document(theme, width)


def markdown_text(text: str) -> str:
    """`text` as `render_markdown` shows it, without layout: the words, no syntax (fences,
    `**`, `#`), for one-line summaries of a message."""
    doc = _Document()
    doc.setUndoRedoEnabled(False)
    doc.setMarkdown(text, MARKDOWN_FEATURES)
    return doc.toPlainText()


def render_plain(
    text: str, width: float, theme: MarkdownTheme, *, mono: bool = False
) -> RenderedText:
    """Lay `text` out verbatim (what a person typed, tool output)."""
    doc = _new_document(theme, width)
    if mono:
        doc.setDefaultFont(theme.mono)
    doc.setPlainText(text)
    if not mono:
        cursor = QTextCursor(doc)
        cursor.select(QTextCursor.SelectionType.Document)
        spacing = QTextBlockFormat()
        spacing.setLineHeight(LINE_HEIGHT * 100, PROPORTIONAL)
        cursor.mergeBlockFormat(spacing)
    return finish(doc, theme, width)


def finish(doc: QTextDocument, theme: MarkdownTheme, width: float) -> RenderedText:
    layout = doc.documentLayout()
    size: QSizeF = layout.documentSize()
    blocks = tuple(_code_blocks(doc, width))
    bars = tuple(_quote_bars(doc))
    height = size.height()
    top = max(0.0, -min((b.rect.top() for b in blocks), default=0.0))
    bottom = max((b.rect.bottom() for b in blocks), default=0.0)
    if top:
        blocks = tuple(_shifted(b, top) for b in blocks)
        bars = tuple(r.translated(0, top) for r in bars)
    return RenderedText(
        document=doc,
        width=width,
        height=max(height, bottom) + top,
        natural_width=min(width, doc.idealWidth()),
        code_blocks=blocks,
        quote_bars=bars,
        theme=theme,
        top=top,
    )


def _shifted(block: CodeBlock, dy: float) -> CodeBlock:
    return CodeBlock(block.text, block.language, block.rect.translated(0, dy),
                     block.copy_rect.translated(0, dy))


def _iter_blocks(doc: QTextDocument) -> Iterator[QTextBlock]:
    block = doc.begin()
    while block.isValid():
        yield block
        block = block.next()


def _is_code(block: QTextBlock) -> bool:
    fmt = block.blockFormat()
    return fmt.hasProperty(QTextFormat.Property.BlockCodeFence) or fmt.hasProperty(
        QTextFormat.Property.BlockCodeLanguage
    )


def _language(block: QTextBlock) -> str:
    return block.blockFormat().stringProperty(QTextFormat.Property.BlockCodeLanguage).strip()


def _in_list(block: QTextBlock) -> bool:
    return block.blockFormat().objectIndex() != -1


def _quote_level(fmt: QTextBlockFormat) -> int:
    return int(fmt.intProperty(QTextFormat.Property.BlockQuoteLevel))


def _code_groups(doc: QTextDocument) -> list[list[QTextBlock]]:
    """Consecutive code blocks form one fenced block (a language change starts another)."""
    groups: list[list[QTextBlock]] = []
    current: list[QTextBlock] = []
    for block in _iter_blocks(doc):
        if _is_code(block) and not _in_list(block):
            if current and _language(current[0]) != _language(block):
                groups.append(current)
                current = []
            current.append(block)
        elif current:
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    return groups


def _style_document(doc: QTextDocument, theme: MarkdownTheme, *, first: bool = True,
                    last: bool = True) -> None:
    """Restyle what Qt's Markdown importer produced into the chat look. `first` / `last`:
    the document begins / ends the text (a streamed reply's parts are laid out apart, and
    only the text's own first and last block lose their outer margin)."""
    cursor = QTextCursor(doc)
    base_size = theme.font.pointSizeF()
    blocks = list(_iter_blocks(doc))
    for block in blocks:
        fmt = block.blockFormat()
        level = fmt.headingLevel()
        quote = _quote_level(fmt)
        if not _is_code(block):
            cursor.setPosition(block.position())
            new = QTextBlockFormat(fmt)
            new.setLineHeight(LINE_HEIGHT * 100, PROPORTIONAL)
            if level:
                new.setTopMargin(12 if block != blocks[0] or not first else 0)
                new.setBottomMargin(4)
            if quote:
                new.setLeftMargin(QUOTE_INDENT * quote)
                new.setRightMargin(0)
            if _in_list(block):  # list items sit closer together than paragraphs
                new.setTopMargin(2)
                new.setBottomMargin(2)
            cursor.setBlockFormat(new)
        it = block.begin()
        while not it.atEnd():
            frag = it.fragment()
            it += 1
            cf = frag.charFormat()
            change = QTextCharFormat()
            touched = False
            if level:
                change.setFontPointSize(base_size * HEADING_SCALE.get(level, 1.0))
                change.setFontWeight(QFont.Weight.DemiBold)
                change.setProperty(QTextFormat.Property.FontSizeAdjustment, 0)
                touched = True
            if quote:
                change.setForeground(theme.muted)
                touched = True
            if cf.isAnchor():
                change.setForeground(theme.link)
                change.setFontUnderline(False)
                touched = True
            if cf.fontFixedPitch() and not _is_code(block):
                change.setFontFamilies(theme.mono.families() or [theme.mono.family()])
                change.setFontPointSize(
                    (base_size * HEADING_SCALE.get(level, 1.0) if level else base_size) * 0.92
                )
                change.setBackground(theme.inline_code_bg)
                touched = True
            if touched:
                cursor.setPosition(frag.position())
                cursor.setPosition(frag.position() + frag.length(), QTextCursor.MoveMode.KeepAnchor)
                cursor.mergeCharFormat(change)
    _replace_images(doc, theme)
    _style_code(doc, theme, cursor)
    _style_tables(doc, theme)
    top = doc.begin()
    if first and top.isValid() and not _is_code(top):
        cursor.setPosition(top.position())
        f = QTextBlockFormat(top.blockFormat())
        f.setTopMargin(0)
        cursor.setBlockFormat(f)
    if last:
        end_flush(doc)


def end_flush(doc: QTextDocument) -> None:
    """The last block of the text keeps no margin below it (the row's own spacing follows)."""
    bottom = doc.lastBlock()
    if bottom.isValid() and not _is_code(bottom) and not _in_list(bottom):
        cursor = QTextCursor(doc)
        cursor.setPosition(bottom.position())
        f = QTextBlockFormat(bottom.blockFormat())
        f.setBottomMargin(0)
        cursor.setBlockFormat(f)


def _replace_images(doc: QTextDocument, theme: MarkdownTheme) -> None:
    """Images become links named by their alt text: nothing is fetched for a message."""
    images: list[tuple[int, int, str, str]] = []
    for block in _iter_blocks(doc):
        it = block.begin()
        while not it.atEnd():
            frag = it.fragment()
            it += 1
            fmt = frag.charFormat()
            if fmt.isImageFormat():
                url = fmt.toImageFormat().name()
                alt = fmt.stringProperty(QTextFormat.Property.ImageAltText) or "image"
                images.append((frag.position(), frag.length(), url, alt))
    cursor = QTextCursor(doc)
    for position, length, url, alt in reversed(images):  # back to front: positions hold
        cursor.setPosition(position)
        cursor.setPosition(position + length, QTextCursor.MoveMode.KeepAnchor)
        link = QTextCharFormat()
        link.setAnchor(True)
        link.setAnchorHref(url)
        link.setForeground(theme.link)
        cursor.insertText(f"[image: {alt}]", link)


def _style_code(doc: QTextDocument, theme: MarkdownTheme, cursor: QTextCursor) -> None:
    for group in _code_groups(doc):
        language = _language(group[0])
        for i, block in enumerate(group):
            fmt = QTextBlockFormat(block.blockFormat())
            fmt.setNonBreakableLines(False)
            fmt.setLeftMargin(CODE_PAD_X)
            fmt.setRightMargin(CODE_PAD_X)
            fmt.setTopMargin(CODE_HEADER + CODE_PAD_Y + 10 if i == 0 else 0)
            fmt.setBottomMargin(CODE_PAD_Y + 14 if i == len(group) - 1 else 0)
            fmt.setLineHeight(115, PROPORTIONAL)
            cursor.setPosition(block.position())
            cursor.setBlockFormat(fmt)
        start = group[0].position()
        end = group[-1].position() + group[-1].length() - 1
        cursor.setPosition(start)
        cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        mono = QTextCharFormat()
        mono.setFontFamilies(theme.mono.families() or [theme.mono.family()])
        mono.setFontPointSize(theme.mono.pointSizeF())
        cursor.mergeCharFormat(mono)
        code = "\n".join(b.text() for b in group)
        for offset, length, char_format in highlight(code, language, theme.dark):
            cursor.setPosition(start + offset)
            cursor.setPosition(start + offset + length, QTextCursor.MoveMode.KeepAnchor)
            cursor.mergeCharFormat(char_format)


def _tables(frame: QTextFrame) -> Iterator[QTextTable]:
    for child in frame.childFrames():
        if isinstance(child, QTextTable):
            yield child
        yield from _tables(child)


def _tidy_cell(table: QTextTable, row: int, col: int) -> None:
    """Qt's importer leaves an empty paragraph in the first cell of a table that follows a
    code block, and gives header cells paragraph margins; both make the header row uneven."""
    cell = table.cellAt(row, col)
    first = cell.firstCursorPosition().block()
    last = cell.lastCursorPosition().block()
    if first != last and not first.text():
        # hidden rather than deleted: merging it into the next paragraph would take that
        # paragraph's formatting (the header's bold) with it
        first.setVisible(False)
        table.document().markContentsDirty(first.position(), first.length())
    cursor = cell.firstCursorPosition()
    cursor.setPosition(cell.lastCursorPosition().position(), QTextCursor.MoveMode.KeepAnchor)
    margins = QTextBlockFormat()
    margins.setTopMargin(0)
    margins.setBottomMargin(0)
    cursor.mergeBlockFormat(margins)
    if row == 0:  # the header row (the stray paragraph above carried its bold away)
        bold = QTextCharFormat()
        bold.setFontWeight(QFont.Weight.DemiBold)
        cursor.mergeCharFormat(bold)


def tidy_tables(doc: QTextDocument, start: int) -> None:
    """Tidy the cells of the tables from `start` on again: a block's visibility is not part
    of its format, so a table copied into another document shows its hidden paragraph."""
    for table in _tables(doc.rootFrame()):
        if table.firstPosition() >= start:
            for row in range(table.rows()):
                for col in range(table.columns()):
                    _tidy_cell(table, row, col)


def _style_tables(doc: QTextDocument, theme: MarkdownTheme) -> None:
    for frame in list(_tables(doc.rootFrame())):
        for row in range(frame.rows()):
            for col in range(frame.columns()):
                _tidy_cell(frame, row, col)
        fmt: QTextTableFormat = frame.format().toTableFormat()
        fmt.setBorder(1)
        fmt.setBorderBrush(theme.table_border)
        fmt.setBorderStyle(QTextFrameFormat.BorderStyle.BorderStyle_Solid)
        fmt.setBorderCollapse(True)
        fmt.setCellPadding(5)
        fmt.setCellSpacing(0)
        fmt.setTopMargin(16)
        fmt.setBottomMargin(6)
        fmt.setWidth(QTextLength(QTextLength.Type.VariableLength, 0))
        frame.setFormat(fmt)
        for col in range(frame.columns()):
            cell = frame.cellAt(0, col)
            cf = cell.format()
            cf.setBackground(theme.table_header_bg)
            cell.setFormat(cf)


def _code_blocks(doc: QTextDocument, width: float) -> Iterator[CodeBlock]:
    layout = doc.documentLayout()
    for group in _code_groups(doc):
        first = layout.blockBoundingRect(group[0])
        last = layout.blockBoundingRect(group[-1])
        top = first.top() - CODE_HEADER - CODE_PAD_Y
        bottom = last.bottom() + CODE_PAD_Y
        indent = _frame_left(group[0])
        rect = QRectF(indent, top, width - indent, bottom - top)
        copy_rect = QRectF(
            rect.right() - COPY_BUTTON_W - 6,
            rect.top() + (CODE_HEADER - COPY_BUTTON_H) / 2,
            COPY_BUTTON_W,
            COPY_BUTTON_H,
        )
        text = "\n".join(b.text() for b in group).replace("\u2028", "\n")
        yield CodeBlock(text=text, language=_language(group[0]), rect=rect, copy_rect=copy_rect)


def _frame_left(block: QTextBlock) -> float:
    fmt = block.blockFormat()
    quote = _quote_level(fmt)
    return float(fmt.indent()) * 22.0 + QUOTE_INDENT * quote


def _quote_bars(doc: QTextDocument) -> Iterator[QRectF]:
    layout = doc.documentLayout()
    for block in _iter_blocks(doc):
        level = _quote_level(block.blockFormat())
        if level:
            r = layout.blockBoundingRect(block)
            for n in range(level):
                yield QRectF(QUOTE_INDENT * n + 2, r.top() - 2, 3, r.height() + 4)


