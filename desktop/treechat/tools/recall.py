"""recall: the model's way back to what the context no longer shows in full. The graph keeps
every original; compaction folds old turns into summaries, ages old tool results to one-line
stubs, clears idle ones and cuts long ones. `recall` searches exactly that content on the
current branch (and on branches attached to it), and the files those messages carried (an aged
attachment is a stub naming the file), and returns the original text of the best matches, each
cited by its node: a file's text, a PDF's page text, for an image what it is.

The search itself is the caller's (the context engine, over the full-text index); this module
only speaks the tool protocol, so it stays free of the store.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .base import JSONSchema, ToolError, ToolResult, object_schema

MAX_QUERY_CHARS = 2000
MAX_RESULTS = 5
DEFAULT_RESULTS = 3

# (query, how many) -> the text to give back; raises ValueError for a query with no words.
RecallSearch = Callable[[str, int], Awaitable[str]]


class RecallTool:
    name = "recall"
    description = (
        "Search the earlier part of this conversation that is no longer shown in full "
        "(summarized turns, aged or cleared tool results, the cut middle of long results, "
        "files attached earlier that are now a stub naming them) and get the original text "
        "back, cited by node. Use it when a summary or a stub mentions something you need "
        "exactly, or the user asks about something said, read or attached long ago. The "
        "query is a few distinctive words (a file's name finds the file)."
    )

    def __init__(self, search: RecallSearch) -> None:
        self._search = search

    @property
    def parameters(self) -> JSONSchema:
        return object_schema(
            {
                "query": {"type": "string", "description": "Words to look for."},
                "limit": {
                    "type": "integer",
                    "description": f"How many matches to return (1-{MAX_RESULTS}).",
                    "minimum": 1,
                    "maximum": MAX_RESULTS,
                },
            },
            required=["query"],
        )

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        query = str(args.get("query") or "")
        if not query.strip():
            raise ToolError("the query is empty; give a few words to look for")
        # A pasted page is still a query: only its beginning is searched.
        query = query[:MAX_QUERY_CHARS]
        limit = int(args.get("limit") or DEFAULT_RESULTS)
        try:
            text = await self._search(query, limit)
        except ValueError as exc:
            raise ToolError(str(exc)) from exc
        return ToolResult.success(text)
