"""The app icon renders into every size the systems ask for, in files their readers accept."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from PySide6.QtGui import QImage, QImageReader
from tests.packaging.conftest import ROOT, load_packaging_module

icons = load_packaging_module("icons")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, qapp: object) -> dict[str, Path]:
    # `qapp` first: painting needs an application, and the one made here must be the
    # QApplication every widget test after this shares.
    written: dict[str, Path] = icons.build_icons(tmp_path_factory.mktemp("icons"))
    return written


def test_hicolor_pngs_have_their_sizes_and_are_not_blank(built: dict[str, Path]) -> None:
    for size in icons.HICOLOR_SIZES:
        path = built[f"png{size}"]
        assert path.parts[-4:] == ("hicolor", f"{size}x{size}", "apps", "treechat.png")
        image = QImage(str(path))
        assert (image.width(), image.height()) == (size, size)
        # corners are transparent (rounded tile), the centre is painted
        assert image.pixelColor(0, 0).alpha() == 0
        assert image.pixelColor(size // 2, size // 2).alpha() == 255
    assert built["svg"].read_bytes() == (ROOT / "resources/icons/treechat.svg").read_bytes()


def test_ico_holds_every_windows_size(built: dict[str, Path]) -> None:
    data = built["ico"].read_bytes()
    reserved, kind, count = struct.unpack_from("<HHH", data)
    assert (reserved, kind, count) == (0, 1, len(icons.ICO_SIZES))
    reader = QImageReader(str(built["ico"]))
    sizes = set()
    for _ in range(reader.imageCount()):
        image = reader.read()
        sizes.add(image.width())
        reader.jumpToNextImage()
    assert sizes == set(icons.ICO_SIZES)


def test_icns_is_a_well_formed_container(built: dict[str, Path]) -> None:
    data = built["icns"].read_bytes()
    assert data[:4] == b"icns"
    assert struct.unpack_from(">I", data, 4)[0] == len(data)
    offset, kinds = 8, []
    while offset < len(data):
        kinds.append(data[offset:offset + 4])
        offset += struct.unpack_from(">I", data, offset + 4)[0]
    assert offset == len(data)
    assert {b"icp4", b"ic07", b"ic08", b"ic09", b"ic10"} <= set(kinds)
    assert QImage.fromData(data, "ICNS").width() > 0


def test_desktop_entry_names_the_command_and_icon() -> None:
    import configparser

    entry = configparser.ConfigParser(interpolation=None)
    entry.optionxform = str  # type: ignore[assignment,method-assign]
    entry.read(ROOT / "resources" / "treechat.desktop", encoding="utf-8")
    section = entry["Desktop Entry"]
    assert section["Type"] == "Application"
    assert section["Exec"].split()[0] == "treechat"
    assert section["Icon"] == "treechat"
    assert section["Categories"].endswith(";")
    assert section["Terminal"] == "false"
