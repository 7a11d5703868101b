"""Sent attachments in a message row: an image as a thumbnail, any other file as a card (name,
kind, size, pages of a PDF), and a file an imported chat named but did not carry as a greyed
card naming it. Where they go is worked out with the row's layout; thumbnails are decoded off
the GUI thread, scaled once and kept, and the row is repainted when one is ready."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QObject, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QFontMetricsF, QImage, QImageReader, QPainter, QPainterPath, QPen

from ...core.attachments import METADATA_KEY, human_size, kind_of, safe_name
from ..common.icons import draw_icon
from .style import ChatColors

THUMB = 112.0  # the long side of a thumbnail
THUMB_MIN = 48.0  # the short side at least, so a panorama stays clickable
CARD_W = 232.0
CARD_TILE_H = 52.0
TILE_GAP = 8.0
THUMBS_KEPT = 256  # decoded thumbnails kept in memory (about 50 KB each)

KIND_LABELS = {"image": "Image", "pdf": "PDF", "text": "Text"}


@dataclass(frozen=True, slots=True)
class ShownAttachment:
    """One file of a message as the chat shows it. `kind` is "image", "pdf", "text", or
    "placeholder" for a file an import named but did not carry (no bytes, no hash)."""

    kind: str
    name: str
    size: int = 0
    media_type: str = ""
    sha256: str = ""
    pages: int = 0
    width: int = 0
    height: int = 0

    @property
    def detail(self) -> str:
        """The card's second line: kind, pages, size."""
        if self.kind == "placeholder":
            return "Not in this chat's export" + (f" · {human_size(self.size)}"
                                                  if self.size else "")
        parts = [KIND_LABELS.get(self.kind, "File")]
        if self.pages:
            parts.append(f"{self.pages} page{'s' if self.pages != 1 else ''}")
        if self.width and self.height and self.kind == "image":
            parts.append(f"{self.width}×{self.height}")
        parts.append(human_size(self.size))
        return " · ".join(parts)

    @property
    def tooltip(self) -> str:
        if self.kind == "placeholder":
            return (f"{self.name}: the imported chat named this file, but its export did not "
                    "carry it")
        verb = "Open the image full size" if self.kind == "image" else "Open the file to read it"
        return f"{self.name} ({self.detail})\n{verb}"


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def shown_attachments(metadata: Mapping[str, Any]) -> tuple[ShownAttachment, ...]:
    """The files a node's metadata lists, in order, placeholders included; entries that are
    not well formed are skipped. Names are made safe to show."""
    out: list[ShownAttachment] = []
    for entry in metadata.get(METADATA_KEY) or ():
        if not isinstance(entry, Mapping):
            continue
        sha = entry.get("sha256")
        media = entry.get("media_type")
        if isinstance(sha, str) and sha and isinstance(media, str):
            out.append(ShownAttachment(
                kind_of(media), safe_name(str(entry.get("name") or "attachment")),
                _int(entry.get("size")), media, sha, _int(entry.get("pages")),
                _int(entry.get("width")), _int(entry.get("height"))))
        elif entry.get("placeholder"):
            name = str(entry.get("name") or entry.get("ref") or entry.get("kind") or "file")
            out.append(ShownAttachment("placeholder", safe_name(name),
                                       _int(entry.get("size_bytes")),
                                       str(entry.get("mime_type") or entry.get("kind") or "")))
    return tuple(out)


@dataclass(slots=True)
class Tile:
    """Where one attachment of a row goes, in row coordinates."""

    index: int
    item: ShownAttachment
    rect: QRectF


def thumb_size(item: ShownAttachment) -> tuple[float, float]:
    """The thumbnail's box: the image's aspect within THUMB (square when it is unknown)."""
    if not item.width or not item.height:
        return THUMB, THUMB
    scale = THUMB / max(item.width, item.height)
    return (max(THUMB_MIN, item.width * scale), max(THUMB_MIN, item.height * scale))


