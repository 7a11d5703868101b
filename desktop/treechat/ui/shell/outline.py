"""The window's first frame: the outline of the sidebar, header and composer card painted in
the theme's colours, before any real widget exists. It uses only what a bare Qt window
loads (no style sheet, no fonts, no Qt namespace enums), so the window appears as fast as
Qt can show one; `MainWindow.build()` then puts the real widgets where the outline was.

The outline is where those widgets were when the window last closed (`outline_of`), or a
default for the first start."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, NamedTuple

from PySide6.QtCore import QPoint, QRect, QSettings
from PySide6.QtGui import QGuiApplication, QImage, QPainter, QPalette
from PySide6.QtWidgets import QWidget

from ..common.theme import DARK, LIGHT, MODES, Colors

if TYPE_CHECKING:
    from PySide6.QtGui import QPaintEvent

    from .main_window import MainWindow

Box = tuple[int, int, int, int]  # x, y, width, height in window coordinates

OUTLINE_KEY = "window/outline"  # in the window's settings, saved with its geometry
LAST_SCHEME = "theme/dark"  # whether the scheme the window last settled on was dark
# the model the picker showed when the window last closed, named in the next start's first
# frame, before the services can list the models
LAST_MODEL = "model/last"
LAST_SESSION = "last_session"  # the chat the window was on when it closed
LAST_MODEL_LABEL = "model/last_label"
SHOWS_CHAT = "showsChat"
"""A page of the window's centre marked so (a Qt property, true) shows the chat on screen
another way (its replies side by side): a redraw of the chat leaves it up."""
SIDEBAR_WIDTH = 270
MENU_HEIGHT = 21
STATUS_HEIGHT = 20
HEADER_HEIGHT = 36
CARD_HEIGHT = 81
CARD_RADIUS = 14.0
FIELD_RADIUS = 8.0


class Outline(NamedTuple):
    """Where the main parts of the window are, for a window of `size`."""

    size: tuple[int, int]
    menu: Box
    sidebar: Box
    new_button: Box
    search: Box
    header: Box
    card: Box

    def encode(self) -> str:
        return ";".join(",".join(str(v) for v in part) for part in self)

    @classmethod
    def decode(cls, text: object) -> Outline | None:
        """The outline saved by `encode`, or None for anything else (an older or hand-edited
        settings file must not break the start)."""
        if not isinstance(text, str):
            return None
        try:
            parts = [tuple(int(v) for v in part.split(",")) for part in text.split(";")]
        except ValueError:
            return None
        if len(parts) != len(cls._fields) or len(parts[0]) != 2:
            return None
        if any(len(p) != 4 for p in parts[1:]):
            return None
        size = (parts[0][0], parts[0][1])
        boxes = [(p[0], p[1], p[2], p[3]) for p in parts[1:]]
        return cls(size, *boxes)


def default_outline(width: int, height: int, sidebar: int = SIDEBAR_WIDTH) -> Outline:
    """The layout of a first start (Fusion, the default font); later starts use the saved
    one."""
    body = height - MENU_HEIGHT - STATUS_HEIGHT
    card_top = height - STATUS_HEIGHT - CARD_HEIGHT - 14
    return Outline(
        size=(width, height),
        menu=(0, 0, width, MENU_HEIGHT),
        sidebar=(0, MENU_HEIGHT, sidebar, body),
        new_button=(sidebar - 103, MENU_HEIGHT + 12, 93, 30),
        search=(10, MENU_HEIGHT + 52, sidebar - 20, 31),
        header=(sidebar + 1, MENU_HEIGHT, width - sidebar - 1, HEADER_HEIGHT),
        card=(sidebar + 17, card_top, width - sidebar - 33, CARD_HEIGHT),
    )


def outline_of(window: MainWindow) -> Outline:
    """Where the built window's parts are now."""
    from PySide6.QtWidgets import QFrame

    def box(widget: QWidget | None) -> Box:
        if widget is None or not widget.isVisible():
            return (0, 0, 0, 0)
        at = widget.mapTo(window, QPoint(0, 0))
        return (at.x(), at.y(), widget.width(), widget.height())

    menu = window.menuBar()
    return Outline(
        size=(window.width(), window.height()),
        menu=box(menu if menu.isVisible() and menu.parentWidget() is window else None),
        sidebar=box(window.sessions),
        new_button=box(window.sessions.new_button),
        search=box(window.sessions.search),
        header=box(window.header),
        card=box(window.composer.findChild(QFrame, "ComposerCard")),
    )


def shell_colors(prefs: QSettings | None) -> Colors:
    """The scheme the window will most likely settle on: the user's choice, else the one the
    system had last time, else a guess from the platform's palette."""
    mode = str(prefs.value("theme", "system")) if prefs is not None else "system"
    if mode in MODES and mode != "system":
        return DARK if mode == "dark" else LIGHT
    last = prefs.value(LAST_SCHEME) if prefs is not None else None
    if last is not None:
        return DARK if str(last).lower() == "true" else LIGHT
    window = QGuiApplication.palette().color(QPalette.ColorRole.Window)
    return DARK if window.lightness() < 128 else LIGHT


Rgb = tuple[int, int, int]


def _rgb(color: str) -> Rgb:
    value = int(color.lstrip("#"), 16)
    return (value >> 16) & 0xFF, (value >> 8) & 0xFF, value & 0xFF


