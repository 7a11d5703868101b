"""Files to attach, made in the test: images by Pillow, PDFs written by hand (one with text
on its pages, one with an encryption dictionary that no empty password opens)."""

from __future__ import annotations

import io

from PIL import Image


def png(width: int = 64, height: int = 48, color: tuple[int, int, int] = (200, 30, 60)) -> bytes:
    im = Image.new("RGB", (width, height), color)
    for x in range(0, width, 7):  # some detail, so a downscale has work to do
        im.putpixel((x, (x * 3) % height), (10, 220, 40))
    out = io.BytesIO()
    im.save(out, "PNG")
    return out.getvalue()


def jpeg(width: int, height: int) -> bytes:
    im = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    out = io.BytesIO()
    im.save(out, "JPEG", quality=90)
    return out.getvalue()


def gif_two_frames() -> bytes:
    first = Image.new("P", (20, 10), 1)
    second = Image.new("P", (20, 10), 2)
    out = io.BytesIO()
    first.save(out, "GIF", save_all=True, append_images=[second], duration=100, loop=0)
    return out.getvalue()


def _pdf(objects: list[bytes], trailer_extra: bytes = b"") -> bytes:
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += (b"trailer\n<< /Size %d /Root 1 0 R " % (len(objects) + 1)) + trailer_extra
    out += b">>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def pdf(pages: list[str]) -> bytes:
    """A PDF whose pages say `pages` in Helvetica."""
    n = len(pages)
    kids = b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(n))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % n,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for text in pages:
        stream = b"BT /F1 18 Tf 40 700 Td (" + text.encode("latin-1") + b") Tj ET"
        page_no = len(objects) + 1
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                       b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>"
                       % (page_no + 1))
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream
                       + b"\nendstream")
    return _pdf(objects)


def encrypted_pdf() -> bytes:
    """A PDF under the standard security handler whose user password is not empty."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
        b"<< /Filter /Standard /V 1 /R 2 /O <" + b"ab" * 32 + b"> /U <" + b"cd" * 32
        + b"> /P -4 >>",
    ]
    return _pdf(objects, b"/Encrypt 4 0 R /ID [<" + b"01" * 16 + b"> <" + b"01" * 16 + b">] ")
