"""Renders the SVG app icon into what each system wants: hicolor PNGs (Linux), .ico (Windows)
and .icns (macOS). Run at build time: `python packaging/icons.py OUT_DIR`."""

from __future__ import annotations

import os
import struct
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE_SVG = ROOT / "resources" / "icons" / "treechat.svg"
ICON_NAME = "treechat"
HICOLOR_SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
# icns entry types holding PNG data, by pixel size (the @2x variants reuse the larger renders).
ICNS_TYPES: tuple[tuple[bytes, int], ...] = (
    (b"icp4", 16), (b"icp5", 32), (b"icp6", 64), (b"ic07", 128), (b"ic08", 256),
    (b"ic09", 512), (b"ic10", 1024), (b"ic11", 32), (b"ic12", 64), (b"ic13", 256),
    (b"ic14", 512),
)


def render_pngs(svg: Path, sizes: tuple[int, ...]) -> dict[int, bytes]:
    """PNG bytes of `svg` rendered square at each size, antialiased on transparency."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    # A QGuiApplication must exist while painting; it lives until the process ends.
    _app = QGuiApplication.instance() or QGuiApplication([sys.argv[0]])
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise ValueError(f"{svg} is not a valid SVG")
    out: dict[int, bytes] = {}
    for size in sizes:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        renderer.render(painter)
        painter.end()
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        image.save(buffer, "PNG")
        buffer.close()
        out[size] = bytes(data.data())
    return out


def pack_ico(pngs: Mapping[int, bytes]) -> bytes:
    """A Windows .ico whose entries are PNG images (supported since Windows Vista)."""
    sizes = sorted(pngs)
    header = struct.pack("<HHH", 0, 1, len(sizes))
    offset = len(header) + 16 * len(sizes)
    directory = b""
    for size in sizes:
        data = pngs[size]
        # Width/height 0 means 256 in the ICO directory.
        side = 0 if size >= 256 else size
        directory += struct.pack("<BBBBHHII", side, side, 0, 0, 1, 32, len(data), offset)
        offset += len(data)
    return header + directory + b"".join(pngs[s] for s in sizes)


def pack_icns(pngs: Mapping[int, bytes]) -> bytes:
    """A macOS .icns holding PNG entries for every size it has a render of."""
    body = b""
    for kind, size in ICNS_TYPES:
        if size in pngs:
            body += kind + struct.pack(">I", 8 + len(pngs[size])) + pngs[size]
    return b"icns" + struct.pack(">I", 8 + len(body)) + body


def build_icons(out_dir: Path, svg: Path = SOURCE_SVG) -> dict[str, Path]:
    """Write hicolor/<N>x<N>/apps/treechat.png, hicolor/scalable, treechat.ico, treechat.icns."""
    sizes = tuple(sorted(set(HICOLOR_SIZES) | set(ICO_SIZES) | {1024}))
    pngs = render_pngs(svg, sizes)
    written: dict[str, Path] = {}
    for size in HICOLOR_SIZES:
        path = out_dir / "hicolor" / f"{size}x{size}" / "apps" / f"{ICON_NAME}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pngs[size])
        written[f"png{size}"] = path
    scalable = out_dir / "hicolor" / "scalable" / "apps" / f"{ICON_NAME}.svg"
    scalable.parent.mkdir(parents=True, exist_ok=True)
    scalable.write_bytes(svg.read_bytes())
    written["svg"] = scalable
    written["ico"] = out_dir / f"{ICON_NAME}.ico"
    written["ico"].write_bytes(pack_ico({s: pngs[s] for s in ICO_SIZES}))
    written["icns"] = out_dir / f"{ICON_NAME}.icns"
    written["icns"].write_bytes(pack_icns(pngs))
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "icons"
    for name, path in build_icons(target).items():
        print(f"{name:>7}  {path}")