def _pixel(rgb: Rgb) -> bytes:
    """One pixel of a 32-bit 0xffRRGGBB image in this machine's byte order."""
    r, g, b = rgb
    return bytes((b, g, r, 255)) if sys.byteorder == "little" else bytes((255, r, g, b))


def _mix(*parts: tuple[float, Rgb]) -> Rgb:
    r = g = b = 0.0
    for share, (pr, pg, pb) in parts:
        r, g, b = r + share * pr, g + share * pg, b + share * pb
    return round(r), round(g), round(b)


def corner_pixels(radius: float, scale: float, under: Rgb, edge: Rgb,
                  face: Rgb) -> tuple[int, dict[tuple[bool, bool], bytes]]:
    """The corners of a rounded box with a one-unit edge, as `n` x `n` device pixels each,
    keyed by (right, bottom): outside, edge and face blended by how much of each pixel they
    cover."""
    n = round(int(radius + 0.999) * scale)
    r, line = radius * scale, max(1.0, scale)
    plain = {(0.0, 0.0): _pixel(under), (1.0, 0.0): _pixel(edge), (1.0, 1.0): _pixel(face)}
    rows: list[list[bytes]] = []
    for j in range(n):
        row = []
        for i in range(n):
            d = ((r - i - 0.5) ** 2 + (r - j - 0.5) ** 2) ** 0.5 if i < r and j < r else 0.0
            inside = min(max(r - d + 0.5, 0.0), 1.0)
            core = 0.0 if i < line or j < line else min(max(r - line - d + 0.5, 0.0), 1.0)
            pixel = plain.get((inside, core))
            if pixel is None:
                pixel = _pixel(_mix((1 - inside, under), (inside - core, edge), (core, face)))
            row.append(pixel)
        rows.append(row)
    corners = {}
    for right in (False, True):
        for bottom in (False, True):
            ordered = rows[::-1] if bottom else rows
            corners[(right, bottom)] = b"".join(
                b"".join(row[::-1] if right else row) for row in ordered)
    return n, corners


class ShellView(QWidget):
    """Paints an outline of the window in its colours. Only images are drawn (one-pixel
    ones stretched over the boxes, and the corners): QPainter's pens and brushes would load
    Qt's namespace of enums, the slowest part of a first frame. Nothing here takes input."""

    def __init__(self, outline: Outline | None, colors: Colors,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("WindowShell")
        self.setAccessibleName("Treechat is opening")
        self._outline = outline
        self._colors = colors
        # images read the bytes they were made from: both are kept
        self._images: dict[object, tuple[Any, Any]] = {}

    def outline(self) -> Outline:
        """The saved outline, or the default one for the window's current size."""
        window = self.window()
        if self._outline is not None and self._outline.size == (window.width(),
                                                                 window.height()):
            return self._outline
        return default_outline(window.width(), window.height())

    def _solid(self, color: str) -> QImage:
        if color not in self._images:
            data = _pixel(_rgb(color))
            self._images[color] = (data, QImage(data, 1, 1, QImage.Format.Format_RGB32))
        image: QImage = self._images[color][1]
        return image

    def _corners(self, radius: float, scale: float, under: str, edge: str,
                 face: str) -> tuple[int, dict[tuple[bool, bool], QImage]]:
        """The four corner images of a rounded box (n: their size in window units)."""
        key = (radius, scale, under, edge, face)
        if key not in self._images:
            n, pixels = corner_pixels(radius, scale, _rgb(under), _rgb(edge), _rgb(face))
            images = {}
            for place, data in pixels.items():
                image = QImage(data, n, n, QImage.Format.Format_RGB32)
                image.setDevicePixelRatio(scale)
                images[place] = image
            self._images[key] = (pixels, images)
        return int(radius + 0.999), self._images[key][1]

    def paintEvent(self, _event: QPaintEvent) -> None:
        c = self._colors
        o = self.outline()
        # The outline is in window coordinates; this widget fills the window.
        painter = QPainter(self)
        painter.drawImage(self.rect(), self._solid(c.window))
        x, y, w, h = o.sidebar
        if w:
            painter.drawImage(QRect(x, y, w, h), self._solid(c.sidebar))
            painter.drawImage(QRect(x + w - 1, y, 1, h), self._solid(c.border))
        x, y, w, h = o.header
        if w:
            painter.drawImage(QRect(x, y + h - 1, w, 1), self._solid(c.border))
        scale = self.devicePixelRatioF()
        self._rounded(painter, o.search, c.base, c.border, FIELD_RADIUS, c.sidebar, scale)
        self._rounded(painter, o.new_button, c.accent, c.accent, FIELD_RADIUS, c.sidebar,
                      scale)
        self._rounded(painter, o.card, c.base, c.border, CARD_RADIUS, c.window, scale)
        painter.end()

    def _rounded(self, painter: QPainter, box: Box, face: str, edge: str, radius: float,
                 under: str, scale: float) -> None:
        x, y, w, h = box
        radius = min(radius, w / 2, h / 2)
        if w <= 2 or h <= 2:
            return
        painter.drawImage(QRect(x, y, w, h), self._solid(edge))
        painter.drawImage(QRect(x + 1, y + 1, w - 2, h - 2), self._solid(face))
        n, corners = self._corners(radius, scale, under, edge, face)
        for (right, bottom), image in corners.items():
            painter.drawImage(QPoint(x + w - n if right else x, y + h - n if bottom else y),
                              image)
