"""The recall tool's side of the protocol: its schema, bad queries as errors the model can
read, long queries cut, and the limit passed through."""

from __future__ import annotations

import asyncio

from treechat.tools.base import ToolBox
from treechat.tools.recall import DEFAULT_RESULTS, MAX_QUERY_CHARS, MAX_RESULTS, RecallTool


def _box() -> tuple[ToolBox, list[tuple[str, int]]]:
    seen: list[tuple[str, int]] = []

    async def search(query: str, limit: int) -> str:
        seen.append((query, limit))
        if not any(c.isalnum() for c in query):
            raise ValueError("nothing to search for")
        return f"found {query[:10]}"

    return ToolBox([RecallTool(search)]), seen


def test_recall_searches_with_the_query_and_limit() -> None:
    box, seen = _box()
    result = asyncio.run(box.call("recall", '{"query": "staging server", "limit": 2}'))
    assert result.ok and result.text == "found staging se"
    assert seen == [("staging server", 2)]
    asyncio.run(box.call("recall", {"query": "x"}))
    assert seen[-1] == ("x", DEFAULT_RESULTS)
    spec = box.specs()[0]["function"]
    assert spec["name"] == "recall" and spec["parameters"]["required"] == ["query"]


def test_recall_bad_input_comes_back_as_an_error() -> None:
    box, seen = _box()
    empty = asyncio.run(box.call("recall", {"query": "   "}))
    assert not empty.ok and "empty" in empty.text
    punct = asyncio.run(box.call("recall", {"query": "?!"}))
    assert not punct.ok and "nothing to search for" in punct.text
    over = asyncio.run(box.call("recall", {"query": "q", "limit": MAX_RESULTS + 1}))
    assert not over.ok and "at most" in over.text
    huge = asyncio.run(box.call("recall", {"query": "word " * 2000}))  # 10,000 characters
    assert huge.ok and len(seen[-1][0]) == MAX_QUERY_CHARS


def test_the_model_is_told_recall_finds_files_by_name() -> None:
    box, _ = _box()
    description = box.specs()[0]["function"]["description"]
    assert "files attached earlier" in description and "a file's name finds the file" in description
