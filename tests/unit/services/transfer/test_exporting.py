"""Exports of one chat (HEAD's branch or every branch) and of every chat, as Markdown and as
Treechat JSON that imports back, on a real DuckDB file."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from treechat.core.reply import REASONING_KEY
from treechat.services.transfer.exporting import (
    export_session,
    export_sessions,
    suggested_filename,
    write_export,
)
from treechat.services.transfer.importing import import_file
from treechat.services.turns.sessions import SessionService
from treechat.store.database import Store


@pytest_asyncio.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = Store.open(tmp_path / "s.duckdb")
    yield opened
    opened.close()


async def branched(store: Store, title: str = "Forked chat") -> tuple[str, list[str]]:
    """A chat with two replies to its question; HEAD on the second, which has reasoning."""
    sessions = SessionService(store)
    chat = await sessions.create(title)
    question = await sessions.append_message(chat.id, "Which one?")
    first = await sessions.append_message(chat.id, "The first answer", role="assistant")
    second = await sessions.append_message(
        chat.id, "The second answer", role="assistant", parent=question.id, use_parent=True,
        metadata={REASONING_KEY: "Weighing both options."},
    )
    return chat.id, [question.id, first.id, second.id]


@pytest.mark.asyncio
async def test_json_of_this_branch_or_all_branches(store: Store) -> None:
    chat, (question, first, second) = await branched(store)
    everything = json.loads(await export_session(store, chat, "json"))
    assert {n["id"] for n in everything["nodes"]} == {question, first, second}
    branch = json.loads(await export_session(store, chat, "json", scope="branch"))
    assert [n["id"] for n in branch["nodes"]] == [question, second]
    (reply,) = [n for n in branch["nodes"] if n["id"] == second]
    assert reply["output"] == "The second answer"
    assert reply["metadata"][REASONING_KEY] == "Weighing both options."


@pytest.mark.asyncio
async def test_markdown_of_this_branch_or_all_branches_shows_thinking_apart(store: Store) -> None:
    chat, _ = await branched(store)
    branch = await export_session(store, chat, "md")
    assert "The second answer" in branch and "The first answer" not in branch
    assert "> Weighing both options." in branch
    assert branch.index("Weighing both options.") < branch.index("The second answer")
    every = await export_session(store, chat, "md", scope="all")
    assert "The first answer" in every and "The second answer" in every
    with pytest.raises(ValueError):
        await export_session(store, chat, "pdf")
    with pytest.raises(LookupError):
        await export_session(store, "missing", "md")


@pytest.mark.asyncio
async def test_every_chat_exports_as_one_file_that_imports_back(
    store: Store, tmp_path: Path
) -> None:
    await branched(store, "One")
    await branched(store, "Two")
    markdown = await export_sessions(store, "md")
    assert markdown.index("# Two") < markdown.index("# One")  # newest first
    path = await write_export(tmp_path / suggested_filename("All: my chats?", "json"),
                              await export_sessions(store, "json"))
    assert path.name == "All my chats.json" and not list(tmp_path.glob("*.part"))
    with Store.open(tmp_path / "other.duckdb") as other:
        summary = await import_file(other, path)
        assert summary.sessions == 2 and summary.nodes == 6
        titles = {s.title for s in other.call(lambda r: r.list_sessions())}
        assert titles == {"One", "Two"}


async def _chat_with_files(store: Store) -> tuple[str, dict[str, bytes]]:
    from tests.support.attachment_files import png

    from treechat.core.attachments import with_attachments
    from treechat.providers.tokenizer import CachedTiktokenCounter
    from treechat.services.attachments import AttachmentService, prepare_bytes

    files = [prepare_bytes(png(30, 20), "../../chart.png"),
             prepare_bytes(b"a,b\n1,2\n", "data.csv")]
    service = AttachmentService(store, CachedTiktokenCounter())
    await service.save(files)
    sessions = SessionService(store)
    session = await sessions.create(title="With files")
    meta = with_attachments({}, service.refs(files))
    await sessions.append_message(session.id, "see these", metadata=meta)
    await sessions.append_message(session.id, "and again", metadata=meta)
    return session.id, {f.ref.name: f.data for f in files}


@pytest.mark.asyncio
async def test_json_carries_attachments_and_an_import_elsewhere_rebuilds_them(
    store: Store, tmp_path: Path
) -> None:
    session_id, files = await _chat_with_files(store)
    text = await export_session(store, session_id, fmt="json")
    document = json.loads(text)
    assert len(document["attachments"]) == 2
    path = tmp_path / "chat.json"
    path.write_text(text, encoding="utf-8")
    other = Store.open(tmp_path / "other.duckdb")
    try:
        summary = await import_file(other, path)
        assert summary.sessions == 1
        (imported,) = other.call(lambda r: r.list_sessions())
        nodes = other.call(lambda r: r.session_nodes(imported.id))
        for entry in nodes[0].metadata["attachments"]:
            data = other.call(lambda r, sha=entry["sha256"]: r.attachment_bytes(sha))
            assert data == files[entry["name"]]
    finally:
        other.close()
    # a file whose bytes do not match their hash is reported, not stored
    sha = next(iter(document["attachments"]))
    document["attachments"][sha]["data"] = "aGVsbG8="
    path.write_text(json.dumps(document), encoding="utf-8")
    third = Store.open(tmp_path / "third.duckdb")
    try:
        summary = await import_file(third, path)
        assert any("does not match its hash" in s.reason for s in summary.skipped)
        assert third.call(lambda r: r.attachment_bytes(sha)) is None
    finally:
        third.close()


@pytest.mark.asyncio
async def test_markdown_export_writes_the_files_beside_it_under_safe_names(
    store: Store, tmp_path: Path
) -> None:
    from treechat.services.transfer.exporting import attachments_folder, write_markdown_attachments

    session_id, files = await _chat_with_files(store)
    md = tmp_path / "out" / "chat.md"
    md.parent.mkdir()
    written = await write_markdown_attachments(store, md, [session_id])
    folder = attachments_folder(md)
    assert sorted(p.name for p in written) == ["chart.png", "data.csv"]
    assert all(p.parent == folder for p in written)
    assert (folder / "chart.png").read_bytes() == files["chart.png"]
