"""How the MCP configuration is kept: the settings keys, a chat's own switches, the tools each
server last listed (so a chat declares them before its servers start), and a server's secrets,
which live in the keyring only."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...providers.keys import KeyStore
from ...tools.mcp.naming import schema_problem
from ...tools.mcp.runtime import ToolInfo

SETTINGS_SERVERS = "mcp.servers"  # {name: ServerConfig.public()}
SETTINGS_LISTINGS = "mcp.listings"  # {name: [tool, ...]}: the last tools each server listed
SETTINGS_PROTECTED = "mcp.protected"  # ["server/tool", ...]: never aged
KEYRING_PREFIX = "mcp:"


def chat_key(session_id: str) -> str:
    return f"mcp.chat:{session_id}"


@dataclass
class ChatSwitches:
    """One chat's own choices: servers switched on or off in it, tools always allowed."""

    servers: dict[str, bool] = field(default_factory=dict)  # per-chat overrides of "enabled"
    always: set[str] = field(default_factory=set)  # "server/tool" allowed in this chat

    def stored(self) -> dict[str, Any]:
        return {"servers": dict(sorted(self.servers.items())), "always": sorted(self.always)}


def tool_to_stored(tool: ToolInfo) -> dict[str, Any]:
    """A listed tool as kept, with the verdict on its schema: reading it back then needs no
    JSON Schema validator, which a turn that calls no MCP tool would load for nothing."""
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": dict(tool.input_schema),
        "problem": tool.problem,
    }


def tool_from_stored(raw: Mapping[str, Any]) -> ToolInfo:
    schema = raw.get("input_schema") or {}
    if "problem" in raw and isinstance(schema, Mapping):
        kept = raw["problem"]
        problem = None if kept is None else str(kept)
    else:  # kept before the verdict was, or not a schema at all
        problem = schema_problem(schema)
    return ToolInfo(str(raw.get("name", "")), str(raw.get("description") or ""), schema, problem)


def read_secrets(keys: KeyStore, name: str, public: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A server's env and header values, kept in the keyring as JSON (None when it has none,
    or what is kept cannot be read)."""
    if not (public.get("env_names") or public.get("header_names")):
        return None
    raw = keys.get_key(KEYRING_PREFIX + name)
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