def lay_out_tiles(items: Sequence[ShownAttachment], left: float, width: float, top: float,
                  *, align_right: bool) -> tuple[list[Tile], float]:
    """The tiles of `items` wrapped into rows within (left, width) from `top`: (tiles, the
    height they take). Right-aligned under a user's bubble."""
    lines: list[list[tuple[ShownAttachment, float, float]]] = [[]]
    used = 0.0
    for item in items:
        w, h = thumb_size(item) if item.kind == "image" else (min(CARD_W, width), CARD_TILE_H)
        if lines[-1] and used + TILE_GAP + w > width:
            lines.append([])
            used = 0.0
        used += (TILE_GAP if lines[-1] else 0.0) + w
        lines[-1].append((item, w, h))
    tiles: list[Tile] = []
    y = top
    index = 0
    for line in lines:
        if not line:
            continue
        line_w = sum(w for _, w, _ in line) + TILE_GAP * (len(line) - 1)
        x = left + width - line_w if align_right else left
        line_h = max(h for _, _, h in line)
        for item, w, h in line:
            tiles.append(Tile(index, item, QRectF(x, y + (line_h - h), w, h)))
            index += 1
            x += w + TILE_GAP
        y += line_h + TILE_GAP
    return tiles, max(0.0, y - top - TILE_GAP) if tiles else 0.0


# --- thumbnails ----------------------------------------------------------------------------

Loader = Callable[[str], Awaitable[bytes | None]]
Spawner = Callable[[Coroutine[Any, Any, Any]], object]


def read_scaled(data: bytes, side: int) -> QImage:
    """`data` decoded straight to at most `side` pixels on its long edge when the format
    says its size up front (a JPEG decodes at the reduced size; nothing full size is kept).
    A null image when it does not decode."""
    array = QByteArray(data)
    buffer = QBuffer(array)
    buffer.open(QIODevice.OpenModeFlag.ReadOnly)
    reader = QImageReader(buffer)
    reader.setAutoTransform(True)
    size = reader.size()
    if size.isValid() and max(size.width(), size.height()) > side:
        reader.setScaledSize(size.scaled(QSize(side, side), Qt.AspectRatioMode.KeepAspectRatio))
    image = reader.read()
    buffer.close()
    return image


def decode_thumbnail(data: bytes, side: int) -> QImage:
    """`data` as a thumbnail of at most `side` pixels on its long edge, ready to paint. A null
    image when it does not decode."""
    image = read_scaled(data, side)
    if image.isNull():
        return image
    if max(image.width(), image.height()) > side:
        image = image.scaled(side, side, Qt.AspectRatioMode.KeepAspectRatio,
                             Qt.TransformationMode.SmoothTransformation)
    return image.convertToFormat(QImage.Format.Format_ARGB32_Premultiplied)


class ThumbnailCache(QObject):
    """Thumbnails by hash, decoded on a worker thread the first time a row paints one.
    `ready(sha256)` says one arrived (the chat repaints)."""

    ready = Signal(str)

    def __init__(self, parent: QObject | None = None, side: int = int(THUMB * 2)) -> None:
        super().__init__(parent)
        self.side = side  # decoded at twice the box, sharp on a high-density screen
        self._images: OrderedDict[str, QImage] = OrderedDict()
        self._loading: set[str] = set()
        self._failed: set[str] = set()
        self._load: Loader | None = None
        self._spawn: Spawner | None = None

    def connect_source(self, load: Loader, spawn: Spawner) -> None:
        """Where the bytes come from (the attachment service) and how work is started."""
        self._load, self._spawn = load, spawn

    def get(self, sha256: str) -> QImage | None:
        """The thumbnail if it is decoded; otherwise asks for it and returns None."""
        image = self._images.get(sha256)
        if image is not None:
            self._images.move_to_end(sha256)
            return image
        if sha256 not in self._loading and sha256 not in self._failed:
            self._request(sha256)
        return None

    def failed(self, sha256: str) -> bool:
        return sha256 in self._failed

    def __len__(self) -> int:
        return len(self._images)

    def _request(self, sha256: str) -> None:
        load, spawn = self._load, self._spawn
        if load is None or spawn is None:
            return
        self._loading.add(sha256)

        async def work() -> None:
            import asyncio  # here, not at the top: the chat's first frame does without it

            try:
                data = await load(sha256)
                image = (await asyncio.to_thread(decode_thumbnail, data, self.side)
                         if data is not None else QImage())
            finally:
                self._loading.discard(sha256)
            if image.isNull():
                self._failed.add(sha256)
            else:
                self._images[sha256] = image
                while len(self._images) > THUMBS_KEPT:
                    self._images.popitem(last=False)
            self.ready.emit(sha256)

        spawn(work())


