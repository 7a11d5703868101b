"""The pure attachment rules: what a file is by its bytes, the providers' image prices, the
fence a text file is shown in, safe names and the stub an aged attachment leaves."""

from __future__ import annotations

import pytest

from treechat.core.attachments import (
    AttachmentRef,
    anthropic_image_tokens,
    fenced_text,
    node_attachments,
    openai_image_tokens,
    pdf_text,
    provider_size,
    safe_name,
    sniff,
    stub_text,
    text_or_none,
    with_attachments,
)


@pytest.mark.parametrize(("head", "media"), [
    (b"\x89PNG\r\n\x1a\n\x00\x00", "image/png"),
    (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
    (b"RIFF\x10\x00\x00\x00WEBPVP8 ", "image/webp"),
    (b"GIF89a\x01\x00", "image/gif"),
    (b"%PDF-1.7\n", "application/pdf"),
    (b"hello.png is text", None),
])
def test_a_file_is_known_by_its_bytes_not_its_name(head: bytes, media: str | None) -> None:
    assert sniff(head) == media


def test_text_is_shown_with_lf_and_binary_read_as_text_is_not_text() -> None:
    assert text_or_none("one\r\ntwo\r\n") == "one\ntwo\n"
    assert text_or_none("tab\tand escape \x1b[0m are text") is not None
    assert text_or_none("a NUL \x00 inside") is None
    assert text_or_none("x" * 100 + "\x01\x02\x03") is None  # three controls in 103
    assert text_or_none("x" * 400 + "\x01\x02\x03") is not None  # under one in a hundred


def test_openai_tile_formula_and_anthropic_pixels_over_750() -> None:
    # 1024x1024: short side to 768 -> 768x768 -> 2x2 tiles
    assert openai_image_tokens(1024, 1024) == 85 + 170 * 4
    # 4096x2048: within 2048 -> 2048x1024, short side 768 -> 1536x768 -> 3x2 tiles
    assert provider_size(4096, 2048, "openai") == (1536, 768)
    assert openai_image_tokens(4096, 2048) == 85 + 170 * 6
    assert openai_image_tokens(100, 100) == 85 + 170
    assert anthropic_image_tokens(750, 100) == 100
    w, h = provider_size(4000, 3000, "anthropic")
    assert max(w, h) <= 1568 and w * h <= 1_150_000
    assert anthropic_image_tokens(4000, 3000) == -(-w * h // 750)


def test_a_text_file_is_fenced_with_its_name_and_a_fence_its_text_cannot_close() -> None:
    out = fenced_text("notes.md", "a\n```\ncode\n```\n")
    assert out.startswith("File: notes.md\n````\n")
    assert out.endswith("\n````")
    pages = pdf_text("r.pdf", ["first", "second"])
    assert "--- page 1 of 2 ---\nfirst" in pages and "--- page 2 of 2 ---\nsecond" in pages


def test_odd_names_are_shown_safely_and_never_as_a_path() -> None:
    assert safe_name("../../etc/passwd") == "passwd"
    assert safe_name("C:\\Users\\me\\a.txt") == "a.txt"
    assert safe_name("..") == "attachment"
    assert safe_name("bad\x00\nname?.txt") == "bad__name_.txt"
    long = safe_name("x" * 300 + ".txt")
    assert len(long) <= 120 and long.endswith(".txt")


def test_metadata_round_trips_and_the_stub_names_the_file() -> None:
    ref = AttachmentRef("ab" * 32, "photo.png", "image/png", 2048)
    meta = with_attachments({"other": 1}, [ref])
    assert meta["attachments"] == [
        {"sha256": "ab" * 32, "name": "photo.png", "media_type": "image/png", "size": 2048}]
    assert node_attachments(meta) == (ref,)
    assert node_attachments({"attachments": [{"name": "x"}, 3]}) == ()
    stub = stub_text(ref)
    assert "photo.png" in stub and "image/png" in stub and "2.0 KB" in stub
    assert "recall finds it by its name" in stub
