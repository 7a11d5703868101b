"""Selecting part of a message with the mouse: press and drag over a message's text, double
click for a word, triple click for a paragraph; Ctrl+C copies what is selected. Rows are
painted, not widgets, so the selection is a pair of character positions in the row's laid-out
document, found with the document's own hit-test and painted by the row painter."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QMimeData, QObject, QPoint, QPointF, Qt, QTimer
from PySide6.QtGui import QGuiApplication, QMouseEvent, QTextCursor
from PySide6.QtWidgets import QAbstractItemView

from ..richtext.rendered import RenderedText
from .model import ChatRow, RowKind
from .row_layout import RowLayout

if TYPE_CHECKING:
    from .delegate import ChatDelegate

SELECTABLE = (RowKind.USER, RowKind.ASSISTANT, RowKind.STREAM, RowKind.TOOL, RowKind.SYSTEM)
EDGE_SCROLL_MS = 30  # while a drag is held past the top or bottom, the list scrolls this often
TRIPLE_SLOP = 6  # pixels the third click may be from the double click's


@dataclass(frozen=True, slots=True)
class TextPart:
    """One selectable text of a row: its name, its document and where it sits."""

    name: str  # "body", "args" or "result"
    text: RenderedText
    origin: QPointF  # row coordinates of the document's top-left corner
    shown: float  # how much of it is on screen (a folded message shows its top)


@dataclass(frozen=True, slots=True)
class TextSelection:
    """Characters `anchor`..`cursor` (either order) of part `part` of row `key`."""

    key: str
    part: str
    anchor: int
    cursor: int

    @property
    def span(self) -> tuple[int, int]:
        return min(self.anchor, self.cursor), max(self.anchor, self.cursor)

    @property
    def empty(self) -> bool:
        return self.anchor == self.cursor


def text_parts(row: ChatRow, layout: RowLayout) -> list[TextPart]:
    """The texts of a row that can be selected, in reading order."""
    if row.kind not in SELECTABLE:
        return []
    parts: list[TextPart] = []
    if layout.body is not None:
        parts.append(TextPart("body", layout.body, layout.body_origin, layout.body_height))
    for name, doc, origin in (("args", layout.args, layout.args_origin),
                              ("result", layout.result, layout.result_origin)):
        if doc is not None:
            parts.append(TextPart(name, doc, origin, doc.height))
    return parts


def part_named(row: ChatRow, layout: RowLayout, name: str) -> TextPart | None:
    return next((p for p in text_parts(row, layout) if p.name == name), None)


def _last_position(part: TextPart) -> int:
    document = part.text.document
    if part.shown >= part.text.height - 0.5:
        return max(0, document.characterCount() - 1)
    # a folded message: the last character that shows above the fold
    return _hit(part, QPointF(part.text.width, part.shown - 1))


def _hit(part: TextPart, local: QPointF) -> int:
    layout = part.text.document.documentLayout()
    return max(0, layout.hitTest(local - QPointF(0, part.text.top),
                                 Qt.HitTestAccuracy.FuzzyHit))


def over_text(part: TextPart, local: QPointF) -> bool:
    """True when `local` (document coordinates) is over the part's text."""
    width = max(part.text.natural_width, 24.0)
    return -2 <= local.x() <= width + 2 and -2 <= local.y() <= part.shown + 2


def spot_at(row: ChatRow, layout: RowLayout, pos: QPointF) -> tuple[str, int] | None:
    """(part, character position) of the text under `pos` (row coordinates), if any."""
    for part in text_parts(row, layout):
        local = pos - part.origin
        if over_text(part, local):
            return part.name, _hit(part, local)
    return None


def position_in(part: TextPart, local: QPointF) -> int:
    """The character a drag at `local` (document coordinates, maybe outside) reaches."""
    if local.y() < 0:
        return 0
    if local.y() > part.shown:
        return _last_position(part)
    return min(_hit(part, local), _last_position(part))


def word_span(part: TextPart, position: int) -> tuple[int, int]:
    cursor = QTextCursor(part.text.document)
    cursor.setPosition(position)
    cursor.select(QTextCursor.SelectionType.WordUnderCursor)
    return cursor.selectionStart(), cursor.selectionEnd()


def paragraph_span(part: TextPart, position: int) -> tuple[int, int]:
    cursor = QTextCursor(part.text.document)
    cursor.setPosition(position)
    cursor.movePosition(QTextCursor.MoveOperation.StartOfBlock)
    start = cursor.position()
    cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock)
    return start, min(cursor.position(), _last_position(part))


