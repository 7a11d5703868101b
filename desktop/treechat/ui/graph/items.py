"""What the history graph scene is made of: one light item per node, edges batched into a few
path items per kind and band of rows, and an overview item that draws the whole graph in a
handful of calls when zoomed out."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetricsF,
    QPainter,
    QPainterPath,
    QPalette,
    QPen,
    QPolygonF,
)
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

from ...core.model import Node
from ...core.tool_names import shown_tool_name
from ..common.theme import colors_of
from ..richtext.markdown import markdown_text

DX = 40.0  # scene units between columns
DY = 46.0  # between rows
R = 9.0  # node radius
DETAIL_SCALE = 0.42  # below this zoom the overview item draws the graph
OUTLINE_LOD = 0.6  # outlines and marks from this level of detail
LABEL_LOD = 0.8  # text labels from this level of detail
BAND_ROWS = 16  # rows per edge path item, so off-screen edges are culled in bands
LABEL_COLUMNS = 7  # how far right a label may run over empty cells

KINDS = ("user", "assistant", "tool", "attach", "merge", "system", "runtime")
EDGE_KINDS = ("conversation", "call", "attach", "merge", "hidden")

# state bits of a node item
ON_PATH = 1
HEAD = 2
PINNED = 4
HIDDEN = 8
MERGED = 16
INTERRUPTED = 32
FOCUSED = 64  # picked in the commit timeline
SELECTED = 128  # picked for a merge


def node_kind(node: Node) -> str:
    if node.role == "runtime":
        if node.is_attach:
            return "attach"
        if node.is_merge:
            return "merge"
        return "runtime"
    return node.role


# Characters Markdown syntax needs; text without any reads the same rendered (no parse).
_MARKUP = re.compile(r"[*_`#\[\]~|\\<>-]|^\s*\d+[.)]\s", re.MULTILINE)


def label_for(node: Node) -> str:
    """The one line shown beside a node when zoomed in."""
    if node.role == "tool":
        return shown_tool_name(node.name)
    raw = node.text[:1200]
    # a reply shows as Markdown: its label has the words it shows, not the syntax
    shown = (markdown_text(raw) if node.role == "assistant" and _MARKUP.search(raw)
             else raw)
    text = " ".join(shown.split())[:160]
    if node.is_merge:
        return f"Merge: {text}"
    return text


LABEL_X = R + 6  # a label's left edge, right of its node's centre
VIEW_EDGE = 6.0  # pixels a label keeps clear of the view's right edge
LABEL_BASELINE = 4.0


def elided_label(node: Node, room: float, font: QFont) -> str:
    """The label as drawn in `room` scene units ("" when there is no room for it)."""
    text = label_for(node)
    if room < 14 or not text:
        return ""
    return QFontMetricsF(font).elidedText(text, Qt.TextElideMode.ElideRight, room - 4)


def label_box(text: str, font: QFont) -> QRectF:
    """Where a label drawn by `NodeItem` goes, relative to its node's centre."""
    if not text:
        return QRectF()
    metrics = QFontMetricsF(font)
    return QRectF(LABEL_X, LABEL_BASELINE - metrics.ascent(), metrics.horizontalAdvance(text),
                  metrics.ascent() + metrics.descent())


def cell_point(column: int, row: int) -> QPointF:
    return QPointF(column * DX, row * DY)


_FILLS_LIGHT = {
    "user": "#3b7be0", "assistant": "#17936b", "tool": "#d48a12", "attach": "#8b5cf6",
    "merge": "#d9467f", "system": "#7b8491", "runtime": "#7b8491",
}
_FILLS_DARK = {
    "user": "#6aa1f5", "assistant": "#3cc59a", "tool": "#f2b13c", "attach": "#a98bfa",
    "merge": "#f06f9f", "system": "#9aa3af", "runtime": "#9aa3af",
}


