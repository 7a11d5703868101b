"""Paints chat rows (bubbles, replies, tool cards, the streaming reply, errors) and hit-tests
their per-message actions. One delegate for the whole list: no widget per message."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from PySide6.QtCore import (
    QEvent,
    QModelIndex,
    QPointF,
    QRect,
    QRectF,
    QSize,
    Qt,
    Signal,
)
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetricsF,
    QHelpEvent,
    QKeyEvent,
    QLinearGradient,
    QMouseEvent,
    QPainter,
    QPainterPath,
    QPalette,
    QPen,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from ..richtext.markdown import (
    DocumentCache,
    HeightEstimate,
    MarkdownTheme,
    RenderedText,
    draw_check_icon,
    draw_copy_icon,
    is_dark,
    mix,
    render_markdown,
    render_plain,
)
from .model import ChatRow, RowKind

SIDE_MARGIN = 24.0
MAX_COLUMN = 800.0
ROW_GAP = 8.0
END_MARGIN = 18.0
HEIGHTS_KEPT = 20_000  # row heights remembered across widths before the others go
TURN_GAP = 14.0
BUBBLE_PAD_X = 14.0
BUBBLE_PAD_Y = 9.0
BUBBLE_RADIUS = 16.0
BUBBLE_SHARE = 0.82
HEADER_H = 30.0
AVATAR = 22.0
FOOTER_H = 30.0
BUTTON = 28.0
CARD_H = 36.0
CARD_RADIUS = 10.0
CARD_PAD = 12.0
# A message taller than this is folded to COLLAPSED_HEIGHT with a "Show more" button; even
# unfolded it stops at MAX_BODY (item views cannot address rows much taller than 32k px).
COLLAPSE_ABOVE = 1500.0
COLLAPSED_HEIGHT = 640.0
MAX_BODY = 28_000.0
MORE_H = 30.0
TOOL_RESULT_LINES = 60
TOOL_RESULT_CHARS = 20_000

ActionHandler = Callable[[str, str], None]
Estimators = tuple[HeightEstimate, HeightEstimate]  # bubble text, reply text


@dataclass(frozen=True, slots=True)
class ChatColors:
    """Row colours derived from the palette, so light and dark themes both look right."""

    dark: bool
    base: QColor
    text: QColor
    muted: QColor
    faint: QColor
    accent: QColor
    accent_text: QColor
    user_bubble: QColor
    card: QColor
    card_border: QColor
    hover: QColor
    focus: QColor
    error: QColor
    error_bg: QColor
    error_border: QColor
    warning: QColor
    warning_bg: QColor
    success: QColor

    @classmethod
    def from_palette(cls, palette: QPalette) -> ChatColors:
        dark = is_dark(palette)
        base = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.Text)
        accent = palette.color(QPalette.ColorRole.Highlight)
        red = QColor("#e5534b" if dark else "#cf222e")
        amber = QColor("#d29922" if dark else "#9a6700")
        focus = QColor(accent)
        focus.setAlphaF(0.55)
        return cls(
            dark=dark,
            base=base,
            text=text,
            muted=mix(text, base, 0.45),
            faint=mix(text, base, 0.7),
            accent=accent,
            accent_text=palette.color(QPalette.ColorRole.HighlightedText),
            user_bubble=mix(mix(base, text, 0.075 if dark else 0.05), accent,
                            0.10 if dark else 0.07),
            card=mix(base, text, 0.035 if dark else 0.022),
            card_border=mix(base, text, 0.14 if dark else 0.11),
            hover=mix(base, text, 0.12 if dark else 0.08),
            focus=focus,
            error=red,
            error_bg=mix(base, red, 0.12 if dark else 0.07),
            error_border=mix(base, red, 0.45 if dark else 0.35),
            warning=amber,
            warning_bg=mix(base, amber, 0.16 if dark else 0.12),
            success=QColor("#3fb950" if dark else "#1a7f37"),
        )


@dataclass(slots=True)
class Button:
    """A clickable spot on a row, in row coordinates."""

    id: str
    rect: QRectF
    tooltip: str
    icon: str = ""
    label: str = ""
    hover_only: bool = True  # appears on hover / keyboard focus only
    active: bool = False  # drawn highlighted (pinned)
    primary: bool = False  # a filled text button (the error row's action)
    enabled: bool = True


@dataclass(slots=True)
class RowLayout:
    """Where everything of one row goes, relative to the row's top-left corner."""

    height: float
    body: RenderedText | None = None
    body_origin: QPointF = field(default_factory=QPointF)
    args: RenderedText | None = None
    args_origin: QPointF = field(default_factory=QPointF)
    result: RenderedText | None = None
    result_origin: QPointF = field(default_factory=QPointF)
    body_height: float = 0.0  # how much of the body shows (folded messages show less)
    fold: str = ""  # "" | "collapsed" | "expanded"
    bubble: QRectF | None = None
    card: QRectF | None = None
    header: QRectF | None = None
    footer: QRectF | None = None
    badge: QRectF | None = None
    buttons: list[Button] = field(default_factory=list)


BUSY_LOCKED = ("edit", "retry")
READABLE = (RowKind.USER, RowKind.ASSISTANT, RowKind.STREAM, RowKind.TOOL, RowKind.SYSTEM)


