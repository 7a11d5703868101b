"""A file's text: UTF-8 with or without its byte order mark, another encoding found by
charset-normalizer, and binary refused whatever a detector would guess."""

from __future__ import annotations

from treechat.tools.text_decoding import decode_text


def test_text_is_utf8_or_a_detected_encoding_and_binary_is_not_text() -> None:
    assert decode_text("naïve café\r\n".encode()) == "naïve café\n"
    latin = ("Le café est très chaud, l'été à Orléans. " * 8).encode("cp1252")
    assert "très" in (decode_text(latin) or "")
    assert decode_text(bytes(range(256)) * 8) is None
    assert decode_text(b"ELF\x00\x00\x01\x02binary") is None


def test_an_empty_file_is_empty_text_and_a_byte_order_mark_is_dropped() -> None:
    assert decode_text(b"") == ""
    assert decode_text(b"\xef\xbb\xbfhello") == "hello"
    assert decode_text("wide text, two bytes a letter".encode("utf-16")) == (
        "wide text, two bytes a letter")
