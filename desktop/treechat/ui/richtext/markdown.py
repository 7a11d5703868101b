"""Markdown to laid-out QTextDocuments for chat messages: highlighted code blocks with a copy
hit-area each, cached per (node id, width) so painting a scrolled row never re-lays out text."""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from PySide6.QtCore import QPointF, QRectF, QSizeF, Qt
from PySide6.QtGui import (
    QAbstractTextDocumentLayout,
    QColor,
    QFont,
    QFontDatabase,
    QFontMetricsF,
    QPainter,
    QPainterPath,
    QPalette,
    QPen,
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

MARKDOWN_FEATURES = QTextDocument.MarkdownFeature(
    QTextDocument.MarkdownFeature.MarkdownDialectGitHub.value
    | QTextDocument.MarkdownFeature.MarkdownNoHTML.value
)

# Code block chrome, in pixels: a header strip for the language and the copy button, and
# padding around the code itself.
CODE_HEADER = 30.0
CODE_PAD_X = 14.0
CODE_PAD_Y = 10.0
CODE_RADIUS = 8.0
COPY_BUTTON_W = 64.0
COPY_BUTTON_H = 22.0
QUOTE_INDENT = 16.0
LINE_HEIGHT = 1.3  # body text breathes a little more than Qt's single spacing
PROPORTIONAL = QTextBlockFormat.LineHeightTypes.ProportionalHeight.value
HEADING_SCALE = {1: 1.45, 2: 1.28, 3: 1.14, 4: 1.04, 5: 1.0, 6: 1.0}


def mix(a: QColor, b: QColor, amount: float) -> QColor:
    """`a` moved `amount` (0..1) of the way towards `b`."""
    t = max(0.0, min(1.0, amount))
    return QColor.fromRgbF(
        a.redF() + (b.redF() - a.redF()) * t,
        a.greenF() + (b.greenF() - a.greenF()) * t,
        a.blueF() + (b.blueF() - a.blueF()) * t,
        a.alphaF() + (b.alphaF() - a.alphaF()) * t,
    )


def is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Base).lightnessF() < 0.5


@dataclass(frozen=True, slots=True)
class MarkdownTheme:
    """Colours and fonts text is laid out with; `key` changes whenever any of them does."""

    dark: bool
    text: QColor
    muted: QColor
    link: QColor
    code_bg: QColor
    code_header: QColor
    code_border: QColor
    inline_code_bg: QColor
    quote_bar: QColor
    table_border: QColor
    table_header_bg: QColor
    button_hover: QColor
    font: QFont
    mono: QFont
    key: str = ""

    @classmethod
    def from_palette(cls, palette: QPalette, font: QFont) -> MarkdownTheme:
        dark = is_dark(palette)
        base = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.Text)
        accent = palette.color(QPalette.ColorRole.Highlight)
        link = palette.color(QPalette.ColorRole.Link)
        if dark:
            link = mix(link, QColor("#ffffff"), 0.45)
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        mono.setPointSizeF(max(7.0, font.pointSizeF() * 0.92))
        code_bg = mix(base, text, 0.055 if not dark else 0.075)
        theme = cls(
            dark=dark,
            text=text,
            muted=mix(text, base, 0.42),
            link=link if link.isValid() else accent,
            code_bg=code_bg,
            code_header=mix(base, text, 0.085 if not dark else 0.11),
            code_border=mix(base, text, 0.12 if not dark else 0.16),
            inline_code_bg=mix(base, text, 0.075 if not dark else 0.12),
            quote_bar=mix(base, accent, 0.55),
            table_border=mix(base, text, 0.16),
            table_header_bg=mix(base, text, 0.06 if not dark else 0.09),
            button_hover=mix(base, text, 0.16),
            font=QFont(font),
            mono=mono,
        )
        key = "|".join(
            c.name(QColor.NameFormat.HexArgb)
            for c in (theme.text, theme.link, theme.code_bg, theme.inline_code_bg, base)
        )
        key += f"|{font.toString()}|{mono.toString()}"
        return _with_key(theme, key)


