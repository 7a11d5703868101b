"""The tools a session's model is offered: its todo list, `recall` over what its request no
longer shows, the knowledge bases it uses, the workspace's files and its MCP servers' tools."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...core.clock import Clock
from ...store.database import Store
from ...tools.base import ToolBox
from ...tools.files import Workspace, file_tools
from ...tools.knowledge import SearchKnowledgeTool
from ...tools.recall import RecallTool
from ...tools.todo import todo_tools
from ..context import ContextEngine
from ..mcp.service import McpService
from ..models.catalog import Endpoint
from .config import ChatConfig
from .endpoints import Endpoints

if TYPE_CHECKING:  # numpy, usearch and the embedder load on first use, off start-up
    from ..retrieval.knowledge import KnowledgeService


class TodoStore:
    """Per-session todo list kept in the settings table."""

    def __init__(self, store: Store, session_id: str) -> None:
        self.store = store
        self.key = f"todos:{session_id}"

    async def load(self) -> Sequence[Mapping[str, Any]]:
        value = await self.store.run(lambda r: r.get_setting(self.key, []))
        return list(value or [])

    async def save(self, items: Sequence[Mapping[str, Any]]) -> None:
        data = [dict(i) for i in items]
        await self.store.run(lambda r: r.set_setting(self.key, data))


class SessionTools:
    """Lists a session's tools for a model; remembers which knowledge bases each chat uses
    (read before its tools are listed)."""

    def __init__(
        self, store: Store, engine: ContextEngine, config: ChatConfig, endpoints: Endpoints,
        clock: Clock, mcp: McpService | None,
    ) -> None:
        self.store = store
        self.engine = engine
        self.config = config
        self.endpoints = endpoints
        self.clock = clock
        self.mcp = mcp  # MCP servers' tools join the built-in ones when given
        self._knowledge: KnowledgeService | None = None
        self._knowledge_of: dict[str, list[str]] = {}  # session -> knowledge bases it uses

    def knowledge(self) -> KnowledgeService:
        """The knowledge bases (made on first use; the embedder loads on first search)."""
        if self._knowledge is None:
            from ..retrieval.knowledge import KnowledgeService

            self._knowledge = KnowledgeService(self.store)
        return self._knowledge

    async def refresh_knowledge(self, session_id: str) -> list[str]:
        """Which knowledge bases the chat uses, read before its tools are listed."""
        names = await self.knowledge().for_session(session_id)
        self._knowledge_of[session_id] = names
        return names

    def for_session(self, session_id: str, endpoint: Endpoint) -> ToolBox:
        if not self.endpoints.takes_tools(endpoint):
            return ToolBox()
        box = ToolBox(todo_tools(TodoStore(self.store, session_id)))
        box.add(RecallTool(self._recaller(session_id)))
        if self._knowledge_of.get(session_id):
            box.add(SearchKnowledgeTool(self._knowledge_searcher(session_id)))
        if self.config.workspace is not None:
            for tool in file_tools(Workspace(self.config.workspace)):
                box.add(tool)
        if self.mcp is not None:
            for mcp_tool in self.mcp.tools_for(session_id, taken=box.names):
                box.add(mcp_tool)
        return box

    async def prepare_servers(self, session_id: str, endpoint: Endpoint) -> None:
        """Before a turn's first request: MCP servers started (so the tool list is whole
        from it on) and the chat's knowledge bases read."""
        if self.mcp is not None and self.endpoints.takes_tools(endpoint):
            await self.mcp.prepare(session_id)
        await self.refresh_knowledge(session_id)

    async def load_chat(self, session_id: str) -> None:
        """Before an estimate: the chat's MCP configuration read (nothing is started)."""
        if self.mcp is not None:
            await self.mcp.load_chat(session_id)

    def _recaller(self, session_id: str) -> Callable[[str, int], Awaitable[str]]:
        """`recall` for one session: searches what its HEAD's request no longer shows."""

        async def search(query: str, limit: int) -> str:
            result = await self.engine.recall(session_id, query, now=self.clock.now(),
                                              limit=limit)
            return result.text()

        return search

    def _knowledge_searcher(self, session_id: str) -> Callable[[str, int], Awaitable[str]]:
        async def search(query: str, limit: int) -> str:
            names = self._knowledge_of.get(session_id, [])
            from ..retrieval.knowledge import cited

            hits = await self.knowledge().search(names, query, limit=limit)
            return cited(hits, query)

        return search
