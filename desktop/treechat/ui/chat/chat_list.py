"""The list widget of the chat view: scrolls by lines, not items, lands on the newest message
when focused from the keyboard, paints the empty state, and hands key presses, context
menus and resizes to the view that owns it."""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QEvent, QPoint, QRectF, Qt
from PySide6.QtGui import (
    QContextMenuEvent,
    QFocusEvent,
    QFont,
    QKeyEvent,
    QPainter,
    QPaintEvent,
    QResizeEvent,
)
from PySide6.QtWidgets import QAbstractItemView, QListView, QWidget

from .delegate import ChatDelegate
from .scrolling import Anchor


class ChatListOwner(Protocol):
    """What the list asks of the view it sits in."""

    def handle_key(self, event: QKeyEvent) -> bool: ...

    def open_menu(self, index: int, global_pos: QPoint) -> object: ...

    def capture_anchor(self) -> Anchor: ...

    def resized(self, anchor: Anchor) -> None: ...


class ChatList(QListView):
    def __init__(self, owner: ChatListOwner, parent: QWidget) -> None:
        super().__init__(parent)
        self._owner = owner
        self._delegate: ChatDelegate | None = None

    def set_chat_delegate(self, delegate: ChatDelegate) -> None:
        self._delegate = delegate
        self.setItemDelegate(delegate)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if self._owner.handle_key(event):
            return
        before = self.currentIndex()
        super().keyPressEvent(event)
        # auto-scroll is off (a click on a tall message must not jump to its top), so
        # moving between messages with the keyboard brings the new one into view here
        if self.currentIndex() != before and self.currentIndex().isValid():
            self.scrollTo(self.currentIndex(), QAbstractItemView.ScrollHint.EnsureVisible)

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        if event.reason() == QContextMenuEvent.Reason.Mouse:
            index = self.indexAt(event.pos())
        else:
            index = self.currentIndex()
            if index.isValid():
                event = QContextMenuEvent(event.reason(), self.visualRect(index).center(),
                                          self.viewport().mapToGlobal(
                                              self.visualRect(index).center()))
        if index.isValid():
            self.setCurrentIndex(index)
            self._owner.open_menu(index.row(), event.globalPos())

    def focusInEvent(self, event: QFocusEvent) -> None:
        # arriving by keyboard lands on the newest message, not the oldest
        if not self.currentIndex().isValid() and self.model() is not None:
            count = self.model().rowCount()
            if count:
                self.setCurrentIndex(self.model().index(count - 1, 0))
        super().focusInEvent(event)

    def resizeEvent(self, event: QResizeEvent) -> None:
        anchor = self._owner.capture_anchor()
        super().resizeEvent(event)
        self._owner.resized(anchor)

    def updateGeometries(self) -> None:
        super().updateGeometries()
        # QListView steps by whole items; a chat scrolls by lines
        self.verticalScrollBar().setSingleStep(36)
        self.verticalScrollBar().setPageStep(max(36, self.viewport().height() - 48))

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        if self.model() is not None and self.model().rowCount() == 0:
            self._paint_empty(self.viewport())

    def viewportEvent(self, event: QEvent) -> bool:
        if self._delegate is not None:
            if event.type() == QEvent.Type.Leave:
                self._delegate.set_hover(None)
            elif event.type() == QEvent.Type.MouseButtonPress:
                self._delegate.keyboard_focus = False
        return super().viewportEvent(event)

    def _paint_empty(self, viewport: QWidget) -> None:
        if self._delegate is None:
            return
        painter = QPainter(viewport)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        colors = self._delegate.colors
        rect = QRectF(viewport.rect())
        title = QFont(self._delegate.theme.font)
        title.setPointSizeF(title.pointSizeF() * 1.35)
        title.setWeight(QFont.Weight.DemiBold)
        painter.setFont(title)
        painter.setPen(colors.text)
        painter.drawText(rect.adjusted(0, -30, 0, -30), int(Qt.AlignmentFlag.AlignCenter),
                         "What's on your mind?")
        painter.setFont(self._delegate.small)
        painter.setPen(colors.muted)
        painter.drawText(rect.adjusted(0, 14, 0, 14), int(Qt.AlignmentFlag.AlignCenter),
                         "Every retry and edit is kept as a version you can switch back to.")
        painter.end()
