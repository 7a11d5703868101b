"""Paints session list rows: day headers, project headers (a folder with its chat count, open
or folded, highlighted while chats dragged over it would drop into it; its chats indented
under it), session titles with a rounded selection, "queued" or
"replying…" while the chat waits for or gets its reply (a dot while a turn sets up), a fork
mark on branched sessions and the snippet of a search hit."""

from __future__ import annotations

from PySide6.QtCore import (
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QPointF,
    QRect,
    QRectF,
    QSize,
    Qt,
)
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from ..common.theme import colors_of
from .roles import (
    ACTIVITY_ROLE,
    COLLAPSED_ROLE,
    FORKED_ROLE,
    KIND_ROLE,
    PROJECT_ID_ROLE,
    RUNNING_ROLE,
    SNIPPET_ROLE,
)

Index = QModelIndex | QPersistentModelIndex

H_MARGIN = 8
H_PAD = 10
PROJECT_INDENT = 16  # a chat in a project sits this far in under its header


class SessionListDelegate(QStyledItemDelegate):
    """Every row of a mode has the same height, so the view can use uniform item sizes and
    stay fast with thousands of sessions."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.with_snippets = False
        self.drop_project: str | None = None  # the project chats dragged here would go to

    def row_height(self, option_font: QFont) -> int:
        fm = QFontMetrics(option_font)
        if self.with_snippets:
            return fm.height() * 2 + 20
        return fm.height() + 16

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        return QSize(200, self.row_height(option.font))

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        colors = colors_of(option.palette)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRect(option.rect)
        if index.data(KIND_ROLE) == "header":
            font = QFont(option.font)
            font.setPointSizeF(max(7.0, font.pointSizeF() * 0.85))
            font.setWeight(QFont.Weight.DemiBold)
            painter.setFont(font)
            painter.setPen(QColor(colors.muted))
            text_rect = rect.adjusted(H_MARGIN + H_PAD, 0, -H_MARGIN, -4)
            painter.drawText(
                text_rect,
                int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignBottom),
                str(index.data()).upper(),
            )
            painter.restore()
            return
        if index.data(KIND_ROLE) == "project":
            self._paint_project(painter, option, index, rect,
                                index.data(PROJECT_ID_ROLE) == self.drop_project)
            painter.restore()
            return
        if index.data(PROJECT_ID_ROLE) and not self.with_snippets:
            rect.setLeft(rect.left() + PROJECT_INDENT)

        card = QRectF(rect.adjusted(H_MARGIN, 1, -H_MARGIN, -1))
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        hovered = bool(option.state & QStyle.StateFlag.State_MouseOver)
        if selected or hovered:
            path = QPainterPath()
            path.addRoundedRect(card, 7, 7)
            fill = QColor(colors.accent_soft if selected else colors.hover)
            painter.fillPath(path, fill)
        if option.state & QStyle.StateFlag.State_HasFocus and selected:
            pen = QPen(QColor(colors.accent))
            pen.setWidthF(1.0)
            painter.setPen(pen)
            painter.drawRoundedRect(card.adjusted(0.5, 0.5, -0.5, -0.5), 7, 7)

        left = int(card.left()) + H_PAD
        right = int(card.right()) - H_PAD
        running = bool(index.data(RUNNING_ROLE))
        doing = str(index.data(ACTIVITY_ROLE) or "")
        if doing:
            small = QFont(option.font)
            small.setPointSizeF(max(7.0, small.pointSizeF() * 0.85))
            sfm = QFontMetrics(small)
            # never more than half the row: the title stays readable
            room = max(0, (right - left) // 2)
            shown = sfm.elidedText(doing, Qt.TextElideMode.ElideRight, room)
            width = sfm.horizontalAdvance(shown)
            painter.setFont(small)
            painter.setPen(QColor(colors.muted if doing.startswith("queued")
                                  else colors.accent))
            top = int(card.top()) + 8 if self.with_snippets else rect.top()
            height = QFontMetrics(option.font).height() if self.with_snippets else rect.height()
            painter.drawText(
                QRect(right - width, top, width, height),
                int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter),
                shown,
            )
            right -= width + 8
        elif running:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(colors.accent))
            painter.drawEllipse(QPointF(right - 3, card.center().y()), 3.5, 3.5)
            right -= 14
        if index.data(FORKED_ROLE):
            self._draw_fork(painter, QPointF(left + 5, card.center().y()), colors.muted)
            left += 16

        fm = QFontMetrics(option.font)
        title = fm.elidedText(str(index.data()), Qt.TextElideMode.ElideRight, right - left)
        snippet = str(index.data(SNIPPET_ROLE) or "")
        painter.setFont(option.font)
        painter.setPen(QColor(colors.text))
        if self.with_snippets:
            top = int(card.top()) + 8
            painter.drawText(
                QRect(left, top, right - left, fm.height()),
                int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                title,
            )
            painter.setPen(QColor(colors.muted))
            small = QFont(option.font)
            small.setPointSizeF(max(7.0, small.pointSizeF() * 0.9))
            painter.setFont(small)
            sfm = QFontMetrics(small)
            painter.drawText(
                QRect(left, top + fm.height() + 2, right - left, sfm.height()),
                int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                sfm.elidedText(snippet or "title matches", Qt.TextElideMode.ElideRight,
                               right - left),
            )
        else:
            painter.drawText(
                QRect(left, rect.top(), right - left, rect.height()),
                int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                title,
            )
        painter.restore()

    @staticmethod
    def _paint_project(painter: QPainter, option: QStyleOptionViewItem, index: Index,
                       rect: QRect, dropping: bool) -> None:
        colors = colors_of(option.palette)
        card = QRectF(rect.adjusted(H_MARGIN, 1, -H_MARGIN, -1))
        if dropping:  # chats dragged over it go into it on release
            path = QPainterPath()
            path.addRoundedRect(card.adjusted(1, 1, -1, -1), 7, 7)
            painter.fillPath(path, QColor(colors.accent_soft))
            # dashed, as a place to drop reads, unlike the selected row's solid frame
            outline = QPen(QColor(colors.accent), 1.6, Qt.PenStyle.DashLine)
            painter.setPen(outline)
            painter.drawPath(path)
        elif option.state & QStyle.StateFlag.State_MouseOver:
            path = QPainterPath()
            path.addRoundedRect(card, 7, 7)
            painter.fillPath(path, QColor(colors.hover))
        x, y = card.left() + H_PAD, card.center().y()
        pen = QPen(QColor(colors.muted))
        pen.setWidthF(1.4)
        painter.setPen(pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        # the fold mark: pointing right when folded, down when open
        if index.data(COLLAPSED_ROLE):
            painter.drawPolyline([QPointF(x, y - 4), QPointF(x + 4, y), QPointF(x, y + 4)])
        else:
            painter.drawPolyline([QPointF(x - 1, y - 2), QPointF(x + 3, y + 2),
                                  QPointF(x + 7, y - 2)])
        # a folder
        fx = x + 14
        folder = QPainterPath(QPointF(fx, y - 5))
        folder.lineTo(fx + 5, y - 5)
        folder.lineTo(fx + 7, y - 3)
        folder.lineTo(fx + 14, y - 3)
        folder.lineTo(fx + 14, y + 5)
        folder.lineTo(fx, y + 5)
        folder.closeSubpath()
        painter.setPen(QPen(QColor(colors.accent), 1.3))
        painter.drawPath(folder)
        left = int(fx + 22)
        right = int(card.right()) - H_PAD
        font = QFont(option.font)
        font.setWeight(QFont.Weight.DemiBold)
        small = QFont(option.font)
        small.setPointSizeF(max(7.0, small.pointSizeF() * 0.85))
        count = str(index.data(SNIPPET_ROLE) or "")
        cw = QFontMetrics(small).horizontalAdvance(count)
        painter.setFont(small)
        painter.setPen(QColor(colors.muted))
        painter.drawText(QRect(right - cw, rect.top(), cw, rect.height()),
                         int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter), count)
        painter.setFont(font)
        painter.setPen(QColor(colors.text))
        name = QFontMetrics(font).elidedText(str(index.data()), Qt.TextElideMode.ElideRight,
                                             right - cw - 8 - left)
        painter.drawText(QRect(left, rect.top(), right - left, rect.height()),
                         int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), name)

    @staticmethod
    def _draw_fork(painter: QPainter, at: QPointF, color: str) -> None:
        pen = QPen(QColor(color))
        pen.setWidthF(1.4)
        painter.setPen(pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        x, y = at.x(), at.y()
        painter.drawLine(QPointF(x - 3, y - 5), QPointF(x - 3, y + 5))
        path = QPainterPath(QPointF(x - 3, y + 1))
        path.cubicTo(QPointF(x - 3, y - 2), QPointF(x + 3, y - 1), QPointF(x + 3, y - 5))
        painter.drawPath(path)
        painter.drawEllipse(QPointF(x + 3, y - 5), 1.3, 1.3)
        painter.drawEllipse(QPointF(x - 3, y + 5), 1.3, 1.3)

    def updateEditorGeometry(
        self, editor: QWidget, option: QStyleOptionViewItem, index: Index
    ) -> None:
        editor.setGeometry(option.rect.adjusted(H_MARGIN, 2, -H_MARGIN, -2))
