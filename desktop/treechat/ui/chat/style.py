"""How chat rows look: the reading column's metrics and the colours derived from the palette,
shared by the row layout, the painter and the inline editor."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor, QFont, QPalette

from ..richtext.theme import is_dark, mix

SIDE_MARGIN = 24.0
MAX_COLUMN = 800.0
ROW_GAP = 8.0
END_MARGIN = 18.0
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




def body_font(font: QFont) -> QFont:
    """Messages read a little larger than the surrounding chrome."""
    body = QFont(font)
    size = font.pointSizeF()
    if size > 0:
        body.setPointSizeF(size * 1.1)
    return body
