"""search_knowledge: the model's way into the folders and files the user added to this chat
as knowledge. The search is the caller's (the retrieval engine, by words and meaning); this
module only speaks the tool protocol. Each passage comes back with its citation (file, page,
line), which the reply is asked to give."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from .base import JSONSchema, ToolError, ToolResult, object_schema

MAX_QUERY_CHARS = 2000
MAX_RESULTS = 8
DEFAULT_RESULTS = 4

# (query, how many) -> the text to give back, or the whole result (with the passages in its
# metadata); raises ValueError for a query with no words.
KnowledgeSearch = Callable[[str, int], Awaitable[str | ToolResult]]


class PassageSearchTool:
    """A search the model asks in any words, giving passages back: the query and how many
    passages, kept in range; a query without words is the model's error in one line."""

    name: str
    description: str

    def __init__(self, search: KnowledgeSearch) -> None:
        self._search = search

    @property
    def parameters(self) -> JSONSchema:
        return object_schema(
            {
                "query": {"type": "string",
                          "description": "What to look for, in any words."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS,
                          "description": f"How many passages to return (1-{MAX_RESULTS})."},
            },
            required=["query"],
        )

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        query = str(args.get("query") or "")
        if not query.strip():
            raise ToolError("the query is empty; say what to look for")
        limit = max(1, min(MAX_RESULTS, int(args.get("limit") or DEFAULT_RESULTS)))
        try:
            text = await self._search(query[:MAX_QUERY_CHARS], limit)
        except ValueError as exc:
            raise ToolError(str(exc)) from exc
        return text if isinstance(text, ToolResult) else ToolResult.success(text)


class SearchKnowledgeTool(PassageSearchTool):
    name = "search_knowledge"
    description = (
        "Search the user's documents added to this chat as knowledge (notes, PDFs, code, web "
        "pages) by meaning as well as by words, and get the best passages back, each with "
        "its source (file, page, line). Use it for questions about those documents; cite the "
        "source of every passage you use, as [file, page or line]."
    )