def _with_key(theme: MarkdownTheme, key: str) -> MarkdownTheme:
    from dataclasses import replace

    return replace(theme, key=key)


@dataclass(frozen=True, slots=True)
class CodeBlock:
    """One fenced code block of a rendered message, in document coordinates."""

    text: str
    language: str
    rect: QRectF
    copy_rect: QRectF


@dataclass(slots=True)
class RenderedText:
    """A laid-out message body: paint it, hit-test its copy buttons and links."""

    document: QTextDocument
    width: float
    height: float
    natural_width: float
    code_blocks: tuple[CodeBlock, ...] = ()
    quote_bars: tuple[QRectF, ...] = ()
    theme: MarkdownTheme | None = None
    # Qt drops the top margin of a document's first block and the bottom margin of its
    # last, so a code block at either end gets its chrome room from here instead
    top: float = 0.0

    def copy_button_at(self, pos: QPointF) -> int | None:
        """Index of the code block whose copy button is under `pos` (text coordinates)."""
        for i, block in enumerate(self.code_blocks):
            if block.copy_rect.contains(pos):
                return i
        return None

    def anchor_at(self, pos: QPointF) -> str:
        layout = self.document.documentLayout()
        return str(layout.anchorAt(pos - QPointF(0, self.top)) or "")

    def paint(
        self,
        painter: QPainter,
        origin: QPointF,
        *,
        text_color: QColor | None = None,
        hovered_copy: int | None = None,
        copied: int | None = None,
        clip: QRectF | None = None,
    ) -> None:
        theme = self.theme
        painter.save()
        painter.translate(origin)
        if theme is not None:
            for i, block in enumerate(self.code_blocks):
                _paint_code_chrome(painter, theme, block, i == hovered_copy, i == copied)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(theme.quote_bar)
            for bar in self.quote_bars:
                painter.drawRoundedRect(bar, 1.5, 1.5)
        ctx = QAbstractTextDocumentLayout.PaintContext()
        if text_color is not None:
            pal = ctx.palette
            pal.setColor(QPalette.ColorRole.Text, text_color)
            ctx.palette = pal
        painter.translate(0, self.top)
        if clip is not None:
            local = clip.translated(-origin.x(), -origin.y() - self.top)
            ctx.clip = local
            painter.setClipRect(local, Qt.ClipOperation.IntersectClip)
        self.document.documentLayout().draw(painter, ctx)
        painter.restore()


def _paint_code_chrome(
    painter: QPainter, theme: MarkdownTheme, block: CodeBlock, hovered: bool, copied: bool
) -> None:
    rect = block.rect
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    path = QPainterPath()
    path.addRoundedRect(rect, CODE_RADIUS, CODE_RADIUS)
    painter.fillPath(path, theme.code_bg)
    # header strip: clipped to the rounded shape so only its top corners are rounded
    painter.save()
    painter.setClipPath(path)
    painter.fillRect(QRectF(rect.left(), rect.top(), rect.width(), CODE_HEADER), theme.code_header)
    painter.restore()
    painter.setPen(QPen(theme.code_border, 1.0))
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.drawRoundedRect(rect.adjusted(0.5, 0.5, -0.5, -0.5), CODE_RADIUS, CODE_RADIUS)

    small = QFont(theme.font)
    small.setPointSizeF(max(6.5, theme.font.pointSizeF() * 0.85))
    painter.setFont(small)
    painter.setPen(theme.muted)
    label_rect = QRectF(rect.left() + CODE_PAD_X, rect.top(), rect.width() / 2, CODE_HEADER)
    painter.drawText(
        label_rect,
        int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
        block.language or "code",
    )
    button = block.copy_rect
    if hovered:
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(theme.button_hover)
        painter.drawRoundedRect(button, 5, 5)
    color = theme.text if hovered else theme.muted
    icon = QRectF(button.left() + 7, button.center().y() - 6, 12, 12)
    if copied:
        draw_check_icon(painter, icon, color)
    else:
        draw_copy_icon(painter, icon, color)
    painter.setPen(color)
    painter.drawText(
        QRectF(icon.right() + 5, button.top(), button.right() - icon.right() - 5, button.height()),
        int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
        "Copied" if copied else "Copy",
    )