class ChatDelegate(QStyledItemDelegate):
    """Lays out and paints `ChatRow`s; measured heights are cached per (row, width) and
    rows not measured yet get a quick estimate, so a long session opens at once."""

    actionTriggered = Signal(str, str)  # row key, action id
    editSubmitted = Signal(str, str)  # row key, text
    editCancelled = Signal(str)  # row key

    def __init__(self, view: QAbstractItemView, rows: Callable[[], list[ChatRow]]) -> None:
        super().__init__(view)
        self._view = view
        self._rows = rows
        self.busy = False
        self._width = 600
        self._hints: list[QSize] | None = None
        self._column: tuple[int, tuple[float, float]] | None = None
        self._estimators_for: tuple[tuple[int, str], Estimators] | None = None
        self._hints_rows: list[ChatRow] | None = None
        self.typing_phase = 0
        self.wait_until = 0.0  # a rate-limited turn's retry unlocks at this monotonic time
        self._no_cache = False
        self.hover: tuple[str, str] | None = None
        self.hover_row: str | None = None
        self.keyboard_focus = False  # the focus ring shows once the keyboard is used
        self._pressed: tuple[str, str] | None = None
        self._copied: dict[tuple[str, str], float] = {}
        self._docs = DocumentCache(320)
        self._layouts: OrderedDict[tuple[Any, ...], RowLayout] = OrderedDict()
        self._heights: dict[tuple[Any, ...], int] = {}
        self._estimates: dict[tuple[Any, ...], int] = {}
        self._pending: dict[tuple[Any, ...], int] = {}
        self._editing: dict[str, int] = {}
        self._editors: dict[str, MessageEditor] = {}
        # Documents lay themselves out on a timer; one destroyed on another thread (the last
        # reference going in a garbage collection there) makes Qt complain, so the caches
        # empty on the GUI thread the moment the list goes away.
        docs, layouts = self._docs, self._layouts
        view.destroyed.connect(lambda *_: (docs.clear(), layouts.clear()))
        self.colors = ChatColors.from_palette(view.palette())
        self.theme = MarkdownTheme.from_palette(view.palette(), _body_font(view.font()))
        self._fonts()

    # --- theme ---------------------------------------------------------------------------

    def _fonts(self) -> None:
        base = self.theme.font
        self.small = QFont(base)
        self.small.setPointSizeF(max(6.5, base.pointSizeF() * 0.86))
        self.label_font = QFont(base)
        self.label_font.setWeight(QFont.Weight.DemiBold)
        self.mono_bold = QFont(self.theme.mono)
        self.mono_bold.setWeight(QFont.Weight.DemiBold)

    def refresh_theme(self, palette: QPalette | None = None, font: QFont | None = None) -> bool:
        """Re-read the palette and font; True when anything changed (heights may too)."""
        palette = palette if palette is not None else self._view.palette()
        font = font if font is not None else self._view.font()
        theme = MarkdownTheme.from_palette(palette, _body_font(font))
        if theme.key == self.theme.key:
            return False
        fonts_changed = theme.font != self.theme.font or theme.mono != self.theme.mono
        self.theme = theme
        self.colors = ChatColors.from_palette(palette)
        for editor in self._editors.values():
            editor.apply_colors(self.colors)
        self._fonts()
        self._layouts.clear()
        self._docs.clear()
        if fonts_changed:
            self._heights.clear()
            self._estimates.clear()
            self._pending.clear()
        self._hints = None
        return True

    # --- measuring -----------------------------------------------------------------------

    @property
    def width(self) -> int:
        """The row width every height is measured at."""
        return self._width

    @width.setter
    def width(self, value: int) -> None:
        if value != self._width:
            self._width = value
            self._hints = None
            self._forget_other_widths()

    def remembered_heights(self) -> int:
        """How many row heights (measured or estimated, any width) are held."""
        return len(self._heights) + len(self._estimates)

    def _forget_other_widths(self) -> None:
        """Heights are kept per width; a window dragged wider and narrower would pile up
        one set per pixel. Past a bound, only those for the current width stay."""
        for table in (self._heights, self._estimates):
            if len(table) > HEIGHTS_KEPT:
                for key in [k for k in table if k[1] != self._width]:
                    del table[key]

    def height_key(self, row: ChatRow) -> tuple[Any, ...]:
        return (row.layout_key, self.width)

    def is_measured(self, row: ChatRow) -> bool:
        """True when the row's exact height is in use (pending heights do not count)."""
        return row.key in self._editing or self.height_key(row) in self._heights

    def is_known(self, row: ChatRow) -> bool:
        """True when the exact height is in use or measured and waiting to be applied."""
        key = self.height_key(row)
        return row.key in self._editing or key in self._heights or key in self._pending

    def row_height(self, row: ChatRow) -> int:
        """The exact height when known, else a cheap estimate."""
        if row.key in self._editing:
            return self._editing[row.key]
        key = (row.layout_key, self._width)
        known = self._heights.get(key)
        if known is None:
            known = self._estimates.get(key)
            if known is None:
                known = self._estimates[key] = self._estimate(row)
        return known

    def measure(self, row: ChatRow, *, cache: bool = True, defer: bool = False,
                patch: int = -1) -> tuple[int, bool]:
        """Lay the row out for real; returns (height, whether it differs from before).
        `cache=False` measures without keeping the documents (rows far off screen would
        only push the visible ones out of the cache); `defer=True` holds the height back
        until `apply_pending`, so many rows cost one relayout of the list; `patch` is the
        row's index when only its hint needs updating (the growing streamed reply)."""
        key = self.height_key(row)
        before = self.row_height(row)
        pending = self._pending.pop(key, None)
        if pending is not None and not defer:
            height = pending
        elif cache:
            height = int(self.layout(row).height + 0.999)
        else:
            self._no_cache = True
            try:
                height = int(self._build(row).height + 0.999)
            finally:
                self._no_cache = False
        if defer:
            self._pending[key] = height
            return height, False
        self._heights[key] = height
        if patch >= 0:
            self.set_hint(patch, height)
        elif height != before:
            self._hints = None
        return height, height != before

    def apply_pending(self) -> bool:
        """Put the heights measured in the background to use; True if any moved a row."""
        changed = False
        for key, height in self._pending.items():
            before = self._heights.get(key, self._estimates.get(key))
            self._heights[key] = height
            changed |= before != height
        self._pending.clear()
        if changed:
            self._hints = None
        return changed

    def has_pending(self) -> bool:
        return bool(self._pending)

    def _estimators(self) -> Estimators:
        """(bubble text, reply text) estimates at the current width and theme."""
        key = (self._width, self.theme.key)
        cached = self._estimators_for
        if cached is None or cached[0] != key:
            col = self.column()[1]
            cached = self._estimators_for = (key, (
                HeightEstimate(col * BUBBLE_SHARE - 2 * BUBBLE_PAD_X, self.theme),
                HeightEstimate(col, self.theme)))
        return cached[1]

    def _estimate(self, row: ChatRow) -> int:
        """The row's height with only its text's height guessed: the chrome around the text
        adds up as in `_build`, so a row whose text is guessed right is exact."""
        if row.kind == RowKind.USER:
            shown, fold = self._fold(row, self._estimators()[0].of(row.text))
            h = ROW_GAP + 8 + shown + 2 * BUBBLE_PAD_Y + FOOTER_H + (MORE_H if fold else 0)
        elif row.kind in (RowKind.ASSISTANT, RowKind.STREAM):
            if row.kind == RowKind.STREAM and not row.text:
                shown, fold = 22.0, ""
            else:
                shown, fold = self._fold(row, self._estimators()[1].of(row.text))
            h = (TURN_GAP + HEADER_H + 2 if row.starts_turn else ROW_GAP) + shown
            h += MORE_H + 2 if fold else 0
            h += 6 + FOOTER_H if row.kind == RowKind.ASSISTANT and row.ends_turn else 8
        elif row.kind in (RowKind.TOOL, RowKind.SYSTEM):
            h = (TURN_GAP + HEADER_H + 4 if row.starts_turn else 4) + CARD_H
            h += (10 if row.ends_turn else 4) + (200 if row.expanded else 0)
        else:
            h = 48
        if row.at_end:
            h += END_MARGIN
        return int(h + 0.999)

    def column(self) -> tuple[float, float]:
        """(x, width) of the centred reading column."""
        cached = self._column
        if cached is None or cached[0] != self._width:
            width = max(120.0, min(MAX_COLUMN, self._width - 2 * SIDE_MARGIN))
            cached = self._column = (self._width, ((self._width - width) / 2, width))
        return cached[1]

    def column_width(self) -> float:
        return self.column()[1]

    # --- layout --------------------------------------------------------------------------

    def layout(self, row: ChatRow) -> RowLayout:
        key = (row.layout_key, self.width, self.theme.key, row.version, row.pinned)
        cached = self._layouts.get(key)
        if cached is not None and row.kind != RowKind.STREAM:
            self._layouts.move_to_end(key)
            return cached
        layout = self._build(row)
        if row.kind != RowKind.STREAM:
            self._layouts[key] = layout
            while len(self._layouts) > 512:
                self._layouts.popitem(last=False)
        return layout

    def _doc(self, row: ChatRow, part: str, width: float, build: Callable[[], RenderedText]
             ) -> RenderedText:
        if row.kind == RowKind.STREAM or self._no_cache:
            return build()  # a stream changes on every flush: not worth caching
        return self._docs.get((row.key, part, int(width), self.theme.key), build)

    def _build(self, row: ChatRow) -> RowLayout:
        if row.kind == RowKind.USER:
            layout = self._build_user(row)
        elif row.kind in (RowKind.ASSISTANT, RowKind.STREAM):
            layout = self._build_reply(row)
        elif row.kind in (RowKind.TOOL, RowKind.SYSTEM):
            layout = self._build_card(row)
        elif row.kind == RowKind.ERROR:
            layout = self._build_error(row)
        else:
            layout = self._build_note(row)
        if row.at_end:
            layout.height += END_MARGIN  # the last row never sits flush on the edge
        return layout

    def _fold(self, row: ChatRow, full: float) -> tuple[float, str]:
        """(height shown, fold state) of a message body `full` pixels tall."""
        if row.kind == RowKind.STREAM or full <= COLLAPSE_ABOVE:
            return full, ""
        if row.expanded:
            return min(full, MAX_BODY), "expanded"
        return COLLAPSED_HEIGHT, "collapsed"

    def _more_button(self, fold: str, rect: QRectF) -> Button:
        expanded = fold == "expanded"
        label = "Show less" if expanded else "Show more"
        fm = QFontMetricsF(self.small)
        return Button("more", QRectF(rect.left(), rect.top() + (rect.height() - 24) / 2,
                                     fm.horizontalAdvance(label) + 38, 24),
                      "Fold the message" if expanded else "Show the whole message",
                      icon="chevron-up" if expanded else "chevron-down", label=label,
                      hover_only=False)

    def _build_user(self, row: ChatRow) -> RowLayout:
        x, col = self.column()
        max_text = max(60.0, col * BUBBLE_SHARE - 2 * BUBBLE_PAD_X)
        body = self._doc(row, "body", max_text,
                         lambda: render_plain(row.text, max_text, self.theme))
        shown, fold = self._fold(row, body.height)
        text_w = max(24.0, body.natural_width)
        bubble_w = text_w + 2 * BUBBLE_PAD_X
        top = ROW_GAP + 4
        inner = shown + (MORE_H if fold else 0)
        bubble = QRectF(x + col - bubble_w, top, bubble_w, inner + 2 * BUBBLE_PAD_Y)
        footer = QRectF(x, bubble.bottom() + 2, col, FOOTER_H)
        out = RowLayout(
            height=footer.bottom() + 2,
            body=body,
            body_origin=QPointF(bubble.left() + BUBBLE_PAD_X, bubble.top() + BUBBLE_PAD_Y),
            body_height=shown,
            fold=fold,
            bubble=bubble,
            footer=footer,
        )
        buttons = self._message_buttons(row)
        _place_right(buttons, footer)
        if fold:
            buttons.append(self._more_button(fold, QRectF(
                bubble.left() + BUBBLE_PAD_X - 6, bubble.top() + BUBBLE_PAD_Y + shown, 0, MORE_H)))
        out.buttons = buttons
        return out

    def _build_reply(self, row: ChatRow) -> RowLayout:
        x, col = self.column()
        y = ROW_GAP
        header = None
        if row.starts_turn:
            y = TURN_GAP
            header = QRectF(x, y, col, HEADER_H)
            y = header.bottom() + 2
        text = row.text
        if row.kind == RowKind.STREAM and not text:
            body = None
            shown, fold = 22.0, ""
        else:
            body = self._doc(row, "body", col, lambda: render_markdown(text, col, self.theme))
            shown, fold = self._fold(row, body.height)
        out = RowLayout(height=0, body=body, body_origin=QPointF(x, y), header=header,
                        body_height=shown, fold=fold)
        y += shown
        more = None
        if fold:
            more = self._more_button(fold, QRectF(x - 4, y + 2, 0, MORE_H))
            y += MORE_H + 2
        if row.kind == RowKind.ASSISTANT and row.ends_turn:
            footer = QRectF(x - 6, y + 4, col + 6, FOOTER_H)
            out.footer = footer
            buttons = self._message_buttons(row)
            if row.interrupted:
                fm = QFontMetricsF(self.small)
                badge_w = fm.horizontalAdvance("Interrupted") + 26
                out.badge = QRectF(footer.left() + 6, footer.center().y() - 11, badge_w, 22)
                start = QRectF(out.badge.right() + 6, footer.top(), 0, footer.height())
                _place_left(buttons, QRectF(start.left(), footer.top(),
                                            footer.right() - start.left(), footer.height()))
            else:
                _place_left(buttons, footer)
            out.buttons = buttons
            y = footer.bottom()
        else:
            y += 6
        if more is not None:
            out.buttons.append(more)
        out.height = y + 2
        return out

    def _build_card(self, row: ChatRow) -> RowLayout:
        x, col = self.column()
        y = 4.0
        header = None
        if row.starts_turn:
            header = QRectF(x, TURN_GAP, col, HEADER_H)
            y = header.bottom() + 4
        out = RowLayout(height=0, header=header)
        card_h = CARD_H
        inner_w = col - 2 * CARD_PAD
        if row.expanded:
            cy = y + CARD_H + 4
            if row.kind == RowKind.TOOL:
                args_text = row.arguments_text
                if args_text:
                    args = self._doc(row, "args", inner_w,
                                     lambda: render_plain(_cap(args_text), inner_w, self.theme,
                                                          mono=True))
                    out.args = args
                    out.args_origin = QPointF(x + CARD_PAD, cy + 20)
                    cy += 20 + args.height + 10
                result = self._doc(row, "result", inner_w,
                                   lambda: render_plain(_cap(row.text) or "(no output)",
                                                        inner_w, self.theme, mono=True))
                out.result = result
                out.result_origin = QPointF(x + CARD_PAD, cy + 20)
                cy += 20 + result.height + CARD_PAD
            else:
                result = self._doc(row, "result", inner_w,
                                   lambda: render_plain(row.text, inner_w, self.theme))
                out.result = result
                out.result_origin = QPointF(x + CARD_PAD, cy)
                cy += result.height + CARD_PAD
            card_h = cy - y
        out.card = QRectF(x, y, col, card_h)
        out.buttons = [
            Button("toggle", QRectF(x, y, col, CARD_H),
                   "Hide details" if row.expanded else "Show details", hover_only=False)
        ]
        out.height = out.card.bottom() + (10 if row.ends_turn else 4)
        return out

    def _build_error(self, row: ChatRow) -> RowLayout:
        x, col = self.column()
        text_w = col - 2 * CARD_PAD - 34 - 130
        body = render_plain(row.text or "Something went wrong.", text_w, self.theme)
        h = max(body.height, 20.0) + 2 * CARD_PAD
        card = QRectF(x, TURN_GAP / 2, col, max(h, 52.0))
        out = RowLayout(height=card.bottom() + ROW_GAP, body=body,
                        body_origin=QPointF(x + CARD_PAD + 34,
                                            card.top() + (card.height() - body.height) / 2),
                        card=card)
        error = row.error
        buttons: list[Button] = []
        if error is not None:
            action = error.action or ("retry" if error.retry else "")
            label, tip = {
                "retry": ("Retry", "Run this turn again"),
                "settings": ("Open settings", "Check the provider and its API key"),
                "wait": ("Retry", "Run this turn again"),
            }.get(action, ("", ""))
            if label:
                fm = QFontMetricsF(self.label_font)
                w = fm.horizontalAdvance("Retry in 999s" if action == "wait" else label) + 28
                rect = QRectF(card.right() - CARD_PAD - w, card.center().y() - 15, w, 30)
                buttons.append(Button(f"error:{action}", rect, tip, label=label,
                                      hover_only=False, primary=True))
        out.buttons = buttons
        return out

    def _build_note(self, row: ChatRow) -> RowLayout:
        x, col = self.column()
        body = self._doc(row, "body", col * 0.8,
                         lambda: render_plain(row.text or row.label, col * 0.8, self.theme))
        origin = QPointF(x + (col - body.natural_width) / 2, ROW_GAP + 4)
        return RowLayout(height=body.height + 2 * ROW_GAP + 8, body=body, body_origin=origin)

    def _message_buttons(self, row: ChatRow) -> list[Button]:
        """The action bar of a message, in reading order."""
        buttons: list[Button] = []
        if row.has_versions:
            n, m = row.version
            buttons.append(Button("prev", QRectF(0, 0, 24, BUTTON), "Previous version",
                                  icon="chevron-left", hover_only=False, enabled=n > 1))
            fm = QFontMetricsF(self.small)
            label = f"{n} / {m}"
            buttons.append(Button("version", QRectF(0, 0, fm.horizontalAdvance(label) + 6, BUTTON),
                                  f"Version {n} of {m}", label=label, hover_only=False,
                                  enabled=False))
            buttons.append(Button("next", QRectF(0, 0, 24, BUTTON), "Next version",
                                  icon="chevron-right", hover_only=False, enabled=n < m))
        size = QRectF(0, 0, BUTTON, BUTTON)
        retry_first = row.interrupted and row.kind == RowKind.ASSISTANT
        if retry_first:  # the one thing to do about a cut-off reply comes first
            fm = QFontMetricsF(self.small)
            buttons.append(Button("retry", QRectF(0, 0, fm.horizontalAdvance("Retry") + 36,
                                                  BUTTON - 4),
                                  "Run this reply again (keeps the interrupted one)",
                                  icon="retry", label="Retry", hover_only=False))
        buttons.append(Button("copy", QRectF(size), "Copy message", icon="copy"))
        if row.kind == RowKind.USER:
            buttons.append(Button("edit", QRectF(size), "Edit message (forks a new version)",
                                  icon="edit"))
        if not retry_first and (row.kind == RowKind.ASSISTANT
                                or (row.kind == RowKind.USER and row.is_last)):
            buttons.append(Button("retry", QRectF(size), "Retry (keeps this version)",
                                  icon="retry"))
        buttons.append(Button("branch", QRectF(size), "Branch into a new session",
                              icon="branch"))
        buttons.append(Button("pin", QRectF(size),
                              "Unpin (may be compacted)" if row.pinned else
                              "Pin (never compacted away)",
                              icon="pin", hover_only=not row.pinned, active=row.pinned))
        return buttons

    # --- Qt delegate interface -----------------------------------------------------------

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:
        # called for every row on every layout pass: one list lookup, nothing more (the
        # sizes are made once per pass, not per call)
        hints = self._hints
        rows = self._rows()
        if hints is None or len(hints) != len(rows) or self._hints_rows is not rows:
            width, height = self._width, self.row_height
            hints = self._hints = [QSize(width, height(row)) for row in rows]
            self._hints_rows = rows
        r = index.row()
        return hints[r] if 0 <= r < len(hints) else QSize(self._width, 0)

    def invalidate_hints(self) -> None:
        self._hints = None

    def set_hint(self, row: int, height: int) -> None:
        """Patch one row's hint (the streaming reply grows; nothing else moved)."""
        hints, rows = self._hints, self._rows()
        if hints is not None and self._hints_rows is rows and 0 <= row < len(hints):
            hints[row] = QSize(self._width, height)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        rows = self._rows()
        if not 0 <= index.row() < len(rows):
            return
        row = rows[index.row()]
        if not self.is_measured(row):
            self.measure(row)
        layout = self.layout(row)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        top_left = QPointF(option.rect.topLeft())
        painter.translate(top_left)
        clip = QRectF(option.rect).intersected(QRectF(self._view.viewport().rect()))
        clip = clip.translated(-top_left)
        focused = (self.keyboard_focus and self._view.hasFocus()
                   and bool(option.state & QStyle.StateFlag.State_HasFocus))
        hovered = self.hover_row == row.key or focused
        if row.key in self._editing:
            painter.restore()
            return
        c = self.colors
        if row.kind == RowKind.USER:
            self._paint_user(painter, row, layout, clip)
        elif row.kind in (RowKind.ASSISTANT, RowKind.STREAM):
            self._paint_reply(painter, row, layout, clip)
        elif row.kind in (RowKind.TOOL, RowKind.SYSTEM):
            self._paint_card(painter, row, layout, clip)
        elif row.kind == RowKind.ERROR:
            self._paint_error(painter, row, layout)
        else:
            self._paint_note(painter, row, layout)
        self._paint_buttons(painter, row, layout, hovered)
        if focused:
            x, col = self.column()
            ring = QRectF(x - 10, 2, col + 20, layout.height - 4)
            painter.setPen(QPen(c.focus, 1.5))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(ring, 10, 10)
        painter.restore()

    def _paint_user(self, p: QPainter, row: ChatRow, layout: RowLayout, clip: QRectF) -> None:
        c = self.colors
        assert layout.bubble is not None and layout.body is not None
        path = QPainterPath()
        path.addRoundedRect(layout.bubble, BUBBLE_RADIUS, BUBBLE_RADIUS)
        p.fillPath(path, c.user_bubble)
        self._paint_body(p, layout, clip, c.text, c.user_bubble)

    def _paint_body(self, p: QPainter, layout: RowLayout, clip: QRectF, text: QColor,
                    background: QColor, **extra: Any) -> None:
        """The message text, cut at the fold with a fade when it is folded."""
        body = layout.body
        assert body is not None
        origin = layout.body_origin
        shown = QRectF(origin.x() - 40, origin.y() - 2, body.width + 80, layout.body_height + 2)
        body.paint(p, origin, text_color=text, clip=clip.intersected(shown), **extra)
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
            copied = self._copied_index(row.key)
            hovered_copy = None
            if self.hover and self.hover[0] == row.key and self.hover[1].startswith("code:"):
                hovered_copy = int(self.hover[1].split(":", 1)[1])
            self._paint_body(p, layout, clip, c.text, c.base, hovered_copy=hovered_copy,
                             copied=copied)
        elif row.kind == RowKind.STREAM:
            self._paint_typing(p, layout.body_origin)
        if layout.badge is not None:
            badge = layout.badge
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(c.warning_bg)
            p.drawRoundedRect(badge, badge.height() / 2, badge.height() / 2)
            _draw_icon(p, "stop", QRectF(badge.left() + 8, badge.center().y() - 5, 10, 10),
                       c.warning)
            p.setFont(self.small)
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
        _draw_icon(p, "spark", avatar.adjusted(5, 5, -5, -5), c.accent_text, filled=True)
        label = row.model or "Assistant"
        p.setFont(self.label_font)
        p.setPen(c.text)
        fm = QFontMetricsF(self.label_font)
        label_rect = QRectF(avatar.right() + 8, header.top(), fm.horizontalAdvance(label) + 2,
                            header.height())
        p.drawText(label_rect, int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
                   label)
        stamp = ""
        if row.node is not None and row.node.created_at > 0:
            stamp = datetime.fromtimestamp(row.node.created_at).strftime("%H:%M")
        elif row.streaming:
            stamp = "writing…"
        if stamp:
            p.setFont(self.small)
            p.setPen(c.muted)
            p.drawText(QRectF(label_rect.right() + 8, header.top(), 200, header.height()),
                       int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft), stamp)

    def _paint_typing(self, p: QPainter, origin: QPointF) -> None:
        c = self.colors
        p.setPen(Qt.PenStyle.NoPen)
        for i in range(3):
            strength = 1.0 if (self.typing_phase % 3) == i else 0.35
            color = mix(c.base, c.text, 0.55 * strength + 0.1)
            p.setBrush(color)
            p.drawEllipse(QPointF(origin.x() + 5 + i * 12, origin.y() + 11), 3.6, 3.6)

    def _paint_card(self, p: QPainter, row: ChatRow, layout: RowLayout, clip: QRectF) -> None:
        c = self.colors
        if layout.header is not None:
            self._paint_header(p, row, layout.header)
        card = layout.card
        assert card is not None
        hovered = self.hover is not None and self.hover == (row.key, "toggle")
        p.setPen(QPen(c.card_border, 1.0))
        p.setBrush(mix(c.card, c.hover, 0.5) if hovered else c.card)
        p.drawRoundedRect(card.adjusted(0.5, 0.5, -0.5, -0.5), CARD_RADIUS, CARD_RADIUS)
        line = QRectF(card.left(), card.top(), card.width(), CARD_H)
        icon_rect = QRectF(line.left() + 12, line.center().y() - 7, 14, 14)
        failed = row.failed
        _draw_icon(p, "tool" if row.kind == RowKind.TOOL else "doc", icon_rect,
                   c.error if failed else c.muted)
        x = icon_rect.right() + 9
        name = row.label
        p.setFont(self.mono_bold if row.kind == RowKind.TOOL else self.label_font)
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
            status = "failed" if failed else _lines_label(row.text)
            sfm = QFontMetricsF(self.small)
            sw = sfm.horizontalAdvance(status) + 4
            p.setFont(self.small)
            p.setPen(c.error if failed else c.muted)
            p.drawText(QRectF(right - sw, line.top(), sw, line.height()),
                       int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight), status)
            right -= sw + 12
        if summary and right > x + 20:
            p.setFont(self.theme.mono if row.kind == RowKind.TOOL else self.small)
            p.setPen(c.muted)
            sfm = QFontMetricsF(p.font())
            p.drawText(QRectF(x, line.top(), right - x, line.height()),
                       int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
                       sfm.elidedText(summary, Qt.TextElideMode.ElideRight, right - x))
        chevron = QRectF(line.right() - 26, line.center().y() - 6, 12, 12)
        _draw_icon(p, "chevron-up" if row.expanded else "chevron-down", chevron,
                   c.text if hovered else c.muted)
        if not row.expanded:
            return
        p.setPen(QPen(c.card_border, 1.0))
        p.drawLine(QPointF(card.left() + 1, line.bottom()),
                   QPointF(card.right() - 1, line.bottom()))
        p.setFont(self.small)
        for doc, origin, title in ((layout.args, layout.args_origin, "Arguments"),
                                   (layout.result, layout.result_origin, "Result")):
            if doc is None:
                continue
            if row.kind == RowKind.TOOL:
                p.setPen(c.muted)
                p.setFont(self.small)
                p.drawText(QRectF(origin.x(), origin.y() - 19, 200, 16),
                           int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft), title)
            doc.paint(p, origin, text_color=c.error if (failed and title == "Result") else c.text,
                      clip=clip)

    def _paint_error(self, p: QPainter, row: ChatRow, layout: RowLayout) -> None:
        c = self.colors
        card = layout.card
        assert card is not None and layout.body is not None
        p.setPen(QPen(c.error_border, 1.0))
        p.setBrush(c.error_bg)
        p.drawRoundedRect(card.adjusted(0.5, 0.5, -0.5, -0.5), CARD_RADIUS, CARD_RADIUS)
        icon = QRectF(card.left() + CARD_PAD, card.center().y() - 10, 20, 20)
        _draw_icon(p, "alert", icon, c.error, filled=True)
        layout.body.paint(p, layout.body_origin, text_color=c.text)

    def _paint_note(self, p: QPainter, row: ChatRow, layout: RowLayout) -> None:
        c = self.colors
        assert layout.body is not None
        x, col = self.column()
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
            if b.id == "toggle":
                continue  # the card itself is the button
            if b.hover_only and not hovered:
                continue
            enabled = self.button_enabled(b)
            is_hover = enabled and self.hover == (row.key, b.id)
            if b.primary:
                p.setPen(Qt.PenStyle.NoPen)
                p.setBrush(mix(c.accent, c.text, 0.15) if is_hover else c.accent)
                p.drawRoundedRect(b.rect, 7, 7)
                if not enabled:
                    p.setBrush(c.hover)
                    p.drawRoundedRect(b.rect, 7, 7)
                p.setFont(self.label_font)
                p.setPen(c.accent_text if enabled else c.muted)
                label = b.label
                if b.id == "error:wait" and not enabled:
                    label = f"Retry in {int(self.wait_until - time.monotonic()) + 1}s"
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
                _draw_icon(p, b.icon, icon, color)
                p.setFont(self.small)
                p.setPen(color)
                p.drawText(b.rect.adjusted(28, 0, -8, 0),
                           int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
                           b.label)
                continue
            if b.label:
                p.setFont(self.small)
                p.setPen(c.muted)
                p.drawText(b.rect, int(Qt.AlignmentFlag.AlignCenter), b.label)
                continue
            color = c.accent if b.active else (c.text if is_hover else c.muted)
            if not enabled:
                color = c.faint
            if b.icon == "copy" and self._is_copied(row.key, "copy"):
                draw_check_icon(p, _icon_box(b.rect), c.success)
            elif b.icon == "copy":
                draw_copy_icon(p, _icon_box(b.rect), color)
            else:
                _draw_icon(p, b.icon, _icon_box(b.rect), color, filled=b.active)

    def button_enabled(self, button: Button) -> bool:
        if not button.enabled:
            return False
        if button.id == "error:wait" and time.monotonic() < self.wait_until:
            return False
        return not (self.busy and button.id in BUSY_LOCKED)

    # --- interaction ---------------------------------------------------------------------

    def hit(self, row: ChatRow, pos: QPointF) -> str:
        """The action under `pos` (row coordinates): a button id, `code:<n>`, `link:<url>`."""
        layout = self.layout(row)
        for b in layout.buttons:
            if b.id != "toggle" and b.rect.contains(pos) and b.id != "version":
                return b.id
        body = layout.body
        if body is not None:
            local = pos - layout.body_origin
            index = body.copy_button_at(local)
            if index is not None:
                return f"code:{index}"
            anchor = body.anchor_at(local)
            if anchor:
                return f"link:{anchor}"
        for b in layout.buttons:
            if b.id == "toggle" and b.rect.contains(pos):
                return b.id
        return ""

    def button(self, row: ChatRow, action: str) -> Button | None:
        return next((b for b in self.layout(row).buttons if b.id == action), None)

    def action_enabled(self, row: ChatRow, action: str) -> bool:
        if action.startswith(("code:", "link:")):
            return True
        if action == "read":
            return row.kind in READABLE
        b = self.button(row, action)
        return b is not None and self.button_enabled(b)

    def code_text(self, row: ChatRow, block: int) -> str:
        body = self.layout(row).body
        if body is None or not 0 <= block < len(body.code_blocks):
            return ""
        return body.code_blocks[block].text

    def mark_copied(self, key: str, action: str) -> None:
        self._copied[(key, action)] = time.monotonic() + 1.6

    def _is_copied(self, key: str, action: str) -> bool:
        deadline = self._copied.get((key, action))
        return deadline is not None and deadline > time.monotonic()

    def _copied_index(self, key: str) -> int | None:
        for (k, action), deadline in self._copied.items():
            if k == key and action.startswith("code:") and deadline > time.monotonic():
                return int(action.split(":", 1)[1])
        return None

    def editorEvent(self, event: QEvent, model: Any, option: QStyleOptionViewItem,
                    index: QModelIndex) -> bool:
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
        if kind == QEvent.Type.MouseButtonPress:
            self._pressed = (row.key, action) if action else None
            return bool(action)
        if kind == QEvent.Type.MouseButtonDblClick:
            if not action and row.kind in READABLE:
                self.actionTriggered.emit(row.key, "read")  # open the text to select from
                return True
            return bool(action)
        pressed, self._pressed = self._pressed, None
        if action and pressed == (row.key, action):
            self.actionTriggered.emit(row.key, action)
            return True
        return False

    def set_hover(self, row_key: str | None, action: str = "") -> None:
        hover = (row_key, action) if row_key is not None and action else None
        if hover == self.hover and row_key == self.hover_row:
            return
        self.hover = hover
        self.hover_row = row_key
        viewport = self._view.viewport()
        viewport.setCursor(Qt.CursorShape.PointingHandCursor if hover else
                           Qt.CursorShape.ArrowCursor)
        viewport.update()

    def helpEvent(self, event: QHelpEvent, view: QAbstractItemView,
                  option: QStyleOptionViewItem, index: QModelIndex) -> bool:
        if event is None or event.type() != QEvent.Type.ToolTip:
            return super().helpEvent(event, view, option, index)
        rows = self._rows()
        if not 0 <= index.row() < len(rows):
            return False
        row = rows[index.row()]
        pos = QPointF(event.pos()) - QPointF(option.rect.topLeft())
        action = self.hit(row, pos)
        tip = ""
        if action.startswith("code:"):
            tip = "Copy code"
        elif action.startswith("link:"):
            tip = action[5:]
        elif action:
            b = self.button(row, action)
            if b is not None:
                tip = b.tooltip
                if self.busy and action in BUSY_LOCKED:
                    tip += " — unavailable while a reply is running"
        if tip:
            QToolTip.showText(event.globalPos(), tip, view)
            return True
        QToolTip.hideText()
        return True

    # --- inline editing ------------------------------------------------------------------

    def createEditor(self, parent: QWidget, option: QStyleOptionViewItem,
                     index: QModelIndex) -> QWidget:
        row = self._rows()[index.row()]
        editor = MessageEditor(row.text, parent)
        editor.setFont(self.theme.font)
        editor.apply_colors(self.colors)
        editor.set_busy(self.busy)
        key = row.key
        editor.submitted.connect(lambda text: self.editSubmitted.emit(key, text))
        editor.cancelled.connect(lambda: self.editCancelled.emit(key))
        editor.heightChanged.connect(lambda: self._editor_resized(key, editor))
        self._editing[key] = editor.wanted_height() + int(ROW_GAP * 2)
        self._editors[key] = editor
        self._hints = None
        self.sizeHintChanged.emit(index)
        return editor

    def _editor_resized(self, key: str, editor: MessageEditor) -> None:
        height = editor.wanted_height() + int(ROW_GAP * 2)
        if self._editing.get(key) == height:
            return
        self._editing[key] = height
        self._hints = None
        rows = self._rows()
        for i, row in enumerate(rows):
            if row.key == key:
                self.sizeHintChanged.emit(self._view.model().index(i, 0))
                break

    def setEditorData(self, editor: QWidget, index: QModelIndex) -> None:
        pass  # the editor starts from the message text and keeps what the user typed

    def setModelData(self, editor: QWidget, model: Any, index: QModelIndex) -> None:
        pass  # an edit is a new node, sent through editRequested, never written in place

    def updateEditorGeometry(self, editor: QWidget, option: QStyleOptionViewItem,
                             index: QModelIndex) -> None:
        x, col = self.column()
        rect = QRect(int(x + col * 0.08), option.rect.top() + int(ROW_GAP),
                     int(col * 0.92), option.rect.height() - int(ROW_GAP * 2))
        editor.setGeometry(rect)

    def destroyEditor(self, editor: QWidget, index: QModelIndex) -> None:
        for key, widget in list(self._editors.items()):
            if widget is editor:
                self.forget_editor(key)
        super().destroyEditor(editor, index)
        if index.isValid():
            self.sizeHintChanged.emit(index)

    def editing_keys(self) -> tuple[str, ...]:
        return tuple(self._editing)

    def forget_editor(self, key: str) -> None:
        self._editing.pop(key, None)
        self._editors.pop(key, None)
        self._hints = None

    def editor(self, key: str) -> MessageEditor | None:
        return self._editors.get(key)


