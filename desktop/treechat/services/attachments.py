"""Files, images and PDFs in a message: checked and prepared before sending (caps from the
file's size before a byte is read, the kind from its bytes), stored content-addressed, and
turned into what a model receives, the same bytes for the same attachment and provider on
every request so the cached prefix holds.

Pillow decodes and downscales images; pypdfium2 (PDFium) reads a PDF's text and renders its
pages. Everything here is CPU or file work: callers on the event loop use the async methods,
which run it on a worker thread."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import os
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core.attachments import (
    IMAGE_TYPES,
    PDF_TYPE,
    SNIFF_BYTES,
    TEXT_TYPE,
    AttachmentError,
    AttachmentPayload,
    AttachmentRef,
    Provider,
    fenced_text,
    human_size,
    image_tokens,
    pdf_text,
    provider_size,
    safe_name,
    sniff,
)
from ..core.clock import SYSTEM_CLOCK, Clock
from ..core.tokens import TokenCounter, truncate_to_tokens
from ..store.database import Store
from ..tools.text_decoding import decode_text

__all__ = [
    "AttachmentError",
    "AttachmentLimits",
    "AttachmentPayload",
    "AttachmentService",
    "PreparedFile",
    "linked_elsewhere",
    "prepare_bytes",
    "prepare_files",
    "prepare_path",
]

MB = 1024 * 1024
# Pixels an image may decode to (a 20 MB photo is about 50 MP); above it is refused rather
# than decoded, whatever its file size.
MAX_PIXELS = 120_000_000
# PDF pages rendered as images when asked, at most this many (the text covers the rest).
MAX_PDF_IMAGE_PAGES = 20
PDF_RENDER_SCALE = 2.0  # page images: 144 dpi


# What an image may take decoded (4 bytes a pixel): a 24-megapixel picture with alpha, or a
# 32-megapixel photo. A larger JPEG is decoded at a half, a quarter or an eighth of its size
# (its format allows that); another format that large is refused, whatever its file size.
MAX_DECODED_IMAGE_BYTES = 128 * MB


@dataclass(frozen=True, slots=True)
class AttachmentLimits:
    max_file_bytes: int = 32 * MB
    max_message_bytes: int = 64 * MB
    max_files: int = 20
    max_pdf_pages: int = 500
    # A text file larger than this fits no model's window (two million tokens is about
    # 8 MB of text); reading, counting and cutting it would cost gigabytes and minutes.
    max_text_bytes: int = 8 * MB


@dataclass(frozen=True, slots=True)
class PreparedFile:
    """A file checked and ready to send: its bytes as they will be stored, what it is, and
    what it costs. `text` is what a model reads of a text file or a PDF."""

    ref: AttachmentRef
    data: bytes = field(repr=False)
    text: str = ""
    width: int = 0
    height: int = 0
    pages: int = 0
    page_images: bool = False
    # a PDF's first pages as they are rendered for a model that sees (pixels, before the
    # provider's downscale): what its page images cost, known without rendering them
    page_sizes: tuple[tuple[int, int], ...] = ()

    @property
    def kind(self) -> str:
        return self.ref.kind

    def tokens(self, counter: TokenCounter, provider: Provider = "openai") -> int:
        """What the chip shows: the tokens this file adds to a request to `provider`."""
        if self.kind == "image":
            return image_tokens(self.width, self.height, provider)
        text = counter.count(self.text)
        if not self.page_images:
            return text
        return text + sum(image_tokens(*provider_size(w, h, provider), provider)
                          for w, h in self.page_sizes)

    def with_page_images(self, wanted: bool) -> PreparedFile:
        """The same PDF, sent with (or without) its first pages as images."""
        return replace(self, page_images=wanted and self.kind == "pdf")

    def meta(self) -> dict[str, Any]:
        out = self.ref.as_meta()
        if self.width:
            out["width"], out["height"] = self.width, self.height
        if self.pages:
            out["pages"] = self.pages
        if self.page_images:
            out["page_images"] = True
        return out


# --- checking and preparing ---------------------------------------------------------------


def _too_big(name: str, size: int, limit: int) -> AttachmentError:
    return AttachmentError(
        f"{safe_name(name)} is {human_size(size)}; a file can be at most {human_size(limit)}"
    )


def prepare_files(
    paths: Sequence[str | os.PathLike[str]],
    limits: AttachmentLimits = AttachmentLimits(),
    *,
    page_images: bool = False,
) -> tuple[PreparedFile, ...]:
    """Every file of one message, the caps checked from the files' sizes before any is read."""
    if len(paths) > limits.max_files:
        raise AttachmentError(f"{len(paths)} files: a message can carry at most "
                              f"{limits.max_files}")
    sizes: list[int] = []
    for p in paths:
        path = Path(p)
        try:
            st = path.stat()
        except OSError as exc:
            raise AttachmentError(f"{safe_name(path.name)} cannot be read: "
                                  f"{exc.strerror or exc}") from exc
        if not path.is_file():
            raise AttachmentError(f"{safe_name(path.name)} is not a file")
        if st.st_size > limits.max_file_bytes:
            raise _too_big(path.name, st.st_size, limits.max_file_bytes)
        sizes.append(st.st_size)
    if sum(sizes) > limits.max_message_bytes:
        raise AttachmentError(
            f"these files come to {human_size(sum(sizes))}; one message can carry at most "
            f"{human_size(limits.max_message_bytes)}"
        )
    return tuple(prepare_path(p, limits, page_images=page_images) for p in paths)