@dataclass
class GraphStyle:
    """Colours, pens and the label font, derived from the widget palette (light or dark)."""

    dark: bool
    background: QColor
    text: QColor
    muted: QColor
    accent: QColor
    outline: QColor
    fills: dict[str, QColor]
    edge_pens: dict[str, QPen] = field(default_factory=dict)
    overview_pen: QPen = field(default_factory=QPen)
    font: QFont = field(default_factory=QFont)

    @classmethod
    def from_palette(cls, palette: QPalette) -> GraphStyle:
        c = colors_of(palette)
        fills = {k: QColor(v) for k, v in (_FILLS_DARK if c.dark else _FILLS_LIGHT).items()}
        edge = QColor(c.muted)
        edge.setAlpha(150)
        faint = QColor(c.muted)
        faint.setAlpha(70)

        def pen(color: QColor, width: float, style: Qt.PenStyle = Qt.PenStyle.SolidLine) -> QPen:
            p = QPen(color, width, style, Qt.PenCapStyle.RoundCap, Qt.PenJoinStyle.RoundJoin)
            p.setCosmetic(True)
            return p

        font = QFont()
        font.setPixelSize(12)
        style = cls(
            dark=c.dark,
            background=QColor(c.base),
            text=QColor(c.text),
            muted=QColor(c.muted),
            accent=QColor(c.accent),
            outline=QColor(c.base),
            fills=fills,
            font=font,
        )
        style.overview_pen = QPen(edge, 1.0)
        style.overview_pen.setCosmetic(True)
        style.edge_pens = {
            "conversation": pen(edge, 1.4),
            "call": pen(faint, 1.0),
            "attach": pen(fills["attach"], 1.3, Qt.PenStyle.DashLine),
            "merge": pen(fills["merge"], 1.6, Qt.PenStyle.DashLine),
            "hidden": pen(faint, 1.0, Qt.PenStyle.DotLine),
        }
        return style

    def head_pen(self) -> QPen:
        p = QPen(self.accent, 3.0, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap,
                 Qt.PenJoinStyle.RoundJoin)
        p.setCosmetic(True)
        return p


_SHAPES: dict[str, QPainterPath] = {}


def shape_path(kind: str) -> QPainterPath:
    """The outline of a node of `kind`, centred on (0, 0): user = circle, assistant =
    square, tool = triangle, attach = diamond, merge = hexagon, other runtime = small dot."""
    cached = _SHAPES.get(kind)
    if cached is not None:
        return cached
    path = QPainterPath()
    if kind == "user":
        path.addEllipse(QPointF(0, 0), R, R)
    elif kind == "assistant":
        s = R * 0.88
        path.addRoundedRect(QRectF(-s, -s, 2 * s, 2 * s), 2.5, 2.5)
    elif kind == "tool":
        s = R * 0.95
        path.addPolygon(QPolygonF([QPointF(0, -s), QPointF(s, s * 0.8), QPointF(-s, s * 0.8)]))
        path.closeSubpath()
    elif kind == "attach":
        s = R * 1.1
        path.addPolygon(QPolygonF([QPointF(0, -s), QPointF(s, 0), QPointF(0, s), QPointF(-s, 0)]))
        path.closeSubpath()
    elif kind == "merge":
        s = R * 1.12
        pts = [QPointF(s * x, s * y) for x, y in ((1, 0), (0.5, 0.87), (-0.5, 0.87), (-1, 0),
                                                  (-0.5, -0.87), (0.5, -0.87))]
        path.addPolygon(QPolygonF(pts))
        path.closeSubpath()
    else:
        path.addEllipse(QPointF(0, 0), R * 0.55, R * 0.55)
    _SHAPES[kind] = path
    return path