class MessageEditor(QFrame):
    """Edits a sent message in place; sending forks a new version, the original stays."""

    submitted = Signal(str)
    cancelled = Signal()
    heightChanged = Signal()

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("messageEditor")
        self.setAutoFillBackground(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.text_edit = QPlainTextEdit(self)
        self.text_edit.setPlainText(text)
        self.text_edit.setFrameShape(QFrame.Shape.NoFrame)
        self.text_edit.setAccessibleName("Edit message")
        self.text_edit.setTabChangesFocus(True)
        self.text_edit.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.hint = QLabel("Sending creates a new version; the original is kept.", self)
        self.hint.setEnabled(False)
        self.cancel_button = QPushButton("Cancel", self)
        self.send_button = QPushButton("Send", self)
        self.send_button.setObjectName("sendEdit")
        self.cancel_button.setObjectName("cancelEdit")
        self.send_button.setDefault(True)
        self.send_button.setAccessibleName("Send edited message")
        self.cancel_button.clicked.connect(self.cancelled.emit)
        self.send_button.clicked.connect(self._submit)
        buttons = QHBoxLayout()
        buttons.setContentsMargins(0, 0, 0, 0)
        buttons.addWidget(self.hint, 1)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.send_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 8, 10, 8)
        layout.setSpacing(6)
        layout.addWidget(self.text_edit, 1)
        layout.addLayout(buttons)
        self.text_edit.document().contentsChanged.connect(self.heightChanged.emit)
        self.text_edit.textChanged.connect(self._update_send)
        self.setFocusProxy(self.text_edit)
        self.text_edit.installEventFilter(self)
        self._busy = False
        cursor = self.text_edit.textCursor()
        cursor.movePosition(cursor.MoveOperation.End)
        self.text_edit.setTextCursor(cursor)

    def text(self) -> str:
        return self.text_edit.toPlainText()

    def apply_colors(self, c: ChatColors) -> None:
        """Look like the bubble being edited, with the send button as the one accent."""
        def rgb(color: QColor) -> str:
            return color.name(QColor.NameFormat.HexArgb)

        hover = mix(c.accent, c.text, 0.15)
        self.setStyleSheet(
            f"QFrame#messageEditor {{ background: {rgb(c.user_bubble)};"
            f" border: 1px solid {rgb(mix(c.user_bubble, c.accent, 0.6))}; border-radius: 14px; }}"
            f" QPlainTextEdit {{ background: transparent; border: none; color: {rgb(c.text)};"
            f" selection-background-color: {rgb(c.accent)}; }}"
            f" QLabel {{ color: {rgb(c.muted)}; background: transparent; border: none; }}"
            f" QPushButton {{ border-radius: 8px; padding: 5px 14px; border: 1px solid"
            f" {rgb(c.card_border)}; background: {rgb(c.base)}; color: {rgb(c.text)}; }}"
            f" QPushButton:hover {{ background: {rgb(c.hover)}; }}"
            f" QPushButton#sendEdit {{ background: {rgb(c.accent)}; color: {rgb(c.accent_text)};"
            f" border: none; font-weight: 600; }}"
            f" QPushButton#sendEdit:hover {{ background: {rgb(hover)}; }}"
            f" QPushButton#sendEdit:disabled {{ background: {rgb(c.hover)};"
            f" color: {rgb(c.muted)}; }}"
        )

    def set_text(self, text: str) -> None:
        self.text_edit.setPlainText(text)

    def set_busy(self, busy: bool) -> None:
        self._busy = busy
        self._update_send()
        self.send_button.setToolTip("Unavailable while a reply is running" if busy else
                                    "Send the edited message (Ctrl+Enter)")

    def _update_send(self) -> None:
        self.send_button.setEnabled(not self._busy and bool(self.text().strip()))

    def wanted_height(self) -> int:
        fm = self.text_edit.fontMetrics()
        lines = max(2, min(12, self.text_edit.document().lineCount() + 1))
        return int(lines * fm.lineSpacing() + 16 + 8 + 8 + self.send_button.sizeHint().height()
                   + 6)

    def _submit(self) -> None:
        if self.send_button.isEnabled():
            self.submitted.emit(self.text())

    def eventFilter(self, watched: Any, event: QEvent) -> bool:
        if watched is self.text_edit and event.type() == QEvent.Type.KeyPress:
            assert isinstance(event, QKeyEvent)
            if event.key() == Qt.Key.Key_Escape:
                self.cancelled.emit()
                return True
            if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and (
                event.modifiers() & Qt.KeyboardModifier.ControlModifier
            ):
                self._submit()
                return True
        return super().eventFilter(watched, event)