def linked_elsewhere(paths: Sequence[str | os.PathLike[str]]) -> tuple[str, ...]:
    """One line for each file given by a link: the name says one place, the bytes that are
    sent come from another, and the person sending should see where."""
    notes: list[str] = []
    for p in paths:
        path = Path(p)
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):  # missing or a loop: prepare_files says so
            continue
        if real != path.absolute() and (path.is_symlink() or any(
                parent.is_symlink() for parent in path.absolute().parents)):
            notes.append(f"{safe_name(path.name)} is a link: the file sent is {real}")
    return tuple(notes)


def prepare_path(
    path: str | os.PathLike[str],
    limits: AttachmentLimits = AttachmentLimits(),
    *,
    name: str | None = None,
    page_images: bool = False,
) -> PreparedFile:
    """One file from disk; its size is checked before it is read, and no more than the cap
    is ever read (a file that grows meanwhile is refused too)."""
    p = Path(path)
    shown = safe_name(name or p.name)
    try:
        size = p.stat().st_size
        if size > limits.max_file_bytes:
            raise _too_big(shown, size, limits.max_file_bytes)
        with p.open("rb") as f:
            # exactly the size stat gave: a buffer cut down afterwards is a copy made
            # holding the GIL
            data = f.read(size)
            grew = f.read(1)
    except OSError as exc:
        raise AttachmentError(f"{shown} cannot be read: {exc.strerror or exc}") from exc
    if grew:
        raise AttachmentError(f"{shown} changed while it was being read; attach it again")
    return prepare_bytes(data, shown, limits, page_images=page_images)


def prepare_bytes(
    data: bytes,
    name: str,
    limits: AttachmentLimits = AttachmentLimits(),
    *,
    page_images: bool = False,
) -> PreparedFile:
    """A file's bytes (a paste, an import) checked and described. Refuses, with the reason,
    what is too big, a corrupt image, an encrypted or broken PDF, and binary data."""
    shown = safe_name(name)
    if len(data) > limits.max_file_bytes:
        raise _too_big(shown, len(data), limits.max_file_bytes)
    sha = hashlib.sha256(data).hexdigest()
    media = sniff(data[:SNIFF_BYTES])
    if media in IMAGE_TYPES:
        width, height = _image_size(data, shown)
        return PreparedFile(AttachmentRef(sha, shown, media, len(data)), data,
                            width=width, height=height)
    if media == PDF_TYPE:
        pages = pdf_pages_text(data, shown, limits.max_pdf_pages)
        return PreparedFile(AttachmentRef(sha, shown, PDF_TYPE, len(data)), data,
                            text=pdf_text(shown, pages), pages=len(pages),
                            page_images=page_images,
                            page_sizes=pdf_page_sizes(data, shown))
    if len(data) > limits.max_text_bytes and decode_text(data[:SNIFF_BYTES]) is not None:
        raise AttachmentError(
            f"{shown} is {human_size(len(data))} of text; a text file can be at most "
            f"{human_size(limits.max_text_bytes)} (no model's window holds more)"
        )
    text = decode_text(data)
    if text is None:
        raise AttachmentError(
            f"{shown} is a binary file; only text, code, PNG, JPEG, WebP and GIF images and "
            "PDFs can be attached"
        )
    return PreparedFile(AttachmentRef(sha, shown, TEXT_TYPE, len(data)), data,
                        text=fenced_text(shown, text))


