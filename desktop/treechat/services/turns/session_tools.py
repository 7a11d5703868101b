"""The tools a session's model is offered: its todo list, `recall` over what its request no
longer shows, the knowledge bases it uses (its own and its project's), the user's other chats
when memory across chats is on, the workspace's files and its MCP servers' tools. A model
without tools is quoted the knowledge passages for the newest message instead."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...core.citations import PASSAGES_KEY, TAIL_HEADING, Passage, written
from ...core.clock import Clock
from ...core.commit import ContextCommit
from ...store.database import Store
from ...store.fulltext import QueryError
from ...tools.base import ToolBox, ToolResult
from ...tools.chat_memory import SearchChatsTool
from ...tools.files import Workspace, file_tools
from ...tools.knowledge import SearchKnowledgeTool
from ...tools.recall import RecallTool
from ...tools.todo import todo_tools
from ..context import ContextEngine
from ..mcp.service import McpService
from ..models.catalog import Endpoint
from ..projects import ProjectService
from .config import ChatConfig
from .endpoints import Endpoints

if TYPE_CHECKING:  # numpy, usearch and the embedder load on first use, off start-up
    from ..retrieval.knowledge import KnowledgeService


TAIL_PASSAGES = 3  # passages quoted for a model without tools
TAIL_CHARS = 700  # of each
MEMORY_CHARS = 900  # of each passage from another chat


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
        self._memory_of: dict[str, bool] = {}  # session -> may search the other chats
        self.projects = ProjectService(store, clock=clock)
        # A model without tools gets the passages `search_knowledge` would have found.
        engine.tail_passages = self.tail_passages

    def knowledge(self) -> KnowledgeService:
        """The knowledge bases (made on first use; the embedder loads on first search)."""
        from ..retrieval.engine import engine_for

        embedder = engine_for(self.store).embedder  # a change of search model makes a new one
        if self._knowledge is None or self._knowledge.embedder is not embedder:
            from ..retrieval.knowledge import KnowledgeService

            self._knowledge = KnowledgeService(self.store, embedder)
        return self._knowledge

    async def refresh_knowledge(self, session_id: str) -> list[str]:
        """Which knowledge bases the chat uses (its own, then its project's) and whether it
        may search the other chats, read before its tools are listed."""
        service = self.knowledge()
        known = await service.bases()
        project = await self.projects.project_of(session_id)
        names = [*await service.for_session(session_id),
                 *(project.knowledge if project is not None else ())]
        names = [n for n in dict.fromkeys(names) if n in known]
        self._knowledge_of[session_id] = names
        self._memory_of[session_id] = await self.projects.memory_for(session_id)
        return names

    def for_session(self, session_id: str, endpoint: Endpoint) -> ToolBox:
        if not self.endpoints.takes_tools(endpoint):
            return ToolBox()
        box = ToolBox(todo_tools(TodoStore(self.store, session_id)))
        box.add(RecallTool(self._recaller(session_id)))
        if self._knowledge_of.get(session_id):
            box.add(SearchKnowledgeTool(self._knowledge_searcher(session_id)))
        if self._memory_of.get(session_id):
            box.add(SearchChatsTool(self._chat_searcher(session_id)))
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

    def _knowledge_searcher(self, session_id: str
                            ) -> Callable[[str, int], Awaitable[str | ToolResult]]:
        async def search(query: str, limit: int) -> str | ToolResult:
            names = self._knowledge_of.get(session_id, [])
            from ..retrieval.knowledge import cited

            hits = await self.knowledge().search(names, query, limit=limit)
            # the passages travel with the tool node: the reply's Sources are made from them
            return ToolResult(True, cited(hits, query),
                              {PASSAGES_KEY: [h.passage.as_dict() for h in hits]})

        return search

    def _chat_searcher(self, session_id: str) -> Callable[[str, int], Awaitable[ToolResult]]:
        async def search(query: str, limit: int) -> ToolResult:
            from ..retrieval.engine import engine_for

            hits = await engine_for(self.store).search(query, limit=limit * 4)
            others = [h for h in hits if h.session_id != session_id]
            ids = list(dict.fromkeys(h.session_id for h in others))
            sessions = await self.store.run(lambda r: {i: r.get_session(i) for i in ids})
            found: list[Passage] = []
            for h in others:
                chat = sessions.get(h.session_id)
                if chat is None or chat.hidden:
                    continue
                found.append(Passage("chat", h.text.strip()[:MEMORY_CHARS], node_id=h.node_id,
                                     title=chat.title or "Untitled"))
                if len(found) >= limit:
                    break
            if not found:
                text = f"No other chat matches {query[:200]!r}."
            else:
                text = (f"{len(found)} passage(s) from the user's other chats:\n\n"
                        + written(found))
            return ToolResult(True, text, {PASSAGES_KEY: [p.as_dict() for p in found]})

        return search

    async def tail_passages(self, session_id: str, commit: ContextCommit) -> str:
        """For a model without tools: the chat's knowledge passages for the newest user
        message, under a heading, quoted in the volatile tail ("" without any)."""
        names = self._knowledge_of.get(session_id)
        if not names:
            return ""
        question = commit.newest_question()
        if not question:
            return ""
        try:
            hits = await self.knowledge().search(names, question, limit=TAIL_PASSAGES)
        except (QueryError, ValueError):
            return ""
        if not hits:
            return ""
        passages = [Passage("knowledge", h.text.strip()[:TAIL_CHARS], path=h.path,
                            page=h.page, line=h.line) for h in hits]
        return f"{TAIL_HEADING}\n\n{written(passages)}"
