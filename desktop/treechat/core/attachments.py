"""Attachments: the pure rules. What a file is (by its bytes, never its name), how a node's
metadata names the files it carries, what an image costs each provider, how a text file is
shown to the model, and the stub an aged attachment becomes."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["image", "pdf", "text"]

METADATA_KEY = "attachments"

IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")
PDF_TYPE = "application/pdf"
TEXT_TYPE = "text/plain"

# How many leading bytes `sniff` needs.
SNIFF_BYTES = 16


class AttachmentError(ValueError):
    """A file that cannot be attached, with the reason in words a user can act on."""


@dataclass(frozen=True, slots=True)
class AttachmentRef:
    """How a node names one attachment: the stored bytes' hash and what to call them."""

    sha256: str
    name: str
    media_type: str
    size: int
    # The tokens it was counted at when sent (for the budget before a request is rendered).
    tokens: int = 0
    # A PDF whose pages also go as images, at the user's request.
    page_images: bool = False
    # A text file the model reads only the start and end of, within this many tokens (a
    # message too long for the window, sent as a file: kept whole, read as far as it fits).
    cut_to: int = 0

    def as_meta(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sha256": self.sha256, "name": self.name,
                               "media_type": self.media_type, "size": self.size}
        if self.tokens:
            out["tokens"] = self.tokens
        if self.page_images:
            out["page_images"] = True
        if self.cut_to:
            out["cut_to"] = self.cut_to
        return out

    @property
    def kind(self) -> Kind:
        return kind_of(self.media_type)


def node_attachments(metadata: Mapping[str, Any]) -> tuple[AttachmentRef, ...]:
    """The attachments a node's metadata lists (entries that are not well formed skipped)."""
    out: list[AttachmentRef] = []
    for entry in metadata.get(METADATA_KEY) or ():
        if not isinstance(entry, Mapping):
            continue
        sha, name = entry.get("sha256"), entry.get("name")
        media, size = entry.get("media_type"), entry.get("size")
        tokens, cut = entry.get("tokens"), entry.get("cut_to")
        if isinstance(sha, str) and sha and isinstance(media, str):
            out.append(AttachmentRef(sha, safe_name(str(name or "attachment")), media,
                                     int(size) if isinstance(size, int | float) else 0,
                                     int(tokens) if isinstance(tokens, int | float) else 0,
                                     bool(entry.get("page_images")),
                                     int(cut) if isinstance(cut, int | float) else 0))
    return tuple(out)


def missing_files_note(metadata: Mapping[str, Any]) -> str:
    """What the model reads of the files an imported message named but its export did not
    carry (the window shows them as greyed cards): one line each, so the model knows they
    were there and that it cannot see them. Empty when there are none."""
    lines = []
    for entry in metadata.get(METADATA_KEY) or ():
        if isinstance(entry, Mapping) and entry.get("placeholder") and not entry.get("sha256"):
            kind = str(entry.get("kind") or "file")
            name = safe_name(str(entry.get("name") or entry.get("ref") or kind))
            lines.append(f"[{kind} not included in this imported chat: {name}]")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class AttachmentPayload:
    """What the model receives for one attachment, prepared by the engine from the store:
    content blocks (OpenAI format), the tokens of their text as the counter sees it, and
    the tokens it cannot see (images, priced by the provider's rule)."""

    sha256: str
    blocks: tuple[dict[str, Any], ...]
    text_tokens: int = 0
    image_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.text_tokens + self.image_tokens

    @property
    def has_image(self) -> bool:
        return any(b.get("type") == "image_url" for b in self.blocks)


def with_attachments(metadata: Mapping[str, Any],
                     refs: Sequence[AttachmentRef]) -> dict[str, Any]:
    out = dict(metadata)
    if refs:
        out[METADATA_KEY] = [r.as_meta() for r in refs]
    return out


def kind_of(media_type: str) -> Kind:
    if media_type in IMAGE_TYPES:
        return "image"
    if media_type == PDF_TYPE:
        return "pdf"
    return "text"


# --- what a file is -----------------------------------------------------------------------