# --- helpers ------------------------------------------------------------------------------


def _body_font(font: QFont) -> QFont:
    """Messages read a little larger than the surrounding chrome."""
    body = QFont(font)
    size = font.pointSizeF()
    if size > 0:
        body.setPointSizeF(size * 1.1)
    return body


def _cap(text: str) -> str:
    """Long tool output, shown up to a limit with a note of what was left out."""
    clipped = text[:TOOL_RESULT_CHARS]
    lines = clipped.split("\n")
    hidden_lines = text.count("\n") + 1 - min(len(lines), TOOL_RESULT_LINES)
    if len(lines) > TOOL_RESULT_LINES:
        clipped = "\n".join(lines[:TOOL_RESULT_LINES])
    if hidden_lines > 0 or len(text) > len(clipped):
        more = f"{hidden_lines} more lines" if hidden_lines > 0 else "more"
        clipped += f"\n… ({more}; copy the result to see all of it)"
    return clipped


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


def _place_left(buttons: list[Button], area: QRectF) -> None:
    x = area.left()
    for b in buttons:
        b.rect = QRectF(x, area.center().y() - b.rect.height() / 2, b.rect.width(),
                        b.rect.height())
        x += b.rect.width() + 2


def _place_right(buttons: list[Button], area: QRectF) -> None:
    """Right-aligned, keeping the reading order left to right."""
    total = sum(b.rect.width() + 2 for b in buttons)
    _place_left(buttons, QRectF(area.right() - total + 2, area.top(), total, area.height()))


