"""Where everything of a chat row goes: the centred reading column, the bubble or card, the
message text laid out as a document, and the row's buttons. Layouts are cached per (row,
width, theme); the streaming reply keeps its finished blocks and lays out its tail afresh
on every flush."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QFont, QFontMetricsF

from ..richtext.document_cache import DocumentCache
from ..richtext.markdown import render_markdown, render_plain
from ..richtext.rendered import RenderedText
from ..richtext.streamed import StreamedMarkdown
from ..richtext.theme import MarkdownTheme
from .attachment_views import Tile, lay_out_tiles, shown_attachments
from .model import ChatRow, RowKind
from .style import (
    BUBBLE_PAD_X,
    BUBBLE_PAD_Y,
    BUBBLE_SHARE,
    BUTTON,
    CARD_H,
    CARD_PAD,
    COLLAPSE_ABOVE,
    COLLAPSED_HEIGHT,
    END_MARGIN,
    FOOTER_H,
    HEADER_H,
    MAX_BODY,
    MAX_COLUMN,
    MORE_H,
    ROW_GAP,
    SIDE_MARGIN,
    TOOL_RESULT_CHARS,
    TOOL_RESULT_LINES,
    TURN_GAP,
)

LAYOUTS_KEPT = 512


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
    tiles: list[Tile] = field(default_factory=list)  # the message's files (thumbnails, cards)



class RowLayouter:
    """Builds and caches `RowLayout`s at the current width and theme."""

    def __init__(self, theme: MarkdownTheme, width: int = 600) -> None:
        self.width = width
        self._column: tuple[int, tuple[float, float]] | None = None
        self._no_cache = False
        self._docs = DocumentCache(320)
        self._streamed = StreamedMarkdown()  # the streaming reply: only its tail is parsed
        self._layouts: OrderedDict[tuple[Any, ...], RowLayout] = OrderedDict()
        self.set_theme(theme)

    def set_theme(self, theme: MarkdownTheme) -> None:
        """Lay rows out in `theme` from now on (cached layouts and documents go)."""
        self.theme = theme
        base = theme.font
        self.small = QFont(base)
        self.small.setPointSizeF(max(6.5, base.pointSizeF() * 0.86))
        self.label_font = QFont(base)
        self.label_font.setWeight(QFont.Weight.DemiBold)
        self.mono_bold = QFont(theme.mono)
        self.mono_bold.setWeight(QFont.Weight.DemiBold)
        self.clear()

    def clear(self) -> None:
        self._layouts.clear()
        self._docs.clear()

    def build_uncached(self, row: ChatRow) -> RowLayout:
        """The row's layout without keeping its documents (for rows far off screen, which
        would only push the visible ones out of the cache)."""
        self._no_cache = True
        try:
            return self._build(row)
        finally:
            self._no_cache = False

    def column(self) -> tuple[float, float]:
        """(x, width) of the centred reading column."""
        cached = self._column
        if cached is None or cached[0] != self.width:
            width = max(120.0, min(MAX_COLUMN, self.width - 2 * SIDE_MARGIN))
            cached = self._column = (self.width, ((self.width - width) / 2, width))
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
            while len(self._layouts) > LAYOUTS_KEPT:
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

    def fold(self, row: ChatRow, full: float) -> tuple[float, str]:
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
        shown, fold = self.fold(row, body.height)
        text_w = max(24.0, body.natural_width)
        bubble_w = text_w + 2 * BUBBLE_PAD_X
        top = ROW_GAP + 4
        inner = shown + (MORE_H if fold else 0)
        bubble = QRectF(x + col - bubble_w, top, bubble_w, inner + 2 * BUBBLE_PAD_Y)
        files = shown_attachments(row.node.metadata) if row.node is not None else ()
        tiles: list[Tile] = []
        below = bubble.bottom()
        if files:
            if not row.text.strip():  # only files: no empty bubble above them
                bubble = QRectF(x + col, top, 0, 0)
                below = top - 6
            tiles, tiles_h = lay_out_tiles(files, x, col, below + 6, align_right=True)
            below += 6 + tiles_h
        footer = QRectF(x, below + 2, col, FOOTER_H)
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
        place_right(buttons, footer)
        if fold:
            buttons.append(self._more_button(fold, QRectF(
                bubble.left() + BUBBLE_PAD_X - 6, bubble.top() + BUBBLE_PAD_Y + shown, 0, MORE_H)))
        buttons.extend(tile_buttons(tiles))
        out.tiles = tiles
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
            body = self._doc(row, "body", col, lambda: self._streamed.render(
                text, col, self.theme) if row.kind == RowKind.STREAM else render_markdown(
                text, col, self.theme))
            shown, fold = self.fold(row, body.height)
        out = RowLayout(height=0, body=body, body_origin=QPointF(x, y), header=header,
                        body_height=shown, fold=fold)
        y += shown
        more = None
        if fold:
            more = self._more_button(fold, QRectF(x - 4, y + 2, 0, MORE_H))
            y += MORE_H + 2
        files = (shown_attachments(row.node.metadata)
                 if row.node is not None and row.kind == RowKind.ASSISTANT else ())
        if files:  # an imported reply's images and files
            out.tiles, tiles_h = lay_out_tiles(files, x, col, y + 6, align_right=False)
            y += 6 + tiles_h + 4
        if row.kind == RowKind.ASSISTANT and row.ends_turn:
            footer = QRectF(x - 6, y + 4, col + 6, FOOTER_H)
            out.footer = footer
            buttons = self._message_buttons(row)
            if row.interrupted:
                fm = QFontMetricsF(self.small)
                badge_w = fm.horizontalAdvance("Interrupted") + 26
                out.badge = QRectF(footer.left() + 6, footer.center().y() - 11, badge_w, 22)
                start = QRectF(out.badge.right() + 6, footer.top(), 0, footer.height())
                place_left(buttons, QRectF(start.left(), footer.top(),
                                            footer.right() - start.left(), footer.height()))
            else:
                place_left(buttons, footer)
            out.buttons = buttons
            y = footer.bottom()
        else:
            y += 6
        if more is not None:
            out.buttons.append(more)
        out.buttons.extend(tile_buttons(out.tiles))
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
                                     lambda: render_plain(cap(args_text), inner_w, self.theme,
                                                          mono=True))
                    out.args = args
                    out.args_origin = QPointF(x + CARD_PAD, cy + 20)
                    cy += 20 + args.height + 10
                result = self._doc(row, "result", inner_w,
                                   lambda: render_plain(cap(row.text) or "(no output)",
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
        buttons.append(Button("branch", QRectF(size), "Branch into a new chat",
                              icon="branch"))
        buttons.append(Button("pin", QRectF(size),
                              "Unpin (may be compacted)" if row.pinned else
                              "Pin (never compacted away)",
                              icon="pin", hover_only=not row.pinned, active=row.pinned))
        return buttons


def cap(text: str) -> str:
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



def tile_buttons(tiles: list[Tile]) -> list[Button]:
    """Each sent file's tile is a button that opens it (an import's missing file does not)."""
    return [Button(f"file:{t.index}", t.rect, t.item.tooltip, hover_only=False,
                   enabled=t.item.kind != "placeholder") for t in tiles]


def place_left(buttons: list[Button], area: QRectF) -> None:
    x = area.left()
    for b in buttons:
        b.rect = QRectF(x, area.center().y() - b.rect.height() / 2, b.rect.width(),
                        b.rect.height())
        x += b.rect.width() + 2


def place_right(buttons: list[Button], area: QRectF) -> None:
    """Right-aligned, keeping the reading order left to right."""
    total = sum(b.rect.width() + 2 for b in buttons)
    place_left(buttons, QRectF(area.right() - total + 2, area.top(), total, area.height()))