def sniff(head: bytes) -> str | None:
    """The media type the leading bytes prove (PNG, JPEG, WebP, GIF, PDF), else None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith(b"%PDF-"):
        return PDF_TYPE
    return None


# Control characters a text file may hold: tab, newline, form feed, carriage return, escape.
_TEXT_CONTROLS = frozenset("\t\n\x0b\x0c\r\x1b")


def text_or_none(text: str) -> str | None:
    """Decoded text as the model is shown it (CRLF as LF), or None when it is a binary file's
    bytes read as text: a NUL, or many control characters, whatever a detector guessed.
    (Decoding the bytes is `tools.text_decoding.decode_text`.)"""
    sample = text[:65536]
    controls = sum(1 for c in sample if unicodedata.category(c) == "Cc"
                   and c not in _TEXT_CONTROLS)
    if "\x00" in sample or controls > max(2, len(sample) // 100):
        return None
    return text.replace("\r\n", "\n")


# --- names ---------------------------------------------------------------------------------


def safe_name(name: str, limit: int = 120) -> str:
    """A file name fit to show and to write beside an export: the last path component,
    control and separator characters replaced, never empty, never `.` or `..`."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    cleaned = "".join(
        "_" if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") or c in '/\\:*?"<>|'
        else c
        for c in base
    ).strip().lstrip(".")
    if not cleaned:
        cleaned = "attachment"
    if len(cleaned) > limit:
        _stem, dot, ext = cleaned.rpartition(".")
        keep = ext if dot and len(ext) <= 10 else ""
        cleaned = cleaned[: limit - len(keep) - 2] + "…" + ("." + keep if keep else "")
    return cleaned


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"


# --- what the model receives ---------------------------------------------------------------


def fenced_text(name: str, text: str) -> str:
    """A text file as the model sees it: its name, then its text in a fence longer than any
    run of backticks inside it."""
    longest = run = 0
    for c in text:
        run = run + 1 if c == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"File: {safe_name(name)}\n{fence}\n{body}{fence}"


def pdf_text(name: str, pages: Sequence[str]) -> str:
    """A PDF's text with a marker before each page."""
    parts = [f"--- page {i} of {len(pages)} ---\n{t.strip()}" for i, t in enumerate(pages, 1)]
    return fenced_text(name, "\n".join(parts))


def stub_text(ref: AttachmentRef) -> str:
    """What an aged attachment leaves in the request: which file it was, and that `recall`
    finds it (by its name or its text) when it is needed again."""
    return (f"[attachment {ref.name} ({ref.media_type}, {human_size(ref.size)}) is no longer "
            "shown; it is kept in the conversation, and recall finds it by its name]")


# --- image limits and prices ---------------------------------------------------------------

Provider = Literal["openai", "anthropic"]


def fit_within(width: int, height: int, long_edge: int, max_pixels: int | None = None
               ) -> tuple[int, int]:
    """The largest size with the same aspect ratio within `long_edge` (and `max_pixels`),
    never larger than the original."""
    scale = min(1.0, long_edge / max(width, height, 1))
    if max_pixels is not None and width * height * scale * scale > max_pixels:
        scale = math.sqrt(max_pixels / (width * height))
    return max(1, math.floor(width * scale)), max(1, math.floor(height * scale))


def provider_size(width: int, height: int, provider: Provider) -> tuple[int, int]:
    """The size an image is sent at: the provider's own downscale done before sending, so
    nothing is paid for pixels it would throw away. OpenAI: within 2048x2048, then the
    short side at most 768; Anthropic: long edge at most 1568 and about 1.15 megapixels."""
    if provider == "anthropic":
        return fit_within(width, height, 1568, 1_150_000)
    w, h = fit_within(width, height, 2048)
    short = min(w, h)
    if short > 768:
        w, h = max(1, math.floor(w * 768 / short)), max(1, math.floor(h * 768 / short))
    return w, h


def openai_image_tokens(width: int, height: int) -> int:
    """OpenAI's high-detail price: 85 + 170 per 512-pixel tile of the scaled image."""
    w, h = provider_size(width, height, "openai")
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


def anthropic_image_tokens(width: int, height: int) -> int:
    """Anthropic's price: width x height / 750 of the image as sent."""
    w, h = provider_size(width, height, "anthropic")
    return math.ceil(w * h / 750)


def image_tokens(width: int, height: int, provider: Provider) -> int:
    if provider == "anthropic":
        return anthropic_image_tokens(width, height)
    return openai_image_tokens(width, height)
