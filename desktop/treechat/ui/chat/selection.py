"""Selecting text in the conversation with the mouse: press and drag over a message's text
(on into the messages below or above it), double click for a word, triple click for a
paragraph; Ctrl+C copies what is selected. Rows are painted, not widgets, so the selection's
ends are character positions in rows' laid-out documents, found with the documents' own
hit-test, and the row painter draws the spans it is given."""

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


PART_ORDER = {"body": 0, "args": 1, "result": 2}
WHOLE = 1 << 30  # "to the end of the part": painting and copying clamp it to the text


@dataclass(frozen=True, slots=True)
class TextPoint:
    """A place in the text of a row: character `position` of part `part` of row `key`."""

    key: str
    part: str
    position: int


@dataclass(frozen=True, slots=True)
class TextSelection:
    """The text from `anchor` (where the press was) to `cursor` (where the pointer went),
    possibly over several rows."""

    anchor: TextPoint
    cursor: TextPoint

    @property
    def empty(self) -> bool:
        return self.anchor == self.cursor


@dataclass(frozen=True, slots=True)
class SelectedSpans:
    """What the painter draws selected: every part of the rows strictly inside the
    selection, and the spans of the rows at its two ends."""

    inside: frozenset[str] = frozenset()
    ends: tuple[tuple[str, str, int, int], ...] = ()  # key, part, start, end

    def span(self, key: str, part: str) -> tuple[int, int] | None:
        if key in self.inside:
            return 0, WHOLE
        for k, p, start, end in self.ends:
            if k == key and p == part:
                return start, end
        return None


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


def _point_order(point: TextPoint, index: int) -> tuple[int, int, int]:
    return index, PART_ORDER.get(point.part, 0), point.position