def _icon_box(rect: QRectF) -> QRectF:
    size = 15.0
    return QRectF(rect.center().x() - size / 2, rect.center().y() - size / 2, size, size)


def _draw_icon(p: QPainter, name: str, r: QRectF, color: QColor, filled: bool = False) -> None:
    """Small line icons drawn with the palette's colours (no image files to theme)."""
    p.save()
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    pen = QPen(color, 1.4, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap,
               Qt.PenJoinStyle.RoundJoin)
    p.setPen(pen)
    p.setBrush(Qt.BrushStyle.NoBrush)
    x, y, w, h = r.left(), r.top(), r.width(), r.height()

    def pt(fx: float, fy: float) -> QPointF:
        return QPointF(x + fx * w, y + fy * h)

    path = QPainterPath()
    if name == "chevron-left":
        path.moveTo(pt(0.62, 0.2))
        path.lineTo(pt(0.32, 0.5))
        path.lineTo(pt(0.62, 0.8))
    elif name == "chevron-right":
        path.moveTo(pt(0.38, 0.2))
        path.lineTo(pt(0.68, 0.5))
        path.lineTo(pt(0.38, 0.8))
    elif name == "chevron-down":
        path.moveTo(pt(0.2, 0.38))
        path.lineTo(pt(0.5, 0.68))
        path.lineTo(pt(0.8, 0.38))
    elif name == "chevron-up":
        path.moveTo(pt(0.2, 0.62))
        path.lineTo(pt(0.5, 0.32))
        path.lineTo(pt(0.8, 0.62))
    elif name == "edit":
        path.moveTo(pt(0.14, 0.86))
        path.lineTo(pt(0.18, 0.66))
        path.lineTo(pt(0.66, 0.18))
        path.quadTo(pt(0.74, 0.1), pt(0.82, 0.18))
        path.quadTo(pt(0.9, 0.26), pt(0.82, 0.34))
        path.lineTo(pt(0.34, 0.82))
        path.closeSubpath()
        path.moveTo(pt(0.58, 0.26))
        path.lineTo(pt(0.74, 0.42))
    elif name == "retry":
        import math

        box = QRectF(pt(0.14, 0.14), pt(0.86, 0.86))
        radius = box.width() / 2
        start = 40.0
        path.arcMoveTo(box, start)
        path.arcTo(box, start, 290)
        p.drawPath(path)
        theta = math.radians(start)
        tip_base = QPointF(box.center().x() + radius * math.cos(theta),
                           box.center().y() - radius * math.sin(theta))
        along = QPointF(math.sin(theta), math.cos(theta))  # clockwise tangent
        out = QPointF(math.cos(theta), -math.sin(theta))  # away from the centre
        size = 0.2 * w
        path = QPainterPath()
        path.moveTo(tip_base + along * size)
        path.lineTo(tip_base + out * size * 0.85)
        path.lineTo(tip_base - out * size * 0.85)
        path.closeSubpath()
        p.setBrush(color)
        p.setPen(Qt.PenStyle.NoPen)
    elif name == "branch":
        for cx, cy in ((0.3, 0.18), (0.3, 0.82), (0.74, 0.3)):
            p.drawEllipse(pt(cx, cy), 0.11 * w, 0.11 * h)
        path.moveTo(pt(0.3, 0.29))
        path.lineTo(pt(0.3, 0.71))
        path.moveTo(pt(0.74, 0.41))
        path.cubicTo(pt(0.74, 0.6), pt(0.3, 0.52), pt(0.3, 0.7))
    elif name == "pin":
        path.moveTo(pt(0.36, 0.1))
        path.lineTo(pt(0.64, 0.1))
        path.lineTo(pt(0.6, 0.2))
        path.lineTo(pt(0.66, 0.5))
        path.lineTo(pt(0.78, 0.6))
        path.lineTo(pt(0.22, 0.6))
        path.lineTo(pt(0.34, 0.5))
        path.lineTo(pt(0.4, 0.2))
        path.closeSubpath()
        if filled:
            p.setBrush(color)
        p.drawPath(path)
        path = QPainterPath()
        path.moveTo(pt(0.5, 0.6))
        path.lineTo(pt(0.5, 0.92))
        p.setBrush(Qt.BrushStyle.NoBrush)
    elif name == "tool":
        p.drawRoundedRect(QRectF(pt(0.04, 0.1), pt(0.96, 0.9)), 0.16 * w, 0.16 * h)
        path.moveTo(pt(0.24, 0.36))
        path.lineTo(pt(0.4, 0.52))
        path.lineTo(pt(0.24, 0.68))
        path.moveTo(pt(0.5, 0.7))
        path.lineTo(pt(0.76, 0.7))
    elif name == "doc":
        p.drawRoundedRect(QRectF(pt(0.16, 0.06), pt(0.84, 0.94)), 0.1 * w, 0.1 * h)
        for fy in (0.32, 0.5, 0.68):
            path.moveTo(pt(0.3, fy))
            path.lineTo(pt(0.7, fy))
    elif name == "alert":
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(color)
        p.drawEllipse(r)
        inner = QPen(QColor("#ffffff"), 2.0, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap)
        p.setPen(inner)
        path.moveTo(pt(0.5, 0.26))
        path.lineTo(pt(0.5, 0.56))
        p.drawPath(path)
        path = QPainterPath()
        p.drawPoint(pt(0.5, 0.74))
    elif name == "stop":
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(color)
        p.drawRoundedRect(r.adjusted(1, 1, -1, -1), 1.5, 1.5)
    elif name == "spark":
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(color)
        path.moveTo(pt(0.5, 0.0))
        path.quadTo(pt(0.56, 0.44), pt(1.0, 0.5))
        path.quadTo(pt(0.56, 0.56), pt(0.5, 1.0))
        path.quadTo(pt(0.44, 0.56), pt(0.0, 0.5))
        path.quadTo(pt(0.44, 0.44), pt(0.5, 0.0))
        path.closeSubpath()
    p.drawPath(path)
    p.restore()