class NodeItem(QGraphicsItem):
    """One node. Draws its shape, with outline, marks and a label only when zoomed in far
    enough. The label text and the room it may take are worked out on its first paint, so
    no text is laid out for items never painted."""

    # Wide enough for the longest label; a label never runs over its right neighbour.
    _RECT = QRectF(-R - 4, -R - 4, 2 * R + 8 + (LABEL_COLUMNS + 2) * DX, 2 * R + 8)

    def __init__(self, node: Node, kind: str, style: GraphStyle,
                 label_room: Callable[[str], float], parent: QGraphicsItem | None = None
                 ) -> None:
        super().__init__(parent)
        self.node = node
        self.node_id = node.id
        self.kind = kind
        self.style = style
        self.state = 0
        self._label_room = label_room
        self._elided: str | None = None
        self._label_width = 0.0
        self.drawn_label = ""  # the label as last painted (cut at the view's edge)

    def boundingRect(self) -> QRectF:
        return self._RECT

    def shape(self) -> QPainterPath:
        return shape_path(self.kind)

    def set_state(self, state: int) -> None:
        if state != self.state:
            self.state = state
            self.update()

    def invalidate_label(self) -> None:
        """A neighbour appeared to the right: lay the label out again when next painted."""
        self._elided = None
        self.update()

    def label_text(self) -> str:
        if self._elided is None:
            self._elided = elided_label(self.node, self._label_room(self.node_id),
                                        self.style.font)
            self._label_width = QFontMetricsF(self.style.font).horizontalAdvance(self._elided)
        return self._elided

    def _label_in_view(self, painter: QPainter, widget: QWidget | None) -> str:
        """The label as far as the view shows it: ended with an ellipsis before the view's
        right edge, wherever the view is scrolled or however narrow the dock."""
        text = self.label_text()
        if not text or widget is None:
            return text
        inverse, ok = painter.worldTransform().inverted()
        if not ok:
            return text
        edge = inverse.map(QPointF(widget.width() - VIEW_EDGE, 0.0)).x()
        room = edge - LABEL_X
        if LABEL_X + self._label_width <= edge:
            return text
        if room < 14:
            return ""
        return QFontMetricsF(self.style.font).elidedText(text, Qt.TextElideMode.ElideRight, room)

    def label_rect(self) -> QRectF:
        """The label's extent in item coordinates (empty when it has none)."""
        return label_box(self.label_text(), self.style.font)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem,
              widget: QWidget | None = None) -> None:
        style = self.style
        state = self.state
        lod = option.levelOfDetailFromTransform(painter.worldTransform())
        path = shape_path(self.kind)
        fill = style.fills[self.kind]
        if state & HIDDEN:
            painter.setOpacity(0.35)
        if lod < OUTLINE_LOD:
            painter.fillPath(path, fill)
            if state & HIDDEN:
                painter.setOpacity(1.0)
            return
        outline = QPen(style.accent if state & (ON_PATH | FOCUSED) else style.outline,
                       2.2 if state & (ON_PATH | FOCUSED) else 1.5)
        if state & INTERRUPTED:
            outline.setStyle(Qt.PenStyle.DashLine)
        painter.setPen(outline)
        painter.setBrush(fill)
        painter.drawPath(path)
        if state & (HEAD | SELECTED | FOCUSED):
            ring = QPen(style.fills["merge"] if state & SELECTED else style.accent, 2.0)
            if state & SELECTED:
                ring.setStyle(Qt.PenStyle.DashLine)
            painter.setPen(ring)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawEllipse(QPointF(0, 0), R + 3.5, R + 3.5)
        if state & PINNED:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(style.accent)
            painter.drawEllipse(QPointF(R * 0.8, -R * 0.8), 3.2, 3.2)
        if state & MERGED:
            painter.setPen(QPen(style.fills["merge"], 1.8))
            painter.drawLine(QLineF(-R * 0.45, 0, -R * 0.1, R * 0.35))
            painter.drawLine(QLineF(-R * 0.1, R * 0.35, R * 0.5, -R * 0.35))
        if lod >= LABEL_LOD:
            text = self._label_in_view(painter, widget)
            self.drawn_label = text
            if text:
                painter.setFont(style.font)
                painter.setPen(style.muted if not state & ON_PATH else style.text)
                painter.drawText(QPointF(LABEL_X, LABEL_BASELINE), text)
        if state & HIDDEN:
            painter.setOpacity(1.0)


