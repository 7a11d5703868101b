"""Preparing attachments: the caps checked from a file's size before it is read, the kind
from the bytes, images decoded (a GIF's first frame) and downscaled the same way every time,
a PDF's page text, and clear refusals for what cannot be sent."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image
from tests.support.attachment_files import encrypted_pdf, gif_two_frames, jpeg, pdf, png

from treechat.core.attachments import AttachmentError
from treechat.services.attachments import (
    AttachmentLimits,
    image_for_provider,
    prepare_bytes,
    prepare_files,
    prepare_path,
)


def test_a_2_gb_file_is_refused_from_its_size_without_being_read(tmp_path: Path) -> None:
    huge = tmp_path / "huge.bin"
    with huge.open("wb") as f:  # sparse: takes no disk and no memory
        f.truncate(2 * 1024**3)
    with pytest.raises(AttachmentError, match=r"huge\.bin is 2\.0 GB; a file can be at most"):
        prepare_path(huge)


def test_the_per_message_cap_counts_every_file_before_any_is_read(tmp_path: Path) -> None:
    limits = AttachmentLimits(max_file_bytes=1000, max_message_bytes=1500)
    paths = []
    for i in range(2):
        p = tmp_path / f"f{i}.txt"
        p.write_text("x" * 900)
        paths.append(p)
    with pytest.raises(AttachmentError, match="one message can carry at most"):
        prepare_files(paths, limits)
    assert len(prepare_files(paths[:1], limits)) == 1


def test_text_by_content_whatever_the_name_and_binary_refused(tmp_path: Path) -> None:
    p = tmp_path / "script.png"  # the name lies: the bytes are text
    p.write_bytes("print('héllo')\n".encode())
    prepared = prepare_path(p)
    assert prepared.ref.media_type == "text/plain"
    assert prepared.text == "File: script.png\n```\nprint('héllo')\n```"
    with pytest.raises(AttachmentError, match="is a binary file"):
        prepare_bytes(bytes(range(256)) * 16, "blob.dat")


def test_a_corrupt_image_and_an_encrypted_or_broken_pdf_get_clear_errors() -> None:
    broken = png()[:60]
    with pytest.raises(AttachmentError, match=r"cut\.png is not a readable image"):
        prepare_bytes(broken, "cut.png")
    with pytest.raises(AttachmentError, match="encrypted PDF"):
        prepare_bytes(encrypted_pdf(), "secret.pdf")
    with pytest.raises(AttachmentError, match="not a readable PDF"):
        prepare_bytes(b"%PDF-1.4\nnothing else", "bad.pdf")


def test_a_pdf_gives_its_page_text_with_page_markers() -> None:
    prepared = prepare_bytes(pdf(["Alpha page", "Beta page"]), "report.pdf")
    assert prepared.pages == 2
    assert "--- page 1 of 2 ---\nAlpha page" in prepared.text
    assert "--- page 2 of 2 ---\nBeta page" in prepared.text


def test_a_gif_is_its_first_frame_and_a_large_image_is_downscaled_the_same_way_twice() -> None:
    gif = prepare_bytes(gif_two_frames(), "anim.gif")
    assert (gif.ref.media_type, gif.width, gif.height) == ("image/gif", 20, 10)
    kind, sent = image_for_provider(gif.data, "anim.gif", "image/gif", "openai")
    assert kind == "image/png"
    frame = Image.open(io.BytesIO(sent)).convert("RGB")
    original = Image.open(io.BytesIO(gif.data)).convert("RGB")
    assert frame.getpixel((0, 0)) == original.getpixel((0, 0))

    big = jpeg(3000, 2000)
    first = image_for_provider(big, "p.jpg", "image/jpeg", "anthropic")
    second = image_for_provider(big, "p.jpg", "image/jpeg", "anthropic")
    assert first == second
    w, h = Image.open(io.BytesIO(first[1])).size
    assert max(w, h) <= 1568 and w * h <= 1_150_000
    small = png(40, 30)
    assert image_for_provider(small, "s.png", "image/png", "openai") == ("image/png", small)


def test_odd_names_are_kept_safe_and_never_used_as_paths(tmp_path: Path) -> None:
    p = tmp_path / "ok.txt"
    p.write_text("hi")
    prepared = prepare_path(p, name="../../etc/\x1bevil.txt")
    assert prepared.ref.name == "_evil.txt"