# --- painting ------------------------------------------------------------------------------


def paint_tiles(p: QPainter, tiles: Sequence[Tile], colors: ChatColors,
                thumbnails: ThumbnailCache | None, small: Any, label_font: Any,
                hovered: int | None) -> None:
    """Draw a row's tiles; `hovered` is the index under the pointer."""
    p.save()
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    for tile in tiles:
        item, rect = tile.item, tile.rect
        hot = hovered == tile.index and item.kind != "placeholder"
        if item.kind == "image":
            _paint_thumb(p, tile, colors, thumbnails, hot, small)
        else:
            _paint_card(p, tile, colors, hot, small, label_font)
        if hot:
            p.setPen(QPen(colors.accent, 1.5))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRoundedRect(rect.adjusted(0.75, 0.75, -0.75, -0.75), 9, 9)
    p.restore()


def _paint_thumb(p: QPainter, tile: Tile, colors: ChatColors,
                 thumbnails: ThumbnailCache | None, hot: bool, small: Any) -> None:
    rect = tile.rect
    image = thumbnails.get(tile.item.sha256) if thumbnails is not None else None
    p.setPen(QPen(colors.card_border, 1.0))
    p.setBrush(colors.card)
    p.drawRoundedRect(rect.adjusted(0.5, 0.5, -0.5, -0.5), 9, 9)
    if image is not None and not image.isNull():
        target = QRectF(0, 0, image.width(), image.height())
        scale = min(rect.width() / max(1, image.width()), rect.height() / max(1, image.height()))
        target.setSize(target.size() * scale)
        target.moveCenter(rect.center())
        p.save()
        clip = rect.adjusted(1, 1, -1, -1)
        path = QPainterPath()
        path.addRoundedRect(clip, 8, 8)
        p.setClipPath(path, Qt.ClipOperation.IntersectClip)
        p.drawImage(target, image)
        p.restore()
        return
    failed = thumbnails is not None and thumbnails.failed(tile.item.sha256)
    p.setFont(small)
    p.setPen(colors.muted)
    label = "Cannot show" if failed else "…"
    p.drawText(rect.adjusted(6, 0, -6, 0), int(Qt.AlignmentFlag.AlignCenter), label)


def _paint_card(p: QPainter, tile: Tile, colors: ChatColors, hot: bool, small: Any,
                label_font: Any) -> None:
    item, rect = tile.item, tile.rect
    placeholder = item.kind == "placeholder"
    p.setPen(QPen(colors.card_border, 1.0, Qt.PenStyle.DashLine if placeholder
                  else Qt.PenStyle.SolidLine))
    p.setBrush(colors.hover if hot else colors.card)
    p.drawRoundedRect(rect.adjusted(0.5, 0.5, -0.5, -0.5), 9, 9)
    icon = QRectF(rect.left() + 12, rect.center().y() - 10, 20, 20)
    text_color = colors.faint if placeholder else colors.text
    draw_icon(p, "doc", icon, colors.faint if placeholder else colors.accent)
    text_left = icon.right() + 10
    text_w = rect.right() - 10 - text_left
    p.setFont(label_font)
    p.setPen(text_color)
    fm = QFontMetricsF(label_font)
    name = fm.elidedText(item.name, Qt.TextElideMode.ElideMiddle, text_w)
    p.drawText(QRectF(text_left, rect.top() + 7, text_w, rect.height() / 2 - 5),
               int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), name)
    p.setFont(small)
    p.setPen(colors.faint if placeholder else colors.muted)
    fm = QFontMetricsF(small)
    detail = fm.elidedText(item.detail, Qt.TextElideMode.ElideRight, text_w)
    p.drawText(QRectF(text_left, rect.center().y() + 1, text_w, rect.height() / 2 - 8),
               int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), detail)
