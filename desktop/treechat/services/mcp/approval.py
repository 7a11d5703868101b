"""Asking before an MCP tool runs: the request the approval prompt shows, its three answers,
and the tools a server offered that cannot be offered to a model."""

from __future__ import annotations

import enum
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any


class Decision(enum.Enum):
    """The three answers of the approval prompt."""

    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"  # this tool, in this chat
    DENY = "deny"


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What the approval prompt shows: which server, which tool, with which arguments."""

    session_id: str
    server: str
    tool: str
    public_name: str  # the name the model called
    arguments: Mapping[str, Any]
    description: str = ""

    def arguments_text(self) -> str:
        return json.dumps(dict(self.arguments), indent=2, ensure_ascii=False, sort_keys=True)


Approver = Callable[[ApprovalRequest], Awaitable[Decision]]


@dataclass(frozen=True, slots=True)
class RejectedTool:
    server: str
    tool: str
    problem: str