class OverviewItem(QGraphicsItem):
    """The whole graph at low zoom in a few calls: edges as one path, nodes as wide points
    per kind (round caps for users, square for the rest), at least 2 px on screen."""

    def __init__(self, style: GraphStyle, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self.style = style
        self.points: dict[str, QPolygonF] = {}
        # per grid level, the points with one left per grid cell and kind
        self._thinned: dict[int, dict[str, QPolygonF]] = {}
        self.edges = QPainterPath()
        self.head = QPainterPath()
        self._rect = QRectF()

    def clear(self) -> None:
        self.prepareGeometryChange()
        self._thinned = {}
        self.points = {}
        self.edges = QPainterPath()
        self.head = QPainterPath()
        self._rect = QRectF()

    def set_head(self, path: QPainterPath) -> None:
        self.head = path
        self.update()

    def add_nodes(self, kind: str, points: list[QPointF]) -> None:
        self._thinned = {}
        poly = self.points.get(kind)
        if poly is None:
            self.points[kind] = QPolygonF(points)
        else:
            poly.append(points)  # in place, in one call (QList::append of a list)

    def add_edge(self, ax: float, ay: float, bx: float, by: float) -> None:
        self.edges.moveTo(ax, ay)
        self.edges.lineTo(bx, by)

    def set_bounds(self, rect: QRectF) -> None:
        if rect != self._rect:
            self.prepareGeometryChange()
            self._rect = QRectF(rect)
        self.update()

    def boundingRect(self) -> QRectF:
        return self._rect

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem,
              widget: QWidget | None = None) -> None:
        self.draw(painter, painter.worldTransform().m11())

    def draw(self, painter: QPainter, scale: float) -> None:
        style = self.style
        scale = max(scale, 1e-6)
        # A 1 px cosmetic pen with plain caps takes the raster engine's fast line path.
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        painter.setPen(style.overview_pen)
        painter.drawPath(self.edges)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        size = max(2 * R, 2.5 / scale)
        points = self._points_for(size)
        # Tool calls first: the dialogue drawn over them stays readable from far away.
        for kind in sorted(points, key=lambda k: k != "tool"):
            poly = points[kind]
            pen = QPen(style.fills[kind], size)
            pen.setCapStyle(Qt.PenCapStyle.RoundCap if kind in ("user", "system", "runtime")
                            else Qt.PenCapStyle.SquareCap)
            painter.setPen(pen)
            painter.drawPoints(poly)
        if not self.head.isEmpty():  # on top: the current branch stays findable from afar
            painter.setPen(style.head_pen())
            painter.drawPath(self.head)


    def _points_for(self, size: float) -> dict[str, QPolygonF]:
        """When nodes overlap on screen, one point per screen cell is enough: thin them on a
        power-of-two grid (cached per level) so a frame draws hundreds, not thousands."""
        if size < DX * 0.75:
            return self.points
        level = max(0, math.ceil(math.log2(size)))
        thinned = self._thinned.get(level)
        if thinned is None:
            cell = float(2**level)
            thinned = {}
            for kind, poly in self.points.items():
                seen: set[tuple[int, int]] = set()
                keep: list[QPointF] = []
                for i in range(poly.size()):
                    pt = poly.at(i)
                    key = (int(pt.x() // cell), int(pt.y() // cell))
                    if key not in seen:
                        seen.add(key)
                        keep.append(pt)
                thinned[kind] = QPolygonF(keep)
            self._thinned[level] = thinned
        return thinned


class LayerItem(QGraphicsItem):
    """An invisible parent: hiding it hides every node (or edge) item in one call."""

    def __init__(self, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemHasNoContents)

    def boundingRect(self) -> QRectF:
        return QRectF()

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem,
              widget: QWidget | None = None) -> None:
        pass


class BandItem(LayerItem):
    """Parent of the node items of one band of rows. Qt skips a band whose rectangle is off
    screen without asking its children for their bounds (each such question is a Python call
    on a node item), which is what keeps frames cheap with many thousands of nodes."""

    WIDTH = 1.0e7  # wide enough for any graph; culling only ever needs the rows

    def __init__(self, band: int, parent: QGraphicsItem | None = None) -> None:
        super().__init__(parent)
        top = (band * BAND_ROWS - 0.5) * DY
        self._rect = QRectF(-2 * DX, top, self.WIDTH, BAND_ROWS * DY)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemContainsChildrenInShape)
        # Qt only tests the rectangle of an item that has contents (paint() does nothing);
        # without that test it would visit every child of an off-screen band.
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemHasNoContents, False)

    def boundingRect(self) -> QRectF:
        return self._rect

    def shape(self) -> QPainterPath:
        path = QPainterPath()
        path.addRect(self._rect)
        return path
