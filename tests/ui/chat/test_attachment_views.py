"""Files in a sent message: each shown as a thumbnail or a card saying its kind, pages and
size, a file an import named but did not carry as a greyed card, ill-formed entries left
out; tiles wrap within the row and sit right under a question's bubble."""

from __future__ import annotations

from PySide6.QtCore import QBuffer, QByteArray, QIODevice
from PySide6.QtGui import QColor, QImage

from treechat.ui.chat.attachment_views import (
    THUMB,
    TILE_GAP,
    ShownAttachment,
    decode_thumbnail,
    lay_out_tiles,
    shown_attachments,
    thumb_size,
)


def test_a_messages_files_are_listed_in_order_placeholders_included() -> None:
    shown = shown_attachments({"attachments": [
        {"sha256": "a" * 64, "media_type": "application/pdf", "name": "report.pdf",
         "size": 2048, "pages": 3},
        {"placeholder": True, "name": "../chart.png", "size_bytes": 10},
        "not an entry",
        {"sha256": "b" * 64},  # no media type: not well formed
        {"sha256": "c" * 64, "media_type": "image/png", "name": "cat.png", "size": 1,
         "width": 640, "height": 480},
    ]})
    assert [s.kind for s in shown] == ["pdf", "placeholder", "image"]
    pdf, missing, image = shown
    assert pdf.detail.startswith("PDF · 3 pages · ")
    assert "/" not in missing.name and missing.detail.startswith("Not in this chat's export")
    assert "did not carry it" in missing.tooltip
    assert image.detail.startswith("Image · 640×480 · ")
    assert image.tooltip.endswith("Open the image full size")
    assert shown_attachments({}) == ()


def test_thumbnails_keep_the_aspect_and_tiles_wrap_within_the_row() -> None:
    wide = ShownAttachment("image", "pano.png", width=4000, height=500)
    w, h = thumb_size(wide)
    assert w == THUMB and h >= 48  # a panorama stays clickable
    assert thumb_size(ShownAttachment("image", "x.png")) == (THUMB, THUMB)
    cards = [ShownAttachment("pdf", f"{i}.pdf", size=1) for i in range(3)]
    tiles, height = lay_out_tiles(cards, 10, 500, 100, align_right=False)
    assert [t.index for t in tiles] == [0, 1, 2]
    assert tiles[0].rect.left() == 10 and tiles[2].rect.top() > tiles[0].rect.top()
    assert all(t.rect.right() <= 510 for t in tiles) and height > 0
    right, _ = lay_out_tiles(cards[:1], 10, 500, 0, align_right=True)
    assert right[0].rect.right() == 510
    assert lay_out_tiles([], 0, 500, 0, align_right=False) == ([], 0.0)
    assert TILE_GAP > 0


def png(width: int, height: int) -> bytes:
    image = QImage(width, height, QImage.Format.Format_RGB32)
    image.fill(QColor("orange"))
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    buffer.close()
    return bytes(data.data())


def test_a_thumbnail_is_decoded_small_and_junk_decodes_to_nothing(qapp: object) -> None:
    thumb = decode_thumbnail(png(1200, 600), 200)
    assert (thumb.width(), thumb.height()) == (200, 100)
    assert decode_thumbnail(png(50, 40), 200).size().width() == 50  # never enlarged
    assert decode_thumbnail(b"not an image", 200).isNull()
