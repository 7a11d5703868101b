"""The colours and fonts chat text is set in, derived from the palette, with a key that
changes whenever anything that affects layout does."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QPalette,
)

LINE_HEIGHT = 1.3  # body text breathes a little more than Qt's single spacing


def mix(a: QColor, b: QColor, amount: float) -> QColor:
    """`a` moved `amount` (0..1) of the way towards `b`."""
    t = max(0.0, min(1.0, amount))
    return QColor.fromRgbF(
        a.redF() + (b.redF() - a.redF()) * t,
        a.greenF() + (b.greenF() - a.greenF()) * t,
        a.blueF() + (b.blueF() - a.blueF()) * t,
        a.alphaF() + (b.alphaF() - a.alphaF()) * t,
    )


def is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Base).lightnessF() < 0.5


@dataclass(frozen=True, slots=True)
class MarkdownTheme:
    """Colours and fonts text is laid out with; `key` changes whenever any of them does."""

    dark: bool
    text: QColor
    muted: QColor
    link: QColor
    code_bg: QColor
    code_header: QColor
    code_border: QColor
    inline_code_bg: QColor
    quote_bar: QColor
    table_border: QColor
    table_header_bg: QColor
    button_hover: QColor
    font: QFont
    mono: QFont
    key: str = ""

    @classmethod
    def from_palette(cls, palette: QPalette, font: QFont) -> MarkdownTheme:
        dark = is_dark(palette)
        base = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.Text)
        accent = palette.color(QPalette.ColorRole.Highlight)
        link = palette.color(QPalette.ColorRole.Link)
        if dark:
            link = mix(link, QColor("#ffffff"), 0.45)
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        mono.setPointSizeF(max(7.0, font.pointSizeF() * 0.92))
        code_bg = mix(base, text, 0.055 if not dark else 0.075)
        theme = cls(
            dark=dark,
            text=text,
            muted=mix(text, base, 0.42),
            link=link if link.isValid() else accent,
            code_bg=code_bg,
            code_header=mix(base, text, 0.085 if not dark else 0.11),
            code_border=mix(base, text, 0.12 if not dark else 0.16),
            inline_code_bg=mix(base, text, 0.075 if not dark else 0.12),
            quote_bar=mix(base, accent, 0.55),
            table_border=mix(base, text, 0.16),
            table_header_bg=mix(base, text, 0.06 if not dark else 0.09),
            button_hover=mix(base, text, 0.16),
            font=QFont(font),
            mono=mono,
        )
        key = "|".join(
            c.name(QColor.NameFormat.HexArgb)
            for c in (theme.text, theme.link, theme.code_bg, theme.inline_code_bg, base)
        )
        key += f"|{font.toString()}|{mono.toString()}"
        return _with_key(theme, key)


def _with_key(theme: MarkdownTheme, key: str) -> MarkdownTheme:
    from dataclasses import replace

    return replace(theme, key=key)


