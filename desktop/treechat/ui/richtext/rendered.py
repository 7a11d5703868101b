"""A laid-out message body (a QTextDocument with its code blocks and quote bars) that
paints itself and hit-tests its copy buttons and links."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import (
    QAbstractTextDocumentLayout,
    QColor,
    QFont,
    QPainter,
    QPainterPath,
    QPalette,
    QPen,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
)

from ..common.icons import draw_icon
from .theme import MarkdownTheme

CODE_HEADER = 30.0
CODE_PAD_X = 14.0
CODE_PAD_Y = 10.0
CODE_RADIUS = 8.0
COPY_BUTTON_W = 64.0
COPY_BUTTON_H = 22.0

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
        selection: tuple[int, int] | None = None,
        selection_colors: tuple[QColor, QColor] | None = None,
    ) -> None:
        """Paint at `origin`; `selection` is a (start, end) character span drawn in
        `selection_colors` (background, text)."""
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
        if selection is not None and selection[0] != selection[1]:
            ctx.selections = [self._selection(selection, selection_colors)]
        painter.translate(0, self.top)
        if clip is not None:
            local = clip.translated(-origin.x(), -origin.y() - self.top)
            ctx.clip = local
            painter.setClipRect(local, Qt.ClipOperation.IntersectClip)
        self.document.documentLayout().draw(painter, ctx)
        painter.restore()

    def _selection(self, span: tuple[int, int], colors: tuple[QColor, QColor] | None
                   ) -> QAbstractTextDocumentLayout.Selection:
        last = max(0, self.document.characterCount() - 1)
        cursor = QTextCursor(self.document)
        cursor.setPosition(min(span[0], last))
        cursor.setPosition(min(span[1], last), QTextCursor.MoveMode.KeepAnchor)
        fmt = QTextCharFormat()
        if colors is not None:
            fmt.setBackground(colors[0])
            fmt.setForeground(colors[1])
        selected = QAbstractTextDocumentLayout.Selection()
        selected.cursor = cursor
        selected.format = fmt
        return selected


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
    draw_icon(painter, "check" if copied else "copy", icon, color)
    painter.setPen(color)
    painter.drawText(
        QRectF(icon.right() + 5, button.top(), button.right() - icon.right() - 5, button.height()),
        int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
        "Copied" if copied else "Copy",
    )


