"""Exports as the window asks for them (File → Export chat…, Export all chats): one chat as
Markdown, every chat as Treechat JSON that imports back, a file name from the title, and the
file written whole."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.clock import FakeClock

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.services.transfer.export_jobs import ChatExports
from treechat.services.transfer.importing import import_file
from treechat.store.database import Store


@pytest_asyncio.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    store = Store.open(tmp_path / "t.duckdb")
    nodes = (Node("q", 0, 1.0, "s1", "user", output="Which coast?"),
             Node("a", 0, 2.0, "s1", "assistant", output="The western one.", predecessor="q"))
    store.call(lambda r: r.create_session(Session("s1", "Trip: plans", None, "m", 1.0)))
    store.call(lambda r: r.apply_change("s1", Change(nodes, "a"), 2.0))
    yield store
    store.close()


@pytest.mark.asyncio
async def test_one_chat_as_markdown_written_under_its_title(store: Store, tmp_path: Path) -> None:
    exports = ChatExports(store, FakeClock())
    text = await exports.chat("s1", "md", "branch")
    assert "Which coast?" in text and "The western one." in text
    name = exports.filename("Trip: plans", "md")
    assert name.endswith(".md") and ":" not in name
    written = await exports.write(tmp_path / name, text)
    assert written.read_text(encoding="utf-8") == text
    assert await exports.files_beside(written, ["s1"]) == ()  # no attachments: no folder


@pytest.mark.asyncio
async def test_every_chat_as_json_imports_back(store: Store, tmp_path: Path) -> None:
    text = await ChatExports(store, FakeClock()).all_chats("json")
    (document,) = json.loads(text)
    assert document["session"]["title"] == "Trip: plans"
    path = tmp_path / "all.json"
    path.write_text(text, encoding="utf-8")
    with Store.open(tmp_path / "other.duckdb") as other:
        summary = await import_file(other, path)
        assert (summary.sessions, summary.nodes) == (1, 2)
