"""search_knowledge over a real knowledge base: passages come back under their citations, an
empty query is the model's error in one line, and the limit is kept in range."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from treechat.services.retrieval.knowledge import KnowledgeService, cited
from treechat.store.database import Store
from treechat.tools.base import ToolError
from treechat.tools.knowledge import MAX_RESULTS, SearchKnowledgeTool


def test_passages_come_back_cited(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "home.md").write_text("# Home\n\nThe spare house keys are with my sister.\n\n"
                                   "The boiler was serviced in October.\n")
    with Store.open(tmp_path / "data" / "chats.duckdb") as store:
        service = KnowledgeService(store)
        asked: list[int] = []

        async def search(query: str, limit: int) -> str:
            asked.append(limit)
            return cited(await service.search(["home"], query, limit=limit), query)

        tool = SearchKnowledgeTool(search)

        async def run() -> None:
            await service.add("home", [str(notes)])
            await service.reindex("home")
            result = await tool.call({"query": "which relative holds the extra door set?",
                                      "limit": 1})
            assert result.ok
            assert "[notes/home.md, line 1]" in result.text  # the heading names the passage
            assert str(notes) not in result.text  # from the folder added, not the full path
            assert "sister" in result.text
            await tool.call({"query": "boiler", "limit": 99})
            assert asked == [1, MAX_RESULTS]
            with pytest.raises(ToolError, match="empty"):
                await tool.call({"query": "  "})

        asyncio.run(run())
