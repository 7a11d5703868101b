"""search_chats speaks the tool protocol: the caller's result is given back as it is, an empty
query or one without words is the model's error in one line, and the limit is kept in range."""

from __future__ import annotations

import asyncio

import pytest

from treechat.tools.base import ToolError, ToolResult
from treechat.tools.chat_memory import SearchChatsTool
from treechat.tools.knowledge import MAX_RESULTS


def test_the_search_is_asked_within_range_and_its_errors_are_the_models() -> None:
    asked: list[tuple[str, int]] = []

    async def search(query: str, limit: int) -> ToolResult:
        if query == "???":
            raise ValueError("nothing to search for")
        asked.append((query, limit))
        return ToolResult(True, "1 passage", {"passages": [{"kind": "chat", "text": "x"}]})

    tool = SearchChatsTool(search)

    async def run() -> None:
        result = await tool.call({"query": "boat name", "limit": 99})
        assert result.metadata["passages"] == [{"kind": "chat", "text": "x"}]
        await tool.call({"query": "boat"})
        assert asked == [("boat name", MAX_RESULTS), ("boat", 4)]
        with pytest.raises(ToolError, match="empty"):
            await tool.call({"query": " "})
        with pytest.raises(ToolError, match="nothing to search for"):
            await tool.call({"query": "???"})

    asyncio.run(run())
    assert "query" in tool.parameters["properties"]