def _cursor(part: TextPart, span: tuple[int, int]) -> QTextCursor:
    end = max(0, part.text.document.characterCount() - 1)
    cursor = QTextCursor(part.text.document)
    cursor.setPosition(min(span[0], end))
    cursor.setPosition(min(span[1], end), QTextCursor.MoveMode.KeepAnchor)
    return cursor


def selected_text(part: TextPart, span: tuple[int, int]) -> str:
    """The selected characters as plain text, paragraphs on lines of their own."""
    return _cursor(part, span).selection().toPlainText()


def selected_markdown(row: ChatRow, part: TextPart, span: tuple[int, int]) -> str:
    """The selection as Markdown: the message's own source when all of it is selected,
    else what Qt's Markdown writer makes of the selected fragment."""
    end = max(0, part.text.document.characterCount() - 1)
    if part.name == "body" and span[0] == 0 and span[1] >= end:
        return row.text
    return _cursor(part, span).selection().toMarkdown().strip("\n")


class TextSelector(QObject):
    """Watches the chat list's viewport for presses, drags and double clicks over message
    text and keeps the one selection of the view (at most one message's text at a time).
    Buttons, links and code blocks' copy buttons keep their clicks: a press on them is left
    to the delegate."""

    def __init__(self, view: QAbstractItemView, delegate: ChatDelegate,
                 rows: Callable[[], list[ChatRow]],
                 index_of: Callable[[str], int]) -> None:
        super().__init__(view)
        self._view = view
        self._delegate = delegate
        self._rows = rows
        self._index_of = index_of
        self._dragging = False
        self._last_pos = QPoint()
        self._double_at: tuple[float, QPoint] | None = None
        self._edge_timer = QTimer(self)
        self._edge_timer.setInterval(EDGE_SCROLL_MS)
        self._edge_timer.timeout.connect(self._edge_scroll)
        view.viewport().installEventFilter(self)

    # --- state ---------------------------------------------------------------------

    @property
    def selection(self) -> TextSelection | None:
        return self._delegate.interaction.selection

    def _set(self, selection: TextSelection | None) -> None:
        if selection != self._delegate.interaction.selection:
            self._delegate.interaction.selection = selection
            self._view.viewport().update()

    def clear(self) -> None:
        self._dragging = False
        self._edge_timer.stop()
        self._set(None)

    def select(self, key: str, part: str, start: int, end: int) -> None:
        """Select characters `start`..`end` of a row's part (a search match, a test)."""
        self._set(TextSelection(key, part, start, end))

    def _current(self) -> tuple[ChatRow, TextPart, TextSelection] | None:
        selection = self.selection
        if selection is None or selection.empty:
            return None
        index = self._index_of(selection.key)
        if index < 0:
            return None
        row = self._rows()[index]
        part = part_named(row, self._delegate.layout(row), selection.part)
        if part is None:
            return None
        return row, part, selection

    def selected_text(self) -> str:
        """What is selected, as plain text ("" when nothing is)."""
        current = self._current()
        if current is None:
            return ""
        _row, part, selection = current
        return selected_text(part, selection.span)

    def has_selection(self) -> bool:
        return bool(self.selected_text())

    def copy(self) -> bool:
        """Put the selection on the clipboard (plain text and Markdown); False when nothing
        is selected."""
        current = self._current()
        if current is None:
            return False
        row, part, selection = current
        text = selected_text(part, selection.span)
        if not text:
            return False
        mime = QMimeData()
        mime.setText(text)
        mime.setData("text/markdown", selected_markdown(row, part, selection.span).encode())
        QGuiApplication.clipboard().setMimeData(mime)
        return True

    # --- the mouse -----------------------------------------------------------------

    def _row_under(self, pos: QPoint) -> tuple[ChatRow, RowLayout, QPointF] | None:
        index = self._view.indexAt(pos)
        rows = self._rows()
        if not index.isValid() or not 0 <= index.row() < len(rows):
            return None
        row = rows[index.row()]
        if self._delegate.heights.is_editing(row.key):
            return None
        origin = QPointF(self._view.visualRect(index).topLeft())
        return row, self._delegate.layout(row), QPointF(pos) - origin

    def _text_spot(self, pos: QPoint) -> tuple[ChatRow, RowLayout, str, int] | None:
        """The row and text position under `pos`, unless a button or link is there."""
        under = self._row_under(pos)
        if under is None:
            return None
        row, layout, local = under
        if self._delegate.hit(row, local):
            return None
        spot = spot_at(row, layout, local)
        if spot is None:
            return None
        return row, layout, spot[0], spot[1]

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind not in (QEvent.Type.MouseButtonPress, QEvent.Type.MouseMove,
                        QEvent.Type.MouseButtonRelease, QEvent.Type.MouseButtonDblClick):
            return False
        assert isinstance(event, QMouseEvent)
        pos = event.position().toPoint()
        if kind == QEvent.Type.MouseMove:
            return self._moved(pos, event)
        if event.button() != Qt.MouseButton.LeftButton:
            return False
        if kind == QEvent.Type.MouseButtonPress:
            self._pressed(pos, event)
            return False  # the list still takes focus and the current row from it
        if kind == QEvent.Type.MouseButtonDblClick:
            return self._double_clicked(pos)
        self._dragging = False
        self._edge_timer.stop()
        selection = self.selection
        if selection is not None and selection.empty:
            self._set(None)
        return False

    def _pressed(self, pos: QPoint, event: QMouseEvent) -> None:
        spot = self._text_spot(pos)
        if spot is None:
            self.clear()
            return
        row, layout, part_name, position = spot
        double = self._double_at
        now = self._delegate.interaction.monotonic()
        interval = QGuiApplication.styleHints().mouseDoubleClickInterval() / 1000
        if (double is not None and now - double[0] <= interval
                and (pos - double[1]).manhattanLength() <= TRIPLE_SLOP):
            self._double_at = None
            part = part_named(row, layout, part_name)
            assert part is not None
            start, end = paragraph_span(part, position)
            self._set(TextSelection(row.key, part_name, start, end))
            return
        selection = self.selection
        extend = bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        if extend and selection is not None and (selection.key, selection.part) == (
                row.key, part_name):
            self._set(TextSelection(row.key, part_name, selection.anchor, position))
        else:
            self._set(TextSelection(row.key, part_name, position, position))
        self._dragging = True
        self._last_pos = pos

    def _double_clicked(self, pos: QPoint) -> bool:
        spot = self._text_spot(pos)
        if spot is None:
            return False  # the delegate's double click (opening the text to read) stays
        row, layout, part_name, position = spot
        part = part_named(row, layout, part_name)
        assert part is not None
        start, end = word_span(part, position)
        self._set(TextSelection(row.key, part_name, start, end))
        self._dragging = False
        self._double_at = (self._delegate.interaction.monotonic(), pos)
        return True

    def _moved(self, pos: QPoint, event: QMouseEvent) -> bool:
        if self._dragging and event.buttons() & Qt.MouseButton.LeftButton:
            self._last_pos = pos
            self._extend_to(pos)
            height = self._view.viewport().height()
            if pos.y() < 0 or pos.y() > height:
                if not self._edge_timer.isActive():
                    self._edge_timer.start()
            else:
                self._edge_timer.stop()
            return True  # no hovering while selecting
        self._dragging = False
        self._edge_timer.stop()
        if event.buttons():
            return False  # a button held down elsewhere: the pointer stays as it is
        under = self._row_under(pos)
        on_action = under is not None and bool(self._delegate.hit(under[0], under[2]))
        on_text = (under is not None and not on_action
                   and spot_at(under[0], under[1], under[2]) is not None)
        self._delegate.interaction.over_text = on_text
        if on_action:
            return False  # the delegate shows the pointing hand
        viewport = self._view.viewport()
        shape = Qt.CursorShape.IBeamCursor if on_text else Qt.CursorShape.ArrowCursor
        if viewport.cursor().shape() != shape:
            viewport.setCursor(shape)
        return False

    def _extend_to(self, pos: QPoint) -> None:
        selection = self.selection
        if selection is None:
            return
        index = self._index_of(selection.key)
        if index < 0:
            self.clear()
            return
        row = self._rows()[index]
        layout = self._delegate.layout(row)
        part = part_named(row, layout, selection.part)
        if part is None:
            return
        top_left = QPointF(self._view.visualRect(self._view.model().index(index, 0)).topLeft())
        local = QPointF(pos) - top_left - part.origin
        self._set(TextSelection(selection.key, selection.part, selection.anchor,
                                position_in(part, local)))

    def _edge_scroll(self) -> None:
        bar = self._view.verticalScrollBar()
        height = self._view.viewport().height()
        y = self._last_pos.y()
        step = y if y < 0 else y - height if y > height else 0
        if not step or not self._dragging:
            self._edge_timer.stop()
            return
        bar.setValue(bar.value() + max(-60, min(60, step)))
        self._extend_to(self._last_pos)
