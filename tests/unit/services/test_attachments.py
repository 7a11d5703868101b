"""Preparing attachments: the caps checked from a file's size before it is read, the kind
from the bytes, images decoded (a GIF's first frame) and downscaled the same way every time,
a PDF's page text, and clear refusals for what cannot be sent."""

from __future__ import annotations

import base64
import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from PIL import Image
from tests.support.attachment_files import encrypted_pdf, gif_two_frames, jpeg, pdf, png
from tests.support.chat import Events
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.core.attachments import AttachmentError
from treechat.services.attachments import (
    AttachmentLimits,
    image_for_provider,
    linked_elsewhere,
    prepare_bytes,
    prepare_files,
    prepare_path,
)
from treechat.services.bootstrap import Services, build_services
from treechat.services.models.catalog import ModelChoice
from treechat.services.turns.events import TurnFailed, TurnFinished


def test_a_2_gb_file_is_refused_from_its_size_without_being_read(tmp_path: Path) -> None:
    huge = tmp_path / "huge.bin"
    with huge.open("wb") as f:  # sparse: takes no disk and no memory
        f.truncate(2 * 1024**3)
    with pytest.raises(AttachmentError, match=r"huge\.bin is 2\.0 GB; a file can be at most"):
        prepare_path(huge)


def test_an_image_that_would_decode_past_the_memory_cap_is_refused_before_decoding(
    tmp_path: Path,
) -> None:
    """9,400 x 9,400 RGBA zeros: a few hundred KB of PNG, 337 MB decoded."""
    from tests.support.hostile_probes import blank_png
    from tests.support.peak_memory import peak_rss_mb

    path = blank_png(tmp_path / "blank.png", 9400, 9400)
    before = peak_rss_mb()
    with pytest.raises(AttachmentError, match=r"blank\.png is 9400x9400 pixels: decoded it "
                                              r"would take .*an image can take at most"):
        prepare_path(path)
    assert peak_rss_mb() - before < 100


def test_a_large_jpeg_is_decoded_at_a_smaller_scale_and_still_sent(tmp_path: Path) -> None:
    big = Image.new("RGB", (7000, 5000), (200, 10, 10))
    out = io.BytesIO()
    big.save(out, "JPEG", quality=70)
    del big
    prepared = prepare_bytes(out.getvalue(), "photo.jpg")
    assert (prepared.width, prepared.height) == (7000, 5000)
    kind, sent = image_for_provider(out.getvalue(), "photo.jpg", "image/jpeg", "openai")
    assert kind == "image/jpeg" and Image.open(io.BytesIO(sent)).width <= 2048


