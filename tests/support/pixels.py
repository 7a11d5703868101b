"""Reading what a widget drew: the fill of a row and the contrast between two colours (WCAG),
for tests that check a control is visible in both schemes."""

from __future__ import annotations

from collections import Counter

from PySide6.QtCore import QRect
from PySide6.QtGui import QColor, QImage


def luminance(color: QColor) -> float:
    def channel(v: int) -> float:
        s = v / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    return (0.2126 * channel(color.red()) + 0.7152 * channel(color.green())
            + 0.0722 * channel(color.blue()))


def contrast(a: QColor | str, b: QColor | str) -> float:
    la, lb = sorted((luminance(QColor(a)), luminance(QColor(b))), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def fill_of(image: QImage, rect: QRect) -> QColor:
    """The colour most of `rect` is painted in (its background, glyphs aside)."""
    ratio = image.devicePixelRatio()
    counts: Counter[int] = Counter()
    x0, y0 = int(rect.left() * ratio), int(rect.top() * ratio)
    x1, y1 = int(rect.right() * ratio), int(rect.bottom() * ratio)
    for y in range(max(0, y0), min(image.height(), y1 + 1), 2):
        for x in range(max(0, x0), min(image.width(), x1 + 1), 2):
            counts[image.pixel(x, y)] += 1
    return QColor.fromRgb(counts.most_common(1)[0][0])


def marks_in(image: QImage, rect: QRect, against: QColor, at_least: float = 2.0) -> int:
    """How many pixels of `rect` stand out from `against` (an arrow, a glyph)."""
    ratio = image.devicePixelRatio()
    found = 0
    for y in range(int(rect.top() * ratio), min(image.height(), int(rect.bottom() * ratio) + 1)):
        for x in range(int(rect.left() * ratio),
                       min(image.width(), int(rect.right() * ratio) + 1)):
            if contrast(QColor.fromRgb(image.pixel(x, y)), against) >= at_least:
                found += 1
    return found
