"""The chat list's one delegate (no widget per message): it answers Qt's size, paint, mouse,
tooltip and editor calls by handing them to the row layout, heights, painter and hit-testing
it is made of."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import (
    QAbstractItemModel,
    QEvent,
    QModelIndex,
    QPersistentModelIndex,
    QPointF,
    QRect,
    QRectF,
    QSize,
    Qt,
    Signal,
)
from PySide6.QtGui import QFont, QHelpEvent, QMouseEvent, QPainter, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolTip,
    QWidget,
)

from ..richtext.theme import MarkdownTheme
from .heights import RowHeights
from .hit_testing import READABLE, RowInteraction, button_of, hit
from .message_editor import MessageEditor
from .model import ChatRow
from .painting import RowPainter
from .row_layout import Button, RowLayout, RowLayouter
from .style import ROW_GAP, ChatColors, body_font

ModelIndex = QModelIndex | QPersistentModelIndex


class ChatDelegate(QStyledItemDelegate):
    """Lays out and paints `ChatRow`s; measured heights are cached per (row, width) and
    rows not measured yet get a quick estimate, so a long session opens at once."""

    actionTriggered = Signal(str, str)  # row key, action id
    editSubmitted = Signal(str, str)  # row key, text
    editCancelled = Signal(str)  # row key

    def __init__(self, view: QAbstractItemView, rows: Callable[[], list[ChatRow]],
                 monotonic: Callable[[], float] | None = None) -> None:
        super().__init__(view)
        self._view = view
        self._rows = rows
        self.interaction = RowInteraction() if monotonic is None else RowInteraction(monotonic)
        self.layouter = RowLayouter(MarkdownTheme.from_palette(view.palette(),
                                                               body_font(view.font())))
        self.heights = RowHeights(self.layouter, rows)
        self.painter = RowPainter(self.layouter, self.interaction,
                                  ChatColors.from_palette(view.palette()))
        self._editors: dict[str, MessageEditor] = {}
        # Documents lay themselves out on a timer; one destroyed on another thread (the last
        # reference going in a garbage collection there) makes Qt complain, so the caches
        # empty on the GUI thread the moment the list goes away.
        layouter = self.layouter
        view.destroyed.connect(lambda *_: layouter.clear())

    # --- state the view sets -------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self.interaction.busy

    @busy.setter
    def busy(self, value: bool) -> None:
        self.interaction.busy = value

    @property
    def typing_phase(self) -> int:
        return self.interaction.typing_phase

    @typing_phase.setter
    def typing_phase(self, value: int) -> None:
        self.interaction.typing_phase = value

    @property
    def wait_until(self) -> float:
        return self.interaction.wait_until

    @wait_until.setter
    def wait_until(self, value: float) -> None:
        self.interaction.wait_until = value

    @property
    def keyboard_focus(self) -> bool:
        return self.interaction.keyboard_focus

    @keyboard_focus.setter
    def keyboard_focus(self, value: bool) -> None:
        self.interaction.keyboard_focus = value

    @property
    def hover(self) -> tuple[str, str] | None:
        return self.interaction.hover

    @property
    def hover_row(self) -> str | None:
        return self.interaction.hover_row

    @property
    def colors(self) -> ChatColors:
        return self.painter.colors

    @property
    def theme(self) -> MarkdownTheme:
        return self.layouter.theme

    @property
    def small(self) -> QFont:
        return self.layouter.small

    # --- theme ---------------------------------------------------------------------------

    def refresh_theme(self, palette: QPalette | None = None, font: QFont | None = None) -> bool:
        """Re-read the palette and font; True when anything changed (heights may too)."""
        palette = palette if palette is not None else self._view.palette()
        font = font if font is not None else self._view.font()
        theme = MarkdownTheme.from_palette(palette, body_font(font))
        old = self.layouter.theme
        if theme.key == old.key:
            return False
        fonts_changed = theme.font != old.font or theme.mono != old.mono
        self.painter.colors = ChatColors.from_palette(palette)
        for editor in self._editors.values():
            editor.apply_colors(self.painter.colors)
        self.layouter.set_theme(theme)
        self.heights.forget(fonts_changed=fonts_changed)
        return True

    # --- measuring (see heights.RowHeights) ----------------------------------------------

    @property
    def width(self) -> int:
        """The row width every height is measured at."""
        return self.heights.width

    @width.setter
    def width(self, value: int) -> None:
        self.heights.width = value

    def remembered_heights(self) -> int:
        return self.heights.remembered_heights()

    def is_measured(self, row: ChatRow) -> bool:
        return self.heights.is_measured(row)

    def is_known(self, row: ChatRow) -> bool:
        return self.heights.is_known(row)

    def row_height(self, row: ChatRow) -> int:
        return self.heights.row_height(row)

    def measure(self, row: ChatRow, *, cache: bool = True, defer: bool = False,
                patch: int = -1) -> tuple[int, bool]:
        return self.heights.measure(row, cache=cache, defer=defer, patch=patch)

    def apply_pending(self) -> bool:
        return self.heights.apply_pending()

    def has_pending(self) -> bool:
        return self.heights.has_pending()

    def invalidate_hints(self) -> None:
        self.heights.invalidate_hints()

    def set_hint(self, row: int, height: int) -> None:
        self.heights.set_hint(row, height)

    # --- layout (see row_layout.RowLayouter) ---------------------------------------------

    def column(self) -> tuple[float, float]:
        """(x, width) of the centred reading column."""
        return self.layouter.column()

    def column_width(self) -> float:
        return self.layouter.column_width()

    def layout(self, row: ChatRow) -> RowLayout:
        return self.layouter.layout(row)

    # --- hit-testing (see hit_testing) ---------------------------------------------------

    def hit(self, row: ChatRow, pos: QPointF) -> str:
        """The action under `pos` (row coordinates): a button id, `code:<n>`, `link:<url>`."""
        return hit(self.layout(row), pos)

    def button(self, row: ChatRow, action: str) -> Button | None:
        return button_of(self.layout(row), action)

    def button_enabled(self, button: Button) -> bool:
        return self.interaction.button_enabled(button)

    def action_enabled(self, row: ChatRow, action: str) -> bool:
        return self.interaction.action_enabled(row, self.layout(row), action)

    def code_text(self, row: ChatRow, block: int) -> str:
        body = self.layout(row).body
        if body is None or not 0 <= block < len(body.code_blocks):
            return ""
        return body.code_blocks[block].text

    def mark_copied(self, key: str, action: str) -> None:
        self.interaction.mark_copied(key, action)

    def set_hover(self, row_key: str | None, action: str = "") -> None:
        if not self.interaction.set_hover(row_key, action):
            return
        viewport = self._view.viewport()
        viewport.setCursor(Qt.CursorShape.PointingHandCursor if self.interaction.hover else
                           Qt.CursorShape.IBeamCursor if self.interaction.over_text else
                           Qt.CursorShape.ArrowCursor)
        viewport.update()

    # --- Qt delegate interface -----------------------------------------------------------

    def sizeHint(self, option: QStyleOptionViewItem, index: ModelIndex) -> QSize:
        return self.heights.hint(index.row())

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: ModelIndex) -> None:
        rows = self._rows()
        if not 0 <= index.row() < len(rows):
            return
        row = rows[index.row()]
        if not self.is_measured(row):
            self.measure(row)
        layout = self.layout(row)
        if self.heights.is_editing(row.key):
            return
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        rect = option.rect
        top_left = QPointF(rect.topLeft())
        painter.translate(top_left)
        clip = QRectF(rect).intersected(QRectF(self._view.viewport().rect()))
        clip = clip.translated(-top_left)
        state = option.state
        focused = (self.keyboard_focus and self._view.hasFocus()
                   and bool(state & QStyle.StateFlag.State_HasFocus))
        hovered = self.hover_row == row.key or focused
        self.painter.paint(painter, row, layout, clip, hovered=hovered, focused=focused)
        painter.restore()

    def editorEvent(self, event: QEvent, model: QAbstractItemModel,
                    option: QStyleOptionViewItem, index: ModelIndex) -> bool:
        kind = event.type()
        if kind not in (QEvent.Type.MouseMove, QEvent.Type.MouseButtonPress,
                        QEvent.Type.MouseButtonRelease, QEvent.Type.MouseButtonDblClick):
            return False
        assert isinstance(event, QMouseEvent)
        rows = self._rows()
        if not 0 <= index.row() < len(rows):
            return False
        row = rows[index.row()]
        pos = event.position() - QPointF(option.rect.topLeft())
        action = self.hit(row, pos)
        if action and not action.startswith(("code:", "link:")) and not self.action_enabled(
                row, action):
            action = ""
        if kind == QEvent.Type.MouseMove:
            self.set_hover(row.key, action)
            return False
        if event.button() != Qt.MouseButton.LeftButton:
            return False
        state = self.interaction
        if kind == QEvent.Type.MouseButtonPress:
            state.pressed = (row.key, action) if action else None
            return bool(action)
        if kind == QEvent.Type.MouseButtonDblClick:
            if not action and row.kind in READABLE:
                self.actionTriggered.emit(row.key, "read")  # open the text to select from
                return True
            return bool(action)
        pressed, state.pressed = state.pressed, None
        if action and pressed == (row.key, action):
            self.actionTriggered.emit(row.key, action)
            return True
        return False

    def helpEvent(self, event: QHelpEvent, view: QAbstractItemView,
                  option: QStyleOptionViewItem, index: ModelIndex) -> bool:
        if event is None or event.type() != QEvent.Type.ToolTip:
            return super().helpEvent(event, view, option, index)
        rows = self._rows()
        if not 0 <= index.row() < len(rows):
            return False
        row = rows[index.row()]
        pos = QPointF(event.pos()) - QPointF(option.rect.topLeft())
        tip = self.interaction.tooltip(self.layout(row), self.hit(row, pos))
        if tip:
            QToolTip.showText(event.globalPos(), tip, view)
            return True
        QToolTip.hideText()
        return True

    # --- inline editing ------------------------------------------------------------------

    def createEditor(self, parent: QWidget, option: QStyleOptionViewItem,
                     index: ModelIndex) -> QWidget:
        row = self._rows()[index.row()]
        editor = MessageEditor(row.text, parent)
        editor.setFont(self.theme.font)
        editor.apply_colors(self.colors)
        editor.set_busy(self.busy)
        key = row.key
        editor.submitted.connect(lambda text: self.editSubmitted.emit(key, text))
        editor.cancelled.connect(lambda: self.editCancelled.emit(key))
        editor.heightChanged.connect(lambda: self._editor_resized(key, editor))
        self.heights.set_editing(key, editor.wanted_height() + int(ROW_GAP * 2))
        self._editors[key] = editor
        self.sizeHintChanged.emit(index)
        return editor

    def _editor_resized(self, key: str, editor: MessageEditor) -> None:
        if not self.heights.set_editing(key, editor.wanted_height() + int(ROW_GAP * 2)):
            return
        rows = self._rows()
        for i, row in enumerate(rows):
            if row.key == key:
                self.sizeHintChanged.emit(self._view.model().index(i, 0))
                break

    def setEditorData(self, editor: QWidget, index: ModelIndex) -> None:
        pass  # the editor starts from the message text and keeps what the user typed

    def setModelData(self, editor: QWidget, model: QAbstractItemModel,
                     index: ModelIndex) -> None:
        pass  # an edit is a new node, sent through editRequested, never written in place

    def updateEditorGeometry(self, editor: QWidget, option: QStyleOptionViewItem,
                             index: ModelIndex) -> None:
        x, col = self.column()
        rect = QRect(int(x + col * 0.08), option.rect.top() + int(ROW_GAP),
                     int(col * 0.92), option.rect.height() - int(ROW_GAP * 2))
        editor.setGeometry(rect)

    def destroyEditor(self, editor: QWidget, index: ModelIndex) -> None:
        for key, widget in list(self._editors.items()):
            if widget is editor:
                self.forget_editor(key)
        super().destroyEditor(editor, index)
        if index.isValid():
            self.sizeHintChanged.emit(index)

    def editing_keys(self) -> tuple[str, ...]:
        return self.heights.editing_keys()

    def forget_editor(self, key: str) -> None:
        self.heights.stop_editing(key)
        self._editors.pop(key, None)

    def editor(self, key: str) -> MessageEditor | None:
        return self._editors.get(key)