def test_a_text_file_larger_than_any_window_is_refused(tmp_path: Path) -> None:
    text = tmp_path / "dump.txt"
    text.write_bytes(b"a line of text\n" * (9 * 1024 * 1024 // 15))
    with pytest.raises(AttachmentError, match=r"dump\.txt is 9\.0 MB of text; a text file "
                                              r"can be at most 8\.0 MB"):
        prepare_path(text)


def test_a_file_given_by_a_link_is_named_with_where_it_lives(tmp_path: Path) -> None:
    real = tmp_path / "elsewhere" / "secret.txt"
    real.parent.mkdir()
    real.write_text("private")
    link = tmp_path / "notes.txt"
    link.symlink_to(real)
    plain = tmp_path / "plain.txt"
    plain.write_text("hello")
    assert linked_elsewhere([link, plain]) == (f"notes.txt is a link: the file sent is {real}",)


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


# --- through a real turn: litellm to the loopback server, both wire formats ----------------

VISION_OPENAI = "openai/gpt-4o"  # litellm: supports vision
VISION_ANTHROPIC = "anthropic/claude-sonnet-4-5"
BLIND = "openai/loopback-model"  # litellm does not know it: no vision


@pytest_asyncio.fixture
async def services(tmp_path: Path, loopback: LoopbackProvider) -> AsyncIterator[Services]:
    choices = (
        ModelChoice(VISION_OPENAI, "Seer", "openai", api_base=loopback.openai_base),
        ModelChoice(VISION_ANTHROPIC, "Claude", "anthropic", api_base=loopback.anthropic_base),
        ModelChoice(BLIND, "Blind", "openai", api_base=loopback.openai_base),
    )
    built = build_services(tmp_path / "data", bundled=False, detect_local_servers=False,
                           extra_models=choices)
    built.models.default_model = VISION_OPENAI
    yield built
    await built.close()
    built.close_store()


def files_in(tmp_path: Path) -> dict[str, Path]:
    out = {"photo.png": png(900, 600), "notes.py": b"def f():\n    return 42\n",
           "report.pdf": pdf(["Quarterly figures", "Outlook"])}
    paths = {}
    for name, data in out.items():
        p = tmp_path / name
        p.write_bytes(data)
        paths[name] = p
    return paths


def last_user(body: dict[str, Any]) -> list[dict[str, Any]]:
    (message,) = [m for m in body["messages"] if m["role"] == "user"][-1:]
    content = message["content"]
    assert isinstance(content, list)
    return content


@pytest.mark.asyncio
async def test_openai_wire_gets_a_data_url_image_fenced_text_and_pdf_page_text(
    services: Services, loopback: LoopbackProvider, tmp_path: Path
) -> None:
    paths = files_in(tmp_path)
    loopback.queue(Reply(text="Seen."))
    session = await services.chat.sessions.create()
    events = Events()
    await services.chat.send(session.id, "What is in these?", files=list(paths.values()),
                             on_event=events)
    assert not events.of(TurnFailed)
    blocks = last_user(loopback.requests[-1].body)
    texts = [b["text"] for b in blocks if b["type"] == "text"]
    assert texts[0] == "What is in these?"
    assert "File: notes.py\n```\ndef f():\n    return 42\n```" in texts
    assert any("--- page 1 of 2 ---\nQuarterly figures" in t for t in texts)
    (image,) = [b for b in blocks if b["type"] == "image_url"]
    url = image["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    sent = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert sent.size == (900, 600)  # within OpenAI's limits: sent as it is
    # the node names its files by hash; the bytes are in the store once each
    view = await services.chat.sessions.view(session.id)
    names = [a["name"] for a in view.path[0].metadata["attachments"]]
    assert names == ["photo.png", "notes.py", "report.pdf"]
    assert services.store.call(lambda r: r.attachment_count()) == 3
    # occupancy counts them under attachments
    (finished,) = events.of(TurnFinished)
    assert dict(finished.occupancy.breakdown)["attachments"] > 0
    occupancy = await services.chat.occupancy(session.id, model=VISION_OPENAI)
    parts = dict(occupancy.breakdown)
    # the loopback server measures text only, so the measured total is apportioned; the
    # local estimate carries the image at OpenAI's price (900x600: 2x2 tiles)
    assert occupancy.estimated >= 85 + 170 * 4
    assert parts["attachments"] > parts["messages"]


@pytest.mark.asyncio
async def test_anthropic_wire_gets_a_base64_image_source_downscaled_to_its_limit(
    services: Services, loopback: LoopbackProvider, tmp_path: Path
) -> None:
    big = tmp_path / "wide.jpg"
    big.write_bytes(jpeg(3200, 1600))
    loopback.queue(Reply(text="A gradient."))
    session = await services.chat.sessions.create()
    events = Events()
    await services.chat.send(session.id, "Describe", model=VISION_ANTHROPIC, files=[big],
                             on_event=events)
    assert not events.of(TurnFailed)
    body = loopback.requests[-1].body
    assert loopback.requests[-1].wire == "anthropic"
    blocks = last_user(body)
    (image,) = [b for b in blocks if b["type"] == "image"]
    assert image["source"]["type"] == "base64"
    assert image["source"]["media_type"] == "image/jpeg"
    w, h = Image.open(io.BytesIO(base64.b64decode(image["source"]["data"]))).size
    assert max(w, h) <= 1568 and w * h <= 1_150_000


@pytest.mark.asyncio
async def test_the_same_image_twice_in_a_branch_is_stored_once_and_identical_on_the_wire(
    services: Services, loopback: LoopbackProvider, tmp_path: Path
) -> None:
    photo = tmp_path / "big.png"
    photo.write_bytes(png(2400, 1800))  # downscaled: re-encoded, so this tests determinism
    loopback.queue(Reply(text="One."), Reply(text="Two."))
    session = await services.chat.sessions.create()
    await services.chat.send(session.id, "First look", files=[photo])
    await services.chat.send(session.id, "Again", files=[photo])
    first, second = loopback.requests[-2].body, loopback.requests[-1].body

    def images(body: dict[str, Any]) -> list[str]:
        return [b["image_url"]["url"] for m in body["messages"] if isinstance(m["content"], list)
                for b in m["content"] if b.get("type") == "image_url"]

    assert len(images(first)) == 1 and len(images(second)) == 2
    assert images(second) == [images(first)[0]] * 2
    assert services.store.call(lambda r: r.attachment_count()) == 1


@pytest.mark.asyncio
async def test_a_model_that_cannot_see_says_so_and_the_message_is_kept(
    services: Services, loopback: LoopbackProvider, tmp_path: Path
) -> None:
    photo = tmp_path / "cat.png"
    photo.write_bytes(png())
    session = await services.chat.sessions.create()
    events = Events()
    before = len(loopback.requests)
    await services.chat.send(session.id, "What is this?", model=BLIND, files=[photo],
                             on_event=events)
    (failed,) = events.of(TurnFailed)
    assert failed.error.kind == "unavailable"
    assert "cannot see images" in failed.error.message and "cat.png" in failed.error.message
    assert len(loopback.requests) == before  # nothing sent with the image silently dropped
    view = await services.chat.sessions.view(session.id)
    assert view.path[-1].metadata["attachments"][0]["name"] == "cat.png"
    # a text file is fine on the same model
    notes = tmp_path / "n.txt"
    notes.write_text("plain notes")
    loopback.queue(Reply(text="ok"))
    other = await services.chat.sessions.create()
    await services.chat.send(other.id, "Read", model=BLIND, files=[notes])
    assert "File: n.txt" in str(loopback.requests[-1].body["messages"][-1])


@pytest.mark.asyncio
async def test_a_file_that_cannot_be_sent_is_refused_before_anything_is_written(
    services: Services, loopback: LoopbackProvider, tmp_path: Path
) -> None:
    blob = tmp_path / "tool.exe"
    blob.write_bytes(b"MZ\x90\x00" + bytes(range(256)) * 8)
    session = await services.chat.sessions.create()
    with pytest.raises(AttachmentError, match=r"tool\.exe is a binary file"):
        await services.chat.send(session.id, "Run this", files=[blob])
    view = await services.chat.sessions.view(session.id)
    assert view.path == () or list(view.path) == []
    assert services.store.call(lambda r: r.attachment_count()) == 0
    assert loopback.requests == []


@pytest.mark.asyncio
async def test_a_pdf_sends_its_page_images_too_when_asked(
    services: Services, loopback: LoopbackProvider, tmp_path: Path
) -> None:
    doc = tmp_path / "slides.pdf"
    doc.write_bytes(pdf(["Slide one", "Slide two"]))
    prepared = await services.chat.attachments.prepare([doc], page_images=True)
    loopback.queue(Reply(text="Two slides."))
    session = await services.chat.sessions.create()
    await services.chat.send(session.id, "Summarize", files=prepared)
    blocks = last_user(loopback.requests[-1].body)
    assert any("--- page 2 of 2 ---\nSlide two" in b.get("text", "") for b in blocks)
    pages = [b for b in blocks if b["type"] == "image_url"]
    assert len(pages) == 2
    assert all(b["image_url"]["url"].startswith("data:image/png;base64,") for b in pages)
