"""Paints one chat row from its layout: the user's bubble, the reply with its header, tool and
system cards, the inline error, notes, the action buttons and the keyboard focus ring."""

from __future__ import annotations

from datetime import datetime

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QLinearGradient, QPainter, QPainterPath, QPen

from ..common.icons import draw_icon
from ..richtext.theme import mix
from .attachment_views import ThumbnailCache, paint_tiles
from .hit_testing import RowInteraction
from .model import THINKING_KEY, ChatRow, RowKind
from .row_layout import RowLayout, RowLayouter
from .style import AVATAR, BUBBLE_RADIUS, CARD_H, CARD_PAD, CARD_RADIUS, ChatColors


class RowPainter:
    """Draws rows in the current colours; what is hovered, copied or locked comes from the
    shared `RowInteraction`."""

    def __init__(self, layouter: RowLayouter, interaction: RowInteraction,
                 colors: ChatColors) -> None:
        self._layouter = layouter
        self._state = interaction
        self.colors = colors
        self.thumbnails: ThumbnailCache | None = None  # sent images' thumbnails

    def paint(self, p: QPainter, row: ChatRow, layout: RowLayout, clip: QRectF, *,
              hovered: bool, focused: bool) -> None:
        """Paint `row` with the painter at its top-left corner."""
        if row.kind == RowKind.USER:
            self._paint_user(p, row, layout, clip)
        elif row.kind in (RowKind.ASSISTANT, RowKind.STREAM):
            self._paint_reply(p, row, layout, clip)
        elif row.kind in (RowKind.TOOL, RowKind.SYSTEM):
            self._paint_card(p, row, layout, clip)
        elif row.kind == RowKind.ERROR:
            self._paint_error(p, row, layout)
        else:
            self._paint_note(p, row, layout)
        if layout.tiles:
            hover = self._state.hover
            tile = (int(hover[1][5:]) if hover is not None and hover[0] == row.key
                    and hover[1].startswith("file:") else None)
            paint_tiles(p, layout.tiles, self.colors, self.thumbnails, self._layouter.small,
                        self._layouter.label_font, tile)
        self._paint_buttons(p, row, layout, hovered)
        if focused:
            x, col = self._layouter.column()
            ring = QRectF(x - 10, 2, col + 20, layout.height - 4)
            p.setPen(QPen(self.colors.focus, 1.5))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRoundedRect(ring, 10, 10)

    def _paint_user(self, p: QPainter, row: ChatRow, layout: RowLayout, clip: QRectF) -> None:
        c = self.colors
        assert layout.bubble is not None and layout.body is not None
        path = QPainterPath()
        path.addRoundedRect(layout.bubble, BUBBLE_RADIUS, BUBBLE_RADIUS)
        p.fillPath(path, c.user_bubble)
        self._paint_body(p, layout, clip, c.text, c.user_bubble,
                         selected=self._state.selected_span(row.key, "body"))

    def _paint_body(self, p: QPainter, layout: RowLayout, clip: QRectF, text: QColor,
                    background: QColor, *, hovered_copy: int | None = None,
                    copied: int | None = None, selected: tuple[int, int] | None = None
                    ) -> None:
        """The message text, cut at the fold with a fade when it is folded."""
        body = layout.body
        assert body is not None
        origin = layout.body_origin
        shown = QRectF(origin.x() - 40, origin.y() - 2, body.width + 80, layout.body_height + 2)
        body.paint(p, origin, text_color=text, clip=clip.intersected(shown),
                   hovered_copy=hovered_copy, copied=copied, selection=selected,
                   selection_colors=self._selection_colors())
        if layout.fold == "collapsed":
            left, width = origin.x() - 2, body.width + 4
            if layout.bubble is not None:  # stay inside the bubble's rounded sides
                left, width = layout.bubble.left() + 1, layout.bubble.width() - 2
            fade = QRectF(left, origin.y() + layout.body_height - 56, width, 56)
            gradient = QLinearGradient(fade.topLeft(), fade.bottomLeft())
            clear = QColor(background)
            clear.setAlphaF(0.0)
            gradient.setColorAt(0.0, clear)
            gradient.setColorAt(1.0, background)
            p.fillRect(fade, gradient)

    def _paint_reply(self, p: QPainter, row: ChatRow, layout: RowLayout, clip: QRectF) -> None:
        c = self.colors
        if layout.header is not None:
            self._paint_header(p, row, layout.header)
        if layout.body is not None:
            copied = self._state.copied_code(row.key)
            hovered_copy = None
            hover = self._state.hover
            if hover and hover[0] == row.key and hover[1].startswith("code:"):
                hovered_copy = int(hover[1].split(":", 1)[1])
            self._paint_body(p, layout, clip, c.text, c.base, hovered_copy=hovered_copy,
                             copied=copied, selected=self._state.selected_span(row.key, "body"))
        elif row.kind == RowKind.STREAM:
            self._paint_typing(p, layout.body_origin)
        if layout.badge is not None:
            badge = layout.badge
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(c.warning_bg)
            p.drawRoundedRect(badge, badge.height() / 2, badge.height() / 2)
            draw_icon(p, "stop", QRectF(badge.left() + 8, badge.center().y() - 5, 10, 10),
                       c.warning)
            p.setFont(self._layouter.small)
            p.setPen(c.warning)
            p.drawText(badge.adjusted(22, 0, -4, 0),
                       int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
                       "Interrupted")

    def _paint_header(self, p: QPainter, row: ChatRow, header: QRectF) -> None:
        c = self.colors
        avatar = QRectF(header.left(), header.center().y() - AVATAR / 2, AVATAR, AVATAR)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(c.accent)
        p.drawEllipse(avatar)
        draw_icon(p, "spark", avatar.adjusted(5, 5, -5, -5), c.accent_text)
        label = row.model or "Assistant"
        p.setFont(self._layouter.label_font)
        p.setPen(c.text)
        fm = QFontMetricsF(self._layouter.label_font)
        label_rect = QRectF(avatar.right() + 8, header.top(), fm.horizontalAdvance(label) + 2,
                            header.height())
        p.drawText(label_rect, int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
                   label)
        stamp = ""
        if row.node is not None and row.node.created_at > 0:
            stamp = datetime.fromtimestamp(row.node.created_at).strftime("%H:%M")
        elif row.streaming:
            stamp = row.waiting or "writing…"
        if stamp:
            p.setFont(self._layouter.small)
            p.setPen(c.muted)
            p.drawText(QRectF(label_rect.right() + 8, header.top(), 200, header.height()),
                       int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft), stamp)

    def _paint_typing(self, p: QPainter, origin: QPointF) -> None:
        c = self.colors
        p.setPen(Qt.PenStyle.NoPen)
        for i in range(3):
            strength = 1.0 if (self._state.typing_phase % 3) == i else 0.35
            color = mix(c.base, c.text, 0.55 * strength + 0.1)
            p.setBrush(color)
            p.drawEllipse(QPointF(origin.x() + 5 + i * 12, origin.y() + 11), 3.6, 3.6)

    def _paint_card(self, p: QPainter, row: ChatRow, layout: RowLayout, clip: QRectF) -> None:
        c = self.colors
        if layout.header is not None:
            self._paint_header(p, row, layout.header)
        card = layout.card
        assert card is not None
        hovered = self._state.hover is not None and self._state.hover == (row.key, "toggle")
        p.setPen(QPen(c.card_border, 1.0))
        p.setBrush(mix(c.card, c.hover, 0.5) if hovered else c.card)
        p.drawRoundedRect(card.adjusted(0.5, 0.5, -0.5, -0.5), CARD_RADIUS, CARD_RADIUS)
        line = QRectF(card.left(), card.top(), card.width(), CARD_H)
        icon_rect = QRectF(line.left() + 12, line.center().y() - 7, 14, 14)
        failed = row.failed
        tool = row.kind == RowKind.TOOL and not row.key.startswith(THINKING_KEY)
        draw_icon(p, "tool" if tool else "doc", icon_rect,
                   c.error if failed else c.muted)
        x = icon_rect.right() + 9
        name = row.label
        fonts = self._layouter
        p.setFont(fonts.mono_bold if row.kind == RowKind.TOOL else fonts.label_font)
        p.setPen(c.text)
        fm = QFontMetricsF(p.font())
        name_w = min(fm.horizontalAdvance(name) + 2, line.width() * 0.4)
        p.drawText(QRectF(x, line.top(), name_w, line.height()),
                   int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
                   fm.elidedText(name, Qt.TextElideMode.ElideRight, name_w))
        x += name_w + 10
        right = line.right() - 34
        summary = row.arguments_summary if row.kind == RowKind.TOOL else _first_line(row.text)
        status = ""
        if row.kind == RowKind.TOOL:
            # a denied call did not run: said in its row, folded or not
            status = "denied" if row.denied else "failed" if failed else _lines_label(row.text)
            sfm = QFontMetricsF(self._layouter.small)
            sw = sfm.horizontalAdvance(status) + 4
            p.setFont(self._layouter.small)
            p.setPen(c.error if failed or row.denied else c.muted)
            p.drawText(QRectF(right - sw, line.top(), sw, line.height()),
                       int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight), status)
            right -= sw + 12
        if summary and right > x + 20:
            p.setFont(fonts.theme.mono if row.kind == RowKind.TOOL else fonts.small)
            p.setPen(c.muted)
            sfm = QFontMetricsF(p.font())
            p.drawText(QRectF(x, line.top(), right - x, line.height()),
                       int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
                       sfm.elidedText(summary, Qt.TextElideMode.ElideRight, right - x))
        chevron = QRectF(line.right() - 26, line.center().y() - 6, 12, 12)
        draw_icon(p, "chevron-up" if row.expanded else "chevron-down", chevron,
                   c.text if hovered else c.muted)
        if not row.expanded:
            return
        p.setPen(QPen(c.card_border, 1.0))
        p.drawLine(QPointF(card.left() + 1, line.bottom()),
                   QPointF(card.right() - 1, line.bottom()))
        p.setFont(self._layouter.small)
        for doc, origin, title, part in (
                (layout.args, layout.args_origin, "Arguments", "args"),
                (layout.result, layout.result_origin, "Result", "result")):
            if doc is None:
                continue
            if row.kind == RowKind.TOOL and not row.key.startswith(THINKING_KEY):
                p.setPen(c.muted)
                p.setFont(self._layouter.small)
                p.drawText(QRectF(origin.x(), origin.y() - 19, 200, 16),
                           int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft), title)
            doc.paint(p, origin, text_color=c.error if (failed and title == "Result") else c.text,
                      clip=clip, selection=self._state.selected_span(row.key, part),
                      selection_colors=self._selection_colors())

    def _selection_colors(self) -> tuple[QColor, QColor]:
        """Selected text in the palette's highlight, as everywhere else on the desktop."""
        return self.colors.accent, self.colors.accent_text

    def _paint_error(self, p: QPainter, row: ChatRow, layout: RowLayout) -> None:
        c = self.colors
        card = layout.card
        assert card is not None and layout.body is not None
        p.setPen(QPen(c.error_border, 1.0))
        p.setBrush(c.error_bg)
        p.drawRoundedRect(card.adjusted(0.5, 0.5, -0.5, -0.5), CARD_RADIUS, CARD_RADIUS)
        icon = QRectF(card.left() + CARD_PAD, card.center().y() - 10, 20, 20)
        draw_icon(p, "alert", icon, c.error)
        layout.body.paint(p, layout.body_origin, text_color=c.text)

    def _paint_note(self, p: QPainter, row: ChatRow, layout: RowLayout) -> None:
        c = self.colors
        assert layout.body is not None
        x, col = self._layouter.column()
        y = layout.body_origin.y() + layout.body.height / 2
        p.setPen(QPen(c.card_border, 1.0))
        left_end = layout.body_origin.x() - 12
        right_start = layout.body_origin.x() + layout.body.natural_width + 12
        if left_end > x:
            p.drawLine(QPointF(x, y), QPointF(left_end, y))
        if right_start < x + col:
            p.drawLine(QPointF(right_start, y), QPointF(x + col, y))
        layout.body.paint(p, layout.body_origin, text_color=c.muted)

    def _paint_buttons(self, p: QPainter, row: ChatRow, layout: RowLayout, hovered: bool) -> None:
        c = self.colors
        for b in layout.buttons:
            if b.id == "toggle" or b.id.startswith("file:"):
                continue  # the card (or the attachment's tile) itself is the button
            if b.hover_only and not hovered:
                continue
            enabled = self._state.button_enabled(b)
            is_hover = enabled and self._state.hover == (row.key, b.id)
            if b.primary:
                p.setPen(Qt.PenStyle.NoPen)
                p.setBrush(mix(c.accent, c.text, 0.15) if is_hover else c.accent)
                p.drawRoundedRect(b.rect, 7, 7)
                if not enabled:
                    p.setBrush(c.hover)
                    p.drawRoundedRect(b.rect, 7, 7)
                p.setFont(self._layouter.label_font)
                p.setPen(c.accent_text if enabled else c.muted)
                label = b.label
                if b.id == "error:wait" and not enabled:
                    label = f"Retry in {self._state.wait_left()}s"
                p.drawText(b.rect, int(Qt.AlignmentFlag.AlignCenter), label)
                continue
            if is_hover:
                p.setPen(Qt.PenStyle.NoPen)
                p.setBrush(c.hover)
                p.drawRoundedRect(b.rect, 7, 7)
            if b.label and b.icon:  # an outlined pill: icon and word
                color = c.text if enabled else c.faint
                p.setPen(QPen(c.card_border if not is_hover else c.muted, 1.0))
                p.setBrush(c.hover if is_hover else Qt.BrushStyle.NoBrush)
                pill = b.rect.adjusted(0.5, 0.5, -0.5, -0.5)
                p.drawRoundedRect(pill, pill.height() / 2, pill.height() / 2)
                icon = QRectF(b.rect.left() + 10, b.rect.center().y() - 6.5, 13, 13)
                draw_icon(p, b.icon, icon, color)
                p.setFont(self._layouter.small)
                p.setPen(color)
                p.drawText(b.rect.adjusted(28, 0, -8, 0),
                           int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
                           b.label)
                continue
            if b.label:
                p.setFont(self._layouter.small)
                p.setPen(c.muted)
                p.drawText(b.rect, int(Qt.AlignmentFlag.AlignCenter), b.label)
                continue
            color = c.accent if b.active else (c.text if is_hover else c.muted)
            if not enabled:
                color = c.faint
            if b.icon == "copy" and self._state.is_copied(row.key, "copy"):
                draw_icon(p, "check", _icon_box(b.rect), c.success)
            elif b.icon == "copy":
                draw_icon(p, "copy", _icon_box(b.rect), color)
            else:
                draw_icon(p, "pin-filled" if b.active and b.icon == "pin" else b.icon,
                          _icon_box(b.rect), color)



def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _lines_label(text: str) -> str:
    if not text:
        return "no output"
    n = text.count("\n") + (0 if text.endswith("\n") else 1)
    return "1 line" if n == 1 else f"{n} lines"


def _icon_box(rect: QRectF) -> QRectF:
    size = 15.0
    return QRectF(rect.center().x() - size / 2, rect.center().y() - size / 2, size, size)