def draw_copy_icon(painter: QPainter, rect: QRectF, color: QColor) -> None:
    """Two overlapping rounded sheets, drawn with the pen so it follows the palette."""
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    pen = QPen(color, 1.3)
    painter.setPen(pen)
    painter.setBrush(Qt.BrushStyle.NoBrush)
    w, h = rect.width(), rect.height()
    back = QRectF(rect.left(), rect.top(), w * 0.68, h * 0.68)
    front = QRectF(rect.left() + w * 0.32, rect.top() + h * 0.32, w * 0.68, h * 0.68)
    painter.drawRoundedRect(front, 2, 2)
    path = QPainterPath()
    path.moveTo(back.left() + back.width() * 0.9, back.top() + 0.5)
    path.lineTo(back.left() + 2, back.top() + 0.5)
    path.quadTo(back.left() + 0.5, back.top() + 0.5, back.left() + 0.5, back.top() + 2)
    path.lineTo(back.left() + 0.5, back.bottom() * 0.98)
    painter.drawPath(path)
    painter.restore()


def draw_check_icon(painter: QPainter, rect: QRectF, color: QColor) -> None:
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    painter.setPen(
        QPen(color, 1.6, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap,
             Qt.PenJoinStyle.RoundJoin)
    )
    path = QPainterPath()
    path.moveTo(rect.left() + rect.width() * 0.12, rect.top() + rect.height() * 0.55)
    path.lineTo(rect.left() + rect.width() * 0.4, rect.top() + rect.height() * 0.82)
    path.lineTo(rect.left() + rect.width() * 0.9, rect.top() + rect.height() * 0.2)
    painter.drawPath(path)
    painter.restore()


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
    return _finish(doc, theme, width)


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
    return _finish(doc, theme, width)


def _finish(doc: QTextDocument, theme: MarkdownTheme, width: float) -> RenderedText:
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


def _style_document(doc: QTextDocument, theme: MarkdownTheme) -> None:
    """Restyle what Qt's Markdown importer produced into the chat look."""
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
                new.setTopMargin(12 if block != blocks[0] else 0)
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
    first, last = doc.begin(), doc.lastBlock()
    if first.isValid() and not _is_code(first):
        cursor.setPosition(first.position())
        f = QTextBlockFormat(first.blockFormat())
        f.setTopMargin(0)
        cursor.setBlockFormat(f)
    if last.isValid() and not _is_code(last) and not _in_list(last):
        cursor.setPosition(last.position())
        f = QTextBlockFormat(last.blockFormat())
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
        for offset, length, fmt in highlight(code, language, theme.dark):
            cursor.setPosition(start + offset)
            cursor.setPosition(start + offset + length, QTextCursor.MoveMode.KeepAnchor)
            cursor.mergeCharFormat(fmt)


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


# --- syntax highlighting -----------------------------------------------------------------


def highlight(code: str, language: str, dark: bool) -> list[tuple[int, int, QTextCharFormat]]:
    """(offset, length, format) runs for `code`; nothing when the language is unknown."""
    lexer = _lexer(language.lower())
    if lexer is None or not code:
        return []
    from pygments import lex
    from pygments.token import Error

    formats = _formats("github-dark" if dark else "default")
    runs: list[tuple[int, int, QTextCharFormat]] = []
    offset = 0
    for ttype, value in lex(code, lexer):
        length = len(value)
        fmt = None if ttype in Error else formats(ttype)
        if fmt is not None and length:
            runs.append((offset, length, fmt))
        offset += length
    # the lexer sees a final newline the document does not have
    return [(o, min(n, len(code) - o), f) for o, n, f in runs if o < len(code)]


WARM_LANGUAGES = ("python", "bash", "javascript", "json")


def warm_up_highlighting(languages: Sequence[str] = WARM_LANGUAGES) -> None:
    """Load pygments and the commonest lexers (the Python one takes ~80 ms to build), so the
    first code block on screen does not pay for them. Safe off the GUI thread: no Qt here."""
    for language in languages:
        _lexer(language)
    with contextlib.suppress(ImportError):
        from pygments.styles import get_style_by_name

        for name in ("default", "github-dark"):
            get_style_by_name(name)


