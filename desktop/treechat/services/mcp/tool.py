"""One MCP server tool as a chat's model sees it: asks the user first, then calls the server,
and answers in a tool result instead of raising."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ...tools.base import JSONSchema, ToolResult
from ...tools.mcp.naming import provider_schema
from ...tools.mcp.runtime import McpCallError, ToolInfo
from ..store_life.store_release import StoreNotBackError
from .approval import ApprovalRequest, Decision


class ToolServers(Protocol):
    """What a tool asks of the MCP service: the user's answer, then the call itself."""

    async def authorize(self, request: ApprovalRequest) -> Decision | None:
        """Allowed (the decision) or denied (None); McpCallError when the call cannot run."""
        ...

    async def call(
        self, server: str, tool: str, args: Mapping[str, Any], *, session_id: str | None = None
    ) -> Any: ...


class McpTool:
    """One MCP server tool bound to one chat: asks, then calls, and never raises."""

    def __init__(
        self, service: ToolServers, session_id: str, server: str, info: ToolInfo, name: str
    ) -> None:
        self._service = service
        self._session_id = session_id
        self.server = server
        self.tool = info.name
        self._name = name
        self._description = info.description or f"{info.name} (from the {server} MCP server)"
        self._parameters = provider_schema(info.input_schema)

    @property
    def name(self) -> str:
        return self._name

    @property
    def description(self) -> str:
        return self._description

    @property
    def parameters(self) -> JSONSchema:
        return self._parameters

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        meta: dict[str, dict[str, Any]] = {"mcp": {"server": self.server, "tool": self.tool}}
        try:
            # a person is asked only once the server is up and still lists the tool
            decision = await self._service.authorize(
                ApprovalRequest(
                    self._session_id, self.server, self.tool, self._name, dict(args),
                    self._description,
                )
            )
            if decision is None:
                return ToolResult(
                    False,
                    f"The user denied this call: {self.server} › {self.tool} did not run.",
                    {**meta, "denied": True},
                )
            outcome = await self._service.call(self.server, self.tool, args,
                                               session_id=self._session_id)
        except McpCallError as exc:
            return ToolResult(False, f"{self._name}: {exc}", meta)
        except StoreNotBackError as exc:  # the turn ends with it: the store is not open
            return ToolResult(False, str(exc), meta)
        if outcome.media:
            # Named on the node until messages carry attachments; the text says so too.
            meta["mcp"]["media"] = [{"mime_type": m, "bytes": n} for m, n in outcome.media]
        return ToolResult(outcome.ok, outcome.text, meta)
