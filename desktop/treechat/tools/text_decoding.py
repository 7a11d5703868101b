"""The text of a file a person attaches or the model reads: UTF-8 (with or without its byte
order mark), else the encoding charset-normalizer finds; None for a binary file."""

from __future__ import annotations

from ..core.attachments import text_or_none


def decode_text(data: bytes) -> str | None:
    """The text of a file that is text (UTF-8, or the encoding charset-normalizer finds),
    None for binary. A file with NUL bytes or many control characters is binary, whatever a
    detector would guess (`core.attachments.text_or_none`)."""
    if not data:
        return ""
    text: str | None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = None
        if b"\x00" not in data or data.startswith((b"\xff\xfe", b"\xfe\xff")):
            import charset_normalizer  # 0.2 s to load: only for a file that is not UTF-8

            best = charset_normalizer.from_bytes(data).best()
            text = None if best is None else str(best)
    return None if text is None else text_or_none(text)
