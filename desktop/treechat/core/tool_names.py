"""A tool's name as a person reads it. A tool from an MCP server is called by the model as
`server__tool` (one namespace per server, see `tools.mcp.naming`); people see "tool (server)".
Built-in tools have no server part and read as they are."""

from __future__ import annotations

SEPARATOR = "__"  # between the server's part and the tool's in a called name


def shown_tool_name(called: str) -> str:
    """`alpha__add` -> "add (alpha)"; `recall` -> "recall"; "tool" for no name."""
    server, sep, tool = called.partition(SEPARATOR)
    if not sep or not server or not tool:
        return called or "tool"
    return f"{tool} ({server})"
