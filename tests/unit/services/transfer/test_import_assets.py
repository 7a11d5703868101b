"""The files an export carries become real attachments when it is imported: zip members
(ChatGPT's image pointers and uploads, Grok's assets), text Claude extracted from a file, bytes
AI Studio holds inline; checked, stored once by hash, named by the message, sent to the model
and exported again. What is missing or unreadable stays a named placeholder, with the reason."""

from __future__ import annotations

import base64
import hashlib
import json
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from tests.support.attachment_files import pdf, png
from tests.support.chat import Events
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.core.attachments import node_attachments
from treechat.core.model import Node
from treechat.services.attachments import AttachmentLimits
from treechat.services.bootstrap import Services, build_services
from treechat.services.models.catalog import ModelChoice
from treechat.services.transfer.exporting import export_session, write_markdown_attachments
from treechat.services.transfer.importing import import_file
from treechat.services.turns.events import TurnFailed
from treechat.store.database import Store

DATA = Path(__file__).resolve().parents[3] / "data" / "imports"
CHATGPT = DATA / "chatgpt-reasoning-tools.json"
PLOT = png(80, 60, (20, 90, 200))


@pytest_asyncio.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    s = Store.open(tmp_path / "a.duckdb")
    yield s
    s.close()


def chatgpt_zip(path: Path, members: dict[str, bytes], conversations: Any = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        if conversations is None:
            zf.write(CHATGPT, "conversations.json")
        else:
            zf.writestr("conversations.json", json.dumps(conversations))
        zf.writestr("chat.html", "<html></html>")
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def by_source(store: Store) -> dict[str, Node]:
    nodes = store.call(lambda r: [n for s in r.list_sessions() for n in r.session_nodes(s.id)])
    return {n.metadata["imported_from"]["id"]: n for n in nodes}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.asyncio
async def test_zip_images_and_uploads_become_attachments_stored_once(
    store: Store, tmp_path: Path
) -> None:
    report = pdf(["Quarterly revenue rose by a tenth", "Outlook: steady"])
    archive = chatgpt_zip(tmp_path / "export.zip", {
        "file-PLOT123-sine.png": PLOT, "file-REPORT-report.pdf": report})
    summary = await import_file(store, archive)
    assert (summary.attachments, summary.placeholders) == (2, 0)
    assert "Images and files imported as attachments: 2." in summary.notes
    nodes = by_source(store)
    (image,) = node_attachments(nodes["u1"].metadata)
    assert (image.sha256, image.name, image.media_type, image.size) == (
        sha(PLOT), "sine.png", "image/png", len(PLOT))
    assert image.tokens > 0
    entry = nodes["u1"].metadata["attachments"][0]
    assert (entry["width"], entry["height"], entry["zip_member"]) == (80, 60,
                                                                     "file-PLOT123-sine.png")
    assert "placeholder" not in entry
    # the placeholder line is gone from the text: the window shows the image itself
    assert "[image:" not in nodes["u1"].text
    assert nodes["u1"].text == "What does this plot show? Then check tomorrow's weather in Oslo."
    (document,) = node_attachments(nodes["q1"].metadata)
    assert (document.name, document.media_type) == ("report.pdf", "application/pdf")
    assert store.call(lambda r: r.attachment_bytes(sha(PLOT))) == PLOT
    assert store.call(lambda r: r.attachment_bytes(sha(report))) == report
    assert store.call(lambda r: r.attachment_count()) == 2


@pytest.mark.asyncio
async def test_a_repeated_import_and_a_second_conversation_store_the_image_once(
    store: Store, tmp_path: Path
) -> None:
    conversations = json.loads(CHATGPT.read_text(encoding="utf-8"))
    twin = json.loads(json.dumps(conversations[0]))
    twin["conversation_id"] = "chatgpt-reason-twin"
    twin["title"] = "The same plot again"
    archive = chatgpt_zip(tmp_path / "export.zip", {"file-PLOT123-sine.png": PLOT},
                          [*conversations, twin])
    first = await import_file(store, archive)
    assert (first.sessions, first.attachments) == (3, 2)
    # the upload the zip does not carry stays a placeholder, counted as one
    assert first.placeholders == 1
    shas = {r.sha256 for n in by_source(store).values() for r in node_attachments(n.metadata)}
    assert shas == {sha(PLOT)}
    assert store.call(lambda r: r.attachment_count()) == 1
    before = store.call(lambda r: r.node_count())
    again = await import_file(store, archive)
    assert (again.nodes, again.attachments, again.placeholders, again.notes) == (0, 0, 0, ())
    assert store.call(lambda r: (r.node_count(), r.attachment_count())) == (before, 1)


@pytest.mark.asyncio
async def test_a_corrupt_image_and_a_binary_stay_placeholders_with_the_reason(
    store: Store, tmp_path: Path
) -> None:
    archive = chatgpt_zip(tmp_path / "export.zip", {
        "file-PLOT123-sine.png": PLOT[:40],  # cut short
        "file-REPORT-report.pdf": bytes(range(256)) * 8})  # not a PDF, not text
    summary = await import_file(store, archive)
    assert (summary.attachments, summary.placeholders) == (0, 2)
    reasons = {s.source_id: s.reason for s in summary.skipped}
    assert "sine.png stays a placeholder: sine.png is not a readable image" in reasons["u1"]
    assert "report.pdf stays a placeholder: report.pdf is a binary file" in reasons["q1"]
    nodes = by_source(store)
    (image,) = nodes["u1"].metadata["attachments"]
    assert image["placeholder"] is True and "not a readable image" in image["unreadable"]
    assert node_attachments(nodes["u1"].metadata) == ()
    assert "[image:" not in nodes["u1"].text  # its card names it, not the text
    assert store.call(lambda r: r.attachment_count()) == 0


@pytest.mark.asyncio
async def test_a_member_past_the_cap_is_never_read_whole(store: Store, tmp_path: Path) -> None:
    big = png(400, 400)
    archive = chatgpt_zip(tmp_path / "export.zip", {"file-PLOT123-sine.png": big})
    summary = await import_file(store, archive,
                                attachment_limits=AttachmentLimits(max_file_bytes=len(big) - 1))
    assert (summary.attachments, summary.placeholders) == (0, 2)
    (skip,) = [s for s in summary.skipped if s.source_id == "u1"]
    assert "sine.png stays a placeholder: it is larger than" in skip.reason
    assert store.call(lambda r: r.attachment_count()) == 0


@pytest.mark.asyncio
async def test_a_json_file_keeps_placeholders_and_says_the_zip_would_bring_them(
    store: Store,
) -> None:
    summary = await import_file(store, CHATGPT)
    assert (summary.attachments, summary.placeholders) == (0, 2)
    assert any("importing the export's zip brings in those it holds" in n for n in summary.notes)
    assert not summary.skipped or all("placeholder" not in s.reason for s in summary.skipped)


@pytest.mark.asyncio
async def test_a_grok_asset_in_the_zip_is_attached_under_a_name_with_its_kind(
    store: Store, tmp_path: Path
) -> None:
    archive = tmp_path / "grok.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(DATA / "grok-prod-grok-backend.json", "ttl/30d/export/prod-grok-backend.json")
        zf.writestr("ttl/30d/export/prod-mc-asset-server/asset-uuid-1/content", PLOT)
    summary = await import_file(store, archive)
    assert summary.attachments == 1
    (node,) = [n for n in by_source(store).values() if node_attachments(n.metadata)]
    (ref,) = node_attachments(node.metadata)
    assert (ref.name, ref.sha256) == ("asset-uuid-1.png", sha(PLOT))


@pytest.mark.asyncio
async def test_text_claude_extracted_from_a_file_becomes_a_text_attachment(
    store: Store,
) -> None:
    summary = await import_file(store, DATA / "claude-tools-thinking.json")
    nodes = by_source(store)
    (notes,) = node_attachments(nodes["m1-user"].metadata)
    assert (notes.name, notes.media_type) == ("trip-notes.txt", "text/plain")
    assert store.call(lambda r: r.attachment_bytes(notes.sha256)) == b"Arrive Tuesday, 3 days."
    # the image in `files` has no bytes in the export: a placeholder still
    kept = [a for a in nodes["m1-user"].metadata["attachments"] if a.get("placeholder")]
    assert [a["name"] for a in kept] == ["map.png"]
    assert (summary.attachments, summary.placeholders) == (1, 1)


@pytest.mark.asyncio
async def test_an_ai_studio_inline_image_becomes_an_attachment(
    store: Store, tmp_path: Path
) -> None:
    document = json.loads((DATA / "aistudio-prompt.json").read_text(encoding="utf-8"))
    chunks = document["chunkedPrompt"]["chunks"]
    chunks.insert(0, {"role": "user", "inlineImage": {
        "mimeType": "image/png", "data": base64.b64encode(PLOT).decode()}})
    path = tmp_path / "prompt.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    summary = await import_file(store, path)
    assert summary.attachments == 1
    nodes = store.call(lambda r: r.session_nodes(summary.session_ids[0]))
    refs = [r for n in nodes for r in node_attachments(n.metadata)]
    assert [(r.sha256, r.name) for r in refs] == [(sha(PLOT), "inlineImage.png")]
    # the base64 is in the store, not left behind in the message's metadata
    entries = [a for n in nodes for a in n.metadata.get("attachments") or ()]
    assert entries and all("data" not in a for a in entries)


@pytest.mark.asyncio
async def test_imported_attachments_round_trip_through_json_and_markdown_export(
    store: Store, tmp_path: Path
) -> None:
    archive = chatgpt_zip(tmp_path / "export.zip", {"file-PLOT123-sine.png": PLOT})
    summary = await import_file(store, archive)
    session = next(s for s in store.call(lambda r: r.list_sessions())
                   if s.title == "Plot and forecast")
    text = await export_session(store, session.id, "json")
    assert json.loads(text)["attachments"][sha(PLOT)]["size"] == len(PLOT)
    exported = tmp_path / "chat.json"
    exported.write_text(text, encoding="utf-8")
    with Store.open(tmp_path / "other.duckdb") as other:
        back = await import_file(other, exported)
        assert back.sessions == 1
        assert other.call(lambda r: r.attachment_bytes(sha(PLOT))) == PLOT
        nodes = other.call(lambda r: r.session_nodes(back.session_ids[0]))
        assert [r.name for n in nodes for r in node_attachments(n.metadata)] == ["sine.png"]
    written = await write_markdown_attachments(store, tmp_path / "chat.md", [session.id])
    assert [(p.name, p.read_bytes()) for p in written] == [("sine.png", PLOT)]
    assert summary.attachments == 1


# --- the engine sends an imported image to a model that sees -------------------------------

VISION = "openai/gpt-4o"  # litellm: supports vision


@pytest_asyncio.fixture
async def services(tmp_path: Path, loopback: LoopbackProvider) -> AsyncIterator[Services]:
    choice = ModelChoice(VISION, "Seer", "openai", api_base=loopback.openai_base)
    built = build_services(tmp_path / "data", bundled=False, detect_local_servers=False,
                           extra_models=(choice,))
    built.models.default_model = VISION
    yield built
    await built.close()
    built.close_store()


@pytest.mark.asyncio
async def test_an_imported_image_reaches_a_vision_model_on_the_wire(
    services: Services, loopback: LoopbackProvider, tmp_path: Path
) -> None:
    archive = chatgpt_zip(tmp_path / "export.zip", {"file-PLOT123-sine.png": PLOT})
    summary = await import_file(services.store, archive, counter=services.engine.counter)
    assert summary.attachments == 1
    session = next(s for s in await services.chat.sessions.list()
                   if s.title == "Plot and forecast")
    loopback.queue(Reply(text="A sine wave."))
    events = Events()
    await services.chat.send(session.id, "And the plot again?", model=VISION, on_event=events)
    assert not events.of(TurnFailed)
    body = loopback.requests[-1].body
    urls = [b["image_url"]["url"] for m in body["messages"] if isinstance(m.get("content"), list)
            for b in m["content"] if b.get("type") == "image_url"]
    assert urls == ["data:image/png;base64," + base64.b64encode(PLOT).decode()]
    assert "Image: sine.png" in json.dumps(body["messages"])
    # the code sent to python is the call's arguments, never the assistant's words as well
    (call,) = [m for m in body["messages"] if m["role"] == "assistant" and any(
        c["function"]["name"] == "python" for c in m.get("tool_calls") or ())]
    assert not call.get("content")
    assert call["tool_calls"][0]["function"]["arguments"] == (
        "import math\nprint(round(math.sin(math.pi/2), 3))")


def test_the_cli_counts_attachments_and_placeholders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from treechat import cli

    archive = chatgpt_zip(tmp_path / "export.zip", {"file-PLOT123-sine.png": PLOT})
    data_dir = str(tmp_path / "data")
    assert cli.main(["--data-dir", data_dir, "import", str(archive), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["attachments"], out["placeholders"]) == (1, 1)
    assert cli.main(["--data-dir", data_dir, "import", str(archive)]) == 0
    assert "Nothing new" in capsys.readouterr().out


@pytest.mark.asyncio
async def test_todays_sediment_pointer_and_a_generated_image_in_a_tool_message(
    store: Store, tmp_path: Path
) -> None:
    def entry(key: str, parent: str | None, role: str, content: dict[str, Any],
              **extra: Any) -> dict[str, Any]:
        message = {"id": key, "author": {"role": role, **extra}, "create_time": 1.7e9,
                   "content": content, "status": "finished_successfully", "metadata": {}}
        return {"id": key, "parent": parent, "children": [], "message": message}

    photo = png(30, 20, (0, 120, 0))
    drawn = png(40, 40, (250, 200, 0))
    mapping = {
        "u": entry("u", None, "user", {"content_type": "multimodal_text", "parts": [
            {"content_type": "image_asset_pointer", "asset_pointer": "sediment://file_0000aa11"},
            "Make this yellow."]}),
        "t": entry("t", "u", "tool", {"content_type": "multimodal_text", "parts": [
            {"content_type": "image_asset_pointer",
             "asset_pointer": "file-service://file-DRAWN9"}]}, name="dalle.text2im"),
    }
    conversation = {"title": "Colours", "conversation_id": "c-sediment", "create_time": 1.7e9,
                    "mapping": mapping, "current_node": "t"}
    archive = chatgpt_zip(tmp_path / "export.zip", {
        "file_0000aa11-7f3e-photo.png": photo,
        "dalle-generations/file-DRAWN9-5b1c.webp": drawn}, [conversation])
    summary = await import_file(store, archive)
    assert (summary.attachments, summary.placeholders) == (2, 0)
    nodes = by_source(store)
    (mine,) = node_attachments(nodes["u"].metadata)
    (made,) = node_attachments(nodes["t"].metadata)
    assert (mine.sha256, mine.name) == (sha(photo), "file_0000aa11-7f3e-photo.png")
    # named by the zip, typed by its bytes: a PNG kept under a .webp name is still a PNG
    assert (made.sha256, made.name, made.media_type) == (sha(drawn), "5b1c.webp", "image/png")
    assert nodes["u"].text == "Make this yellow."


@pytest.mark.asyncio
async def test_the_zip_hint_is_given_only_for_apps_whose_zip_carries_files(
    store: Store,
) -> None:
    claude = await import_file(store, DATA / "claude-tools-thinking.json")
    assert "Images and files kept as named placeholders: 1 (the export does not carry them)." \
        in claude.notes


@pytest.mark.asyncio
async def test_the_files_of_one_export_are_capped_together(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import random

    from PIL import Image

    from treechat.services.transfer import importing

    def noise(seed: int) -> bytes:  # incompressible: its PNG is as large as its pixels
        rng = random.Random(seed)
        im = Image.frombytes("RGB", (100, 100), bytes(rng.randrange(256) for _ in range(30000)))
        out = io.BytesIO()
        im.save(out, "PNG")
        return out.getvalue()

    first, second = noise(1), noise(2)
    archive = chatgpt_zip(tmp_path / "export.zip", {
        "file-PLOT123-sine.png": first, "file-REPORT-report.pdf": second})
    monkeypatch.setattr(importing, "MAX_EXPORT_FILES_BYTES", len(first) + 1000)
    summary = await import_file(store, archive)
    assert (summary.attachments, summary.placeholders) == (1, 1)
    (skip,) = [s for s in summary.skipped if s.source_id == "q1"]
    assert "the export's files unpack to more than" in skip.reason
    assert store.call(lambda r: r.attachment_count()) == 1