@lru_cache(maxsize=64)
def _lexer(language: str) -> Any:
    if not language:
        return None
    try:
        from pygments.lexers import get_lexer_by_name
        from pygments.util import ClassNotFound
    except ImportError:  # highlighting is a nicety; plain code still renders
        return None
    try:
        return get_lexer_by_name(language, stripnl=False, ensurenl=True)
    except ClassNotFound:
        return None


@lru_cache(maxsize=4)
def _formats(style_name: str) -> Callable[[Any], QTextCharFormat | None]:
    from pygments.styles import get_style_by_name

    style = get_style_by_name(style_name)
    cache: dict[Any, QTextCharFormat | None] = {}

    def lookup(ttype: Any) -> QTextCharFormat | None:
        if ttype in cache:
            return cache[ttype]
        spec = style.style_for_token(ttype)
        fmt: QTextCharFormat | None = None
        if spec.get("color") or spec.get("bold") or spec.get("italic"):
            fmt = QTextCharFormat()
            if spec.get("color"):
                fmt.setForeground(QColor("#" + spec["color"]))
            if spec.get("bold"):
                fmt.setFontWeight(QFont.Weight.Bold)
            if spec.get("italic"):
                fmt.setFontItalic(True)
        cache[ttype] = fmt
        return fmt

    return lookup


# --- cache and estimates -----------------------------------------------------------------


class DocumentCache:
    """Least-recently-used laid-out documents keyed by (key, width, theme): a scrolled row
    is painted from here, never re-parsed."""

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._items: OrderedDict[tuple[Any, ...], RenderedText] = OrderedDict()
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(
        self,
        key: tuple[Any, ...],
        build: Callable[[], RenderedText],
    ) -> RenderedText:
        item = self._items.get(key)
        if item is not None:
            self._items.move_to_end(key)
            return item
        self.misses += 1
        item = build()
        self._items[key] = item
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)
        return item

    def clear(self) -> None:
        self._items.clear()


@dataclass(frozen=True, slots=True)
class _Metrics:
    line: float
    char: float
    mono_line: float
    mono_char: float


_METRICS: dict[str, _Metrics] = {}


def _metrics(theme: MarkdownTheme) -> _Metrics:
    found = _METRICS.get(theme.key)
    if found is None:
        body, mono = QFontMetricsF(theme.font), QFontMetricsF(theme.mono)
        found = _Metrics(body.lineSpacing() * LINE_HEIGHT, body.averageCharWidth() or 7.0,
                         mono.lineSpacing(), mono.averageCharWidth() or 7.0)
        _METRICS[theme.key] = found
    return found


CODE_CHROME = CODE_HEADER + 2 * CODE_PAD_Y + 14  # what a fenced block adds to its lines


class HeightEstimate:
    """A quick guess of the laid-out height of texts at one width, for rows not measured
    yet: a few string counts, no layout, so thousands of rows are estimated in a few
    milliseconds (the set-up is done once for all of them)."""

    __slots__ = ("line", "per_line", "prose")

    def __init__(self, width: float, theme: MarkdownTheme, *, mono: bool = False) -> None:
        m = _metrics(theme)
        line, char = (m.mono_line, m.mono_char) if mono else (m.line, m.char)
        self.line = line
        self.per_line = max(8.0, width / char)
        self.prose = not mono

    def of(self, text: str) -> float:
        newlines = text.count("\n")
        # each source line wraps into len/per_line rows, plus on average half a row of ragging
        height = (len(text) / self.per_line + 0.5 * (newlines + 1)) * self.line
        if self.prose:
            height += text.count("\n\n") * 8.0
            height += (text.count("```") + text.count("~~~")) // 2 * CODE_CHROME
        return max(self.line, height)


def estimate_height(text: str, width: float, theme: MarkdownTheme, *, mono: bool = False) -> float:
    """`HeightEstimate` of one text."""
    return HeightEstimate(width, theme, mono=mono).of(text)
