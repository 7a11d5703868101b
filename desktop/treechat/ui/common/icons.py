"""The interface's small line icons: SVG files under resources/icons/ui/, drawn in whatever
colour the palette asks for (each file strokes and fills with `currentColor`)."""

from __future__ import annotations

from functools import lru_cache

from PySide6.QtCore import QByteArray, QRectF
from PySide6.QtGui import QColor, QPainter
from PySide6.QtSvg import QSvgRenderer

from ... import paths

ICON_DIR = ("icons", "ui")


class UnknownIcon(LookupError):
    """No SVG file of that name ships with the app."""


@lru_cache(maxsize=64)
def icon_source(name: str) -> str:
    """The SVG text of icon `name`, read once."""
    path = paths.resource(*ICON_DIR, f"{name}.svg")
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise UnknownIcon(f"no icon named {name!r} in {path.parent}") from exc


@lru_cache(maxsize=512)
def _renderer(name: str, rgb: str) -> QSvgRenderer:
    svg = icon_source(name).replace("currentColor", rgb)
    return QSvgRenderer(QByteArray(svg.encode("utf-8")))


def draw_icon(painter: QPainter, name: str, rect: QRectF, color: QColor) -> None:
    """Paint icon `name` into `rect` in `color` (its alpha too)."""
    renderer = _renderer(name, color.name(QColor.NameFormat.HexRgb))
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    if color.alphaF() < 1.0:
        painter.setOpacity(painter.opacity() * color.alphaF())
    renderer.render(painter, rect)
    painter.restore()