def row_spans(row: ChatRow, layout: RowLayout, first: TextPoint | None,
              last: TextPoint | None) -> list[tuple[TextPart, tuple[int, int]]]:
    """The selected span of each part of `row`, from `first` (None: the row's start) to
    `last` (None: its end)."""
    out: list[tuple[TextPart, tuple[int, int]]] = []
    for part in text_parts(row, layout):
        order = PART_ORDER.get(part.name, 0)
        start, end = 0, WHOLE
        if first is not None:
            first_order = PART_ORDER.get(first.part, 0)
            if order < first_order:
                continue
            if order == first_order:
                start = first.position
        if last is not None:
            last_order = PART_ORDER.get(last.part, 0)
            if order > last_order:
                continue
            if order == last_order:
                end = last.position
        if start < end:
            out.append((part, (start, end)))
    return out


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
        self._selection: TextSelection | None = None
        self._dragging = False
        self._last_pos = QPoint()
        self._double_at: tuple[float, QPoint] | None = None
        self._edge_timer = QTimer(self)
        self._edge_timer.setInterval(EDGE_SCROLL_MS)
        self._edge_timer.timeout.connect(self._edge_scroll)
        view.viewport().installEventFilter(self)
        model = view.model()
        for signal in (model.modelReset, model.rowsInserted, model.rowsRemoved,
                       model.dataChanged, model.layoutChanged):
            signal.connect(self._resolve)  # rows moved or changed: the spans follow them

    # --- state ---------------------------------------------------------------------

    @property
    def selection(self) -> TextSelection | None:
        return self._selection

    def _set(self, selection: TextSelection | None) -> None:
        if selection != self._selection:
            self._selection = selection
            self._resolve()

    def _resolve(self) -> None:
        """Work out the spans the painter draws (after the selection or the rows change)."""
        spans = SelectedSpans()
        ordered = self._ordered()
        if ordered is not None:
            (first, first_index), (last, last_index) = ordered
            rows = self._rows()
            bounds: list[tuple[int, TextPoint | None, TextPoint | None]]
            if first_index == last_index:
                bounds = [(first_index, first, last)]
            else:
                bounds = [(first_index, first, None), (last_index, None, last)]
            ends: list[tuple[str, str, int, int]] = []
            for index, lo, hi in bounds:
                row = rows[index]
                for part, (start, end) in row_spans(row, self._delegate.layout(row), lo, hi):
                    ends.append((row.key, part.name, start, end))
            inside = frozenset(r.key for r in rows[first_index + 1:last_index])
            spans = SelectedSpans(inside, tuple(ends))
        if spans != self._delegate.interaction.selected:
            self._delegate.interaction.selected = spans
            self._view.viewport().update()

    def _ordered(self) -> tuple[tuple[TextPoint, int], tuple[TextPoint, int]] | None:
        """The selection's ends in reading order, with their rows' indexes (None when
        nothing is selected or a row of it is gone)."""
        selection = self._selection
        if selection is None or selection.empty:
            return None
        a, c = self._index_of(selection.anchor.key), self._index_of(selection.cursor.key)
        if a < 0 or c < 0:
            return None
        ends = sorted(((selection.anchor, a), (selection.cursor, c)),
                      key=lambda end: _point_order(end[0], end[1]))
        return ends[0], ends[1]

    def clear(self) -> None:
        self._dragging = False
        self._edge_timer.stop()
        self._set(None)

    def select(self, key: str, part: str, start: int, end: int) -> None:
        """Select characters `start`..`end` of a row's part (a search match, a test)."""
        self._set(TextSelection(TextPoint(key, part, start), TextPoint(key, part, end)))

    def _pieces(self) -> list[tuple[ChatRow, list[tuple[TextPart, tuple[int, int]]]]]:
        """Each selected row with its selected parts, in reading order."""
        ordered = self._ordered()
        if ordered is None:
            return []
        (first, first_index), (last, last_index) = ordered
        rows = self._rows()
        out = []
        for index in range(first_index, last_index + 1):
            row = rows[index]
            spans = row_spans(row, self._delegate.layout(row),
                              first if index == first_index else None,
                              last if index == last_index else None)
            if spans:
                out.append((row, spans))
        return out

    def _texts(self, markdown: bool) -> str:
        rows = []
        for row, spans in self._pieces():
            parts = [selected_markdown(row, part, span) if markdown
                     else selected_text(part, span) for part, span in spans]
            rows.append("\n".join(p for p in parts if p))
        return "\n\n".join(r for r in rows if r)

    def selected_text(self) -> str:
        """What is selected, as plain text ("" when nothing is): a message's paragraphs on
        lines of their own, an empty line between messages."""
        return self._texts(markdown=False)

    def has_selection(self) -> bool:
        return self._ordered() is not None

    def copy(self) -> bool:
        """Put the selection on the clipboard (plain text and Markdown); False when nothing
        is selected."""
        text = self.selected_text()
        if not text:
            return False
        mime = QMimeData()
        mime.setText(text)
        mime.setData("text/markdown", self._texts(markdown=True).encode())
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
            self.select(row.key, part_name, start, end)
            return
        selection = self.selection
        point = TextPoint(row.key, part_name, position)
        extend = bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        if extend and selection is not None:
            self._set(TextSelection(selection.anchor, point))
        else:
            self._set(TextSelection(point, point))
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
        self.select(row.key, part_name, start, end)
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
        point = self._drag_point(pos)
        if point is not None:
            self._set(TextSelection(selection.anchor, point))

    def _drag_point(self, pos: QPoint) -> TextPoint | None:
        """Where a drag at `pos` reaches: the nearest text of the row under the pointer (the
        first or last row when the pointer is past them); None over a row with no text."""
        rows = self._rows()
        if not rows:
            return None
        height = self._view.viewport().height()
        probe = QPoint(pos.x(), min(max(pos.y(), 0), max(0, height - 1)))
        index = self._view.indexAt(probe)
        if not index.isValid():  # the blank below the last row, or above the first
            top = self._view.visualRect(self._view.model().index(0, 0)).top()
            index = self._view.model().index(0 if probe.y() < top else len(rows) - 1, 0)
        row = rows[index.row()]
        parts = text_parts(row, self._delegate.layout(row))
        if not parts:
            return None
        local = QPointF(pos) - QPointF(self._view.visualRect(index).topLeft())
        part = next((p for p in parts if local.y() <= p.origin.y() + p.shown), parts[-1])
        return TextPoint(row.key, part.name, position_in(part, local - part.origin))

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
