"""recall finds the files of messages the request no longer shows, by name and by content, on
a real store and its full-text index, and gives back their text (an image: what it is and
how to show it again)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.attachment_files import pdf, png
from tests.support.context_graph import ChainBuilder

from treechat.core.attachments import AttachmentRef
from treechat.core.dag import Change
from treechat.core.model import Session
from treechat.providers.tokenizer import counter_for
from treechat.services.context import ContextEngine
from treechat.services.recall_files import hidden_files, recall_text
from treechat.store.database import Store
from treechat.store.fulltext import index_for
from treechat.store.repository import Repository

COUNTER = counter_for("gpt-4o")
WINDOW = 8_192
NOTES = b"Packing list\nthe vault code is tangerine 4417\nbring the blue folder\n"
REPORT = pdf(["Quarterly revenue rose by a tenth", "The warehouse in Tromso closes in May"])
DIAGRAM = png(120, 80)


def ref(name: str, media: str, data: bytes) -> AttachmentRef:
    return AttachmentRef(hashlib.sha256(data).hexdigest(), name, media, len(data), tokens=50)


FILES = (ref("notes.txt", "text/plain", NOTES), ref("report.pdf", "application/pdf", REPORT),
         ref("diagram.png", "image/png", DIAGRAM))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "engine.duckdb")
    s.call(lambda r: r.create_session(Session("s", "t", None, "m", 0.0)))
    yield s
    s.close()


def test_what_recall_gives_back_for_each_kind_of_file() -> None:
    notes, report, diagram = FILES
    assert recall_text(notes, NOTES) == (
        "File: notes.txt\n```\n" + NOTES.decode() + "```")
    text = recall_text(report, REPORT)
    assert "--- page 1 of 2 ---\nQuarterly revenue rose by a tenth" in text
    assert "--- page 2 of 2 ---\nThe warehouse in Tromso closes in May" in text
    image = recall_text(diagram, DIAGRAM)
    assert image.startswith("Image: diagram.png (image/png, 120x80 pixels,")
    assert "attach it again" in image
    assert "not in this store" in recall_text(notes, None)
    assert "could not be read" in recall_text(diagram, DIAGRAM[:30])


def long_chat_with_files(store: Store, b: ChainBuilder) -> str:
    """An anchor turn, then a message carrying three files, then enough turns that it is no
    longer shown in full. Returns the id of the message with the files."""
    def append(nodes: list) -> None:  # type: ignore[type-arg]
        store.call(lambda r: r.apply_change(b.session_id, Change(tuple(nodes), b.head), b.now))

    def put(repo: Repository) -> None:
        for data, r in zip((NOTES, REPORT, DIAGRAM), FILES, strict=True):
            repo.put_attachment(r.sha256, r.media_type, data, 1.0)

    store.call(put)
    append(b.turn("Help me get ready for the trip.", "Gladly."))
    carrier = b.user("Here are my files for the trip.",
                     attachments=[f.as_meta() for f in FILES])
    b.assistant("Thanks, I have read them.")
    append(b.nodes[-2:])
    for i in range(40):
        append(b.turn(f"Turn {i}: the code is {7000 + i}. " + "detail " * 60, "ok " * 30))
    return carrier.id


def test_recall_finds_an_aged_attachment_by_its_text_and_by_its_name(store: Store) -> None:
    async def run() -> None:
        b = ChainBuilder()
        carrier = long_chat_with_files(store, b)
        engine = ContextEngine(store, COUNTER)
        prep = await engine.prepare("s", model="openai/gpt-4o", window=WINDOW, tools=[],
                                    now=b.now + 1)
        sent = "\n".join(str(m.get("content")) for m in prep.messages)
        assert "tangerine" not in sent and "Tromso" not in sent  # no longer in the request

        code = await engine.recall("s", "what is the vault code?", now=b.now + 2)
        first = code.hits[0]
        assert (first.node_id, first.file_name) == (carrier, "notes.txt")
        assert "the vault code is tangerine 4417" in first.text
        assert f"node {carrier} (user, {first.state}, its attachment notes.txt" in code.text()

        page = await engine.recall("s", "warehouse Tromso", now=b.now + 2, limit=1)
        assert page.hits[0].file_name == "report.pdf"
        assert "The warehouse in Tromso closes in May" in page.hits[0].text

        image = await engine.recall("s", "diagram.png", now=b.now + 2, limit=1)
        assert image.hits[0].file_name == "diagram.png"
        assert "Image: diagram.png (image/png, 120x80 pixels" in image.hits[0].text

        # each file's text was extracted once, into the index beside the store
        index = index_for(store)
        held = store.call(lambda r: index.files_indexed(f.sha256 for f in FILES))
        assert held == {f.sha256 for f in FILES}

    asyncio.run(run())


def test_a_file_still_shown_is_not_searched(store: Store) -> None:
    async def run() -> None:
        b = ChainBuilder()
        store.call(lambda r: r.put_attachment(FILES[0].sha256, "text/plain", NOTES, 1.0))
        b.user("Here are my notes.", attachments=[FILES[0].as_meta()])
        b.assistant("Read them.")
        store.call(lambda r: r.apply_change("s", Change(tuple(b.nodes), b.head), b.now))
        engine = ContextEngine(store, COUNTER)
        await engine.prepare("s", model="openai/gpt-4o", window=WINDOW, tools=[],
                             now=b.now + 1)
        found = await engine.recall("s", "vault code", now=b.now + 2)
        assert found.hits == () and "still in the request" in found.text()
        seq = b.nodes[0].seq
        assert store.call(lambda r: hidden_files(r, [seq])) == {seq: (FILES[0],)}

    asyncio.run(run())