# --- images -------------------------------------------------------------------------------


def _open_image(data: bytes, name: str) -> Any:
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            im = Image.open(io.BytesIO(data))
            if im.width * im.height > MAX_PIXELS:
                raise AttachmentError(
                    f"{name} is {im.width}x{im.height} pixels; images can be at most "
                    f"{MAX_PIXELS // 1_000_000} megapixels")
            _decode_within(im, name)
            im.seek(0)  # an animated GIF: its first frame
            im.load()
    except AttachmentError:
        raise
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError,
            Image.DecompressionBombWarning, Image.DecompressionBombError) as exc:
        raise AttachmentError(f"{name} is not a readable image (corrupt or cut short): "
                              f"{exc}") from exc
    return im


def _decode_within(im: Any, name: str) -> None:
    """Keep the decoded image within `MAX_DECODED_IMAGE_BYTES`: a JPEG is decoded at a
    smaller scale (`draft`), anything else that large is refused before it is decoded."""
    if im.width * im.height * 4 <= MAX_DECODED_IMAGE_BYTES:
        return
    if im.format == "JPEG":
        scale = 2
        while scale < 8 and (im.width // scale) * (im.height // scale) * 4 > \
                MAX_DECODED_IMAGE_BYTES:
            scale *= 2
        im.draft(im.mode, (im.width // scale, im.height // scale))
        if im.width * im.height * 4 <= MAX_DECODED_IMAGE_BYTES:
            return
    raise AttachmentError(
        f"{name} is {im.width}x{im.height} pixels: decoded it would take "
        f"{human_size(im.width * im.height * 4)}, and an image can take at most "
        f"{human_size(MAX_DECODED_IMAGE_BYTES)}; save a smaller copy to attach it")


def _image_size(data: bytes, name: str) -> tuple[int, int]:
    """The image's size as stored (checked whole by decoding it, within the memory cap)."""
    from PIL import Image

    _open_image(data, name)  # first: what cannot be read is refused in words
    full = Image.open(io.BytesIO(data)).size  # as stored, before any reduced-scale decode
    return int(full[0]), int(full[1])


def image_for_provider(data: bytes, name: str, media_type: str,
                       provider: Provider) -> tuple[str, bytes]:
    """The image as sent to `provider`: the original when it is already within the
    provider's limits and a format every provider takes, else the first frame downscaled
    (Lanczos) and encoded with fixed settings: the same input gives the same bytes."""
    kind, sent, _ = _image_for_provider(data, name, media_type, provider)
    return kind, sent


def _image_for_provider(data: bytes, name: str, media_type: str,
                        provider: Provider) -> tuple[str, bytes, tuple[int, int]]:
    im = _open_image(data, name)
    target = provider_size(im.width, im.height, provider)
    if target == (im.width, im.height) and media_type in ("image/png", "image/jpeg") and \
            not getattr(im, "is_animated", False):
        return media_type, data, target
    from PIL import Image

    has_alpha = im.mode in ("RGBA", "LA", "PA") or "transparency" in im.info
    mode = "RGBA" if has_alpha else "RGB"
    frame = im if im.mode == mode else im.convert(mode)
    del im  # one decoded copy at a time
    if target != (frame.width, frame.height):
        # reduced by a whole factor first (cheap, box filter), then Lanczos: the big image is
        # not resampled at full size, and the result matches within a pixel's rounding
        frame = frame.resize(target, Image.Resampling.LANCZOS, reducing_gap=3.0)
    out = io.BytesIO()
    if has_alpha or media_type in ("image/png", "image/gif"):
        frame.save(out, "PNG", optimize=False, compress_level=6)
        return "image/png", out.getvalue(), target
    frame.save(out, "JPEG", quality=88, optimize=False, progressive=False)
    return "image/jpeg", out.getvalue(), target


# Encoded a piece at a time (a multiple of 3 bytes, so the pieces join into one encoding):
# one call over megabytes holds the GIL long enough to stall the GUI thread.
_B64_PIECE = 3 * 65536


def data_url(media_type: str, data: bytes) -> str:
    view = memoryview(data)
    pieces = [base64.b64encode(view[i:i + _B64_PIECE]).decode("ascii")
              for i in range(0, len(data), _B64_PIECE)]
    return f"data:{media_type};base64,{''.join(pieces)}"


# --- PDFs ---------------------------------------------------------------------------------


def _open_pdf(data: bytes, name: str) -> Any:
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise AttachmentError(
                f"{name} is an encrypted PDF; save a copy without a password to attach it"
            ) from exc
        raise AttachmentError(f"{name} is not a readable PDF: {exc}") from exc


def pdf_pages_text(data: bytes, name: str, max_pages: int) -> list[str]:
    doc = _open_pdf(data, name)
    try:
        if len(doc) > max_pages:
            raise AttachmentError(f"{name} has {len(doc)} pages; at most {max_pages} can be "
                                  "attached")
        pages: list[str] = []
        for i in range(len(doc)):
            page = doc[i]
            textpage = page.get_textpage()
            pages.append(str(textpage.get_text_bounded()).replace("\r\n", "\n"))
            textpage.close()
            page.close()
        return pages
    finally:
        doc.close()


def pdf_page_sizes(data: bytes, name: str) -> tuple[tuple[int, int], ...]:
    """The pixel sizes `pdf_page_images` renders the first pages at, read from the pages'
    boxes (nothing is rendered)."""
    doc = _open_pdf(data, name)
    try:
        sizes = []
        for i in range(min(len(doc), MAX_PDF_IMAGE_PAGES)):
            page = doc[i]
            width, height = page.get_size()
            page.close()
            sizes.append((round(width * PDF_RENDER_SCALE), round(height * PDF_RENDER_SCALE)))
        return tuple(sizes)
    finally:
        doc.close()


def pdf_page_images(
    data: bytes, name: str, provider: Provider
) -> list[tuple[str, bytes, tuple[int, int]]]:
    """The first pages rendered (PDFium, fixed scale) as PNGs within the provider's limits."""
    doc = _open_pdf(data, name)
    out: list[tuple[str, bytes, tuple[int, int]]] = []
    try:
        for i in range(min(len(doc), MAX_PDF_IMAGE_PAGES)):
            page = doc[i]
            image = page.render(scale=PDF_RENDER_SCALE).to_pil().convert("RGB")
            page.close()
            buf = io.BytesIO()
            image.save(buf, "PNG", optimize=False, compress_level=6)
            out.append(_image_for_provider(buf.getvalue(), name, "image/png", provider))
    finally:
        doc.close()
    return out


# --- the service --------------------------------------------------------------------------


class AttachmentService:
    """Prepares, stores and reads attachments, and builds what a model receives for them.
    Payloads are cached by (hash, provider, page images): a second request reuses the very
    bytes of the first."""

    def __init__(
        self,
        store: Store,
        counter: TokenCounter,
        *,
        limits: AttachmentLimits | None = None,
        clock: Clock = SYSTEM_CLOCK,
        cache_size: int = 128,
    ) -> None:
        self.store = store
        self.counter = counter
        self.limits = limits or AttachmentLimits()
        self.clock = clock
        self._payloads: OrderedDict[tuple[str, str, bool, int], AttachmentPayload] = \
            OrderedDict()
        self._cache_size = cache_size

    async def prepare(self, paths: Sequence[str | os.PathLike[str]], *,
                      page_images: bool = False) -> tuple[PreparedFile, ...]:
        """Files from disk, checked and described, off the event loop."""
        return await asyncio.to_thread(prepare_files, list(paths), self.limits,
                                       page_images=page_images)

    async def prepare_data(self, data: bytes, name: str) -> PreparedFile:
        """Bytes from a paste or a drop of data, checked and described, off the event loop."""
        return await asyncio.to_thread(prepare_bytes, data, name, self.limits)

    async def as_file(self, text: str, name: str, room: int) -> PreparedFile:
        """`text` (a message too long for the window) as a text file kept whole, which the
        model reads only as far as `room` tokens go: its start and end, the cut marked."""
        def work() -> PreparedFile:
            whole = prepare_bytes(text.encode("utf-8"), name, self.limits)
            cut = truncate_to_tokens(text, max(1, room), self.counter)
            if cut == text:
                return whole
            return replace(whole, ref=replace(whole.ref, cut_to=max(1, room)),
                           text=fenced_text(whole.ref.name, cut))

        return await asyncio.to_thread(work)

    async def tokens(self, prepared: PreparedFile, provider: Provider = "openai") -> int:
        return await asyncio.to_thread(prepared.tokens, self.counter, provider)

    async def save(self, files: Sequence[PreparedFile]) -> None:
        """Store the files' bytes (once per hash) before anything names them."""
        total = sum(f.ref.size for f in files)
        if total > self.limits.max_message_bytes:
            raise AttachmentError(
                f"these files come to {human_size(total)}; one message can carry at most "
                f"{human_size(self.limits.max_message_bytes)}")
        now = self.clock.now()

        def work(repo: Any) -> None:
            with repo.transaction():
                for f in files:
                    repo.put_attachment(f.ref.sha256, f.ref.media_type, f.data, now)

        await self.store.run(work)

    async def read(self, sha256: str) -> bytes | None:
        """The stored bytes (to show full size, or save back to disk)."""
        return await self.store.run(lambda r: r.attachment_bytes(sha256))

    def refs(self, files: Sequence[PreparedFile]) -> tuple[AttachmentRef, ...]:
        """The references a message's node keeps, each with the tokens it is budgeted at (an
        image at the dearer of the two providers' prices)."""
        out = []
        for f in files:
            if f.kind == "image" or f.page_images:
                tokens = max(f.tokens(self.counter, "openai"), f.tokens(self.counter, "anthropic"))
            else:
                tokens = f.tokens(self.counter)
            out.append(replace(f.ref, tokens=tokens, page_images=f.page_images))
        return tuple(out)

    async def payloads(
        self, refs: Sequence[AttachmentRef], provider: Provider
    ) -> dict[str, AttachmentPayload]:
        """What the model receives for each attachment a request carries, by hash; built
        once per (hash, provider) and reused, so every request carries the same bytes."""
        out: dict[str, AttachmentPayload] = {}
        missing: dict[str, AttachmentRef] = {}
        for ref in refs:
            key = (ref.sha256, provider, ref.page_images, ref.cut_to)
            hit = self._payloads.get(key)
            if hit is not None:
                self._payloads.move_to_end(key)
                out[ref.sha256] = hit
            elif ref.sha256 not in out:
                missing.setdefault(ref.sha256, ref)
        if not missing:
            return out
        shas = list(missing)
        blobs = await self.store.run(lambda r: {s: r.attachment_bytes(s) for s in shas})
        for sha, ref in missing.items():
            payload = await asyncio.to_thread(self._build, ref, blobs.get(sha), provider)
            self._payloads[(sha, provider, ref.page_images, ref.cut_to)] = payload
            out[sha] = payload
            while len(self._payloads) > self._cache_size:
                self._payloads.popitem(last=False)
        return out

    def _build(self, ref: AttachmentRef, data: bytes | None,
               provider: Provider) -> AttachmentPayload:
        name, sha, media = ref.name, ref.sha256, ref.media_type
        if data is None:
            text = f"[attachment {name}: its bytes are not in this store]"
            return AttachmentPayload(sha, ({"type": "text", "text": text},),
                                     self.counter.count(text))
        try:
            return self._blocks(ref, data, provider)
        except AttachmentError as exc:  # stored bytes no longer decode: say so, send the rest
            text = f"[attachment {name} ({media}) could not be read: {exc}]"
            return AttachmentPayload(sha, ({"type": "text", "text": text},),
                                     self.counter.count(text))

    def _blocks(self, ref: AttachmentRef, data: bytes, provider: Provider) -> AttachmentPayload:
        name, sha, media = ref.name, ref.sha256, ref.media_type
        if media in IMAGE_TYPES:
            sent_type, sent, (w, h) = _image_for_provider(data, name, media, provider)
            label = f"Image: {name}"
            return AttachmentPayload(
                sha,
                ({"type": "text", "text": label},
                 {"type": "image_url", "image_url": {"url": data_url(sent_type, sent)}}),
                text_tokens=self.counter.count(label),
                image_tokens=image_tokens(w, h, provider),
            )
        if media == PDF_TYPE:
            text = pdf_text(name, pdf_pages_text(data, name, self.limits.max_pdf_pages))
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
            cost = 0
            if ref.page_images:
                for kind, png, (w, h) in pdf_page_images(data, name, provider):
                    cost += image_tokens(w, h, provider)
                    blocks.append({"type": "image_url",
                                   "image_url": {"url": data_url(kind, png)}})
            return AttachmentPayload(sha, tuple(blocks), self.counter.count(text), cost)
        decoded = decode_text(data) or ""
        if ref.cut_to:
            decoded = truncate_to_tokens(decoded, ref.cut_to, self.counter)
        text = fenced_text(name, decoded)
        return AttachmentPayload(sha, ({"type": "text", "text": text},), self.counter.count(text))
