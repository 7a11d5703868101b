"""What the MCP runtime reports: each server's state and what it offers (tools, prompts,
resources), a call that failed, and a call's outcome read from the SDK's result as text for
the model."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Status = Literal["stopped", "starting", "ready", "failed"]


class McpCallError(Exception):
    """A call that could not be made or did not finish; the message is for the model and
    the user (which server, what happened, what its stderr said)."""


@dataclass(frozen=True, slots=True)
class ToolInfo:
    name: str
    description: str
    input_schema: Mapping[str, Any]
    problem: str | None = None  # why a provider would refuse it; such a tool is not sent


@dataclass(frozen=True, slots=True)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True, slots=True)
class PromptInfo:
    name: str
    description: str = ""
    arguments: tuple[PromptArgument, ...] = ()


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    uri: str
    name: str
    description: str = ""
    mime_type: str = ""


@dataclass(frozen=True, slots=True)
class ServerState:
    """What a list of servers shows: status, why it failed, and what the server offers."""

    name: str
    status: Status = "stopped"
    error: str = ""
    stderr_tail: str = ""
    tools: tuple[ToolInfo, ...] = ()
    prompts: tuple[PromptInfo, ...] = ()
    resources: tuple[ResourceInfo, ...] = ()
    started_ms: float | None = None  # spawn (or connect) to tools listed
    server_info: str = ""


@dataclass(frozen=True, slots=True)
class CallOutcome:
    ok: bool
    text: str
    # Images and audio the server returned: (mime type, bytes of base64 data). Shown as a
    # placeholder in the text until messages carry attachments.
    media: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class PromptText:
    role: str
    text: str


def contents_text(contents: Any) -> str:
    text = getattr(contents, "text", None)
    if isinstance(text, str):
        return text
    blob = getattr(contents, "blob", "") or ""
    mime = getattr(contents, "mime_type", None) or "binary"
    return f"[{mime} content of {getattr(contents, 'uri', '')}, {len(blob) * 3 // 4:,} bytes]"


def block_text(block: Any) -> tuple[str, tuple[str, int] | None]:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text), None
    if kind in ("image", "audio"):
        mime = str(getattr(block, "mime_type", "") or kind)
        size = len(getattr(block, "data", "") or "") * 3 // 4
        return f"[{kind} {mime}, {size:,} bytes]", (mime, size)
    if kind == "resource":
        return contents_text(block.resource), None
    if kind == "resource_link":
        return f"[resource {block.uri}]", None
    return f"[{kind or 'unknown'} content]", None


def call_outcome(result: Any) -> CallOutcome:
    """A CallToolResult as text for the model; structured output when there is no text."""
    parts: list[str] = []
    media: list[tuple[str, int]] = []
    for block in result.content or ():
        text, item = block_text(block)
        parts.append(text)
        if item is not None:
            media.append(item)
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False, sort_keys=True))
    return CallOutcome(not result.is_error, "\n".join(parts) or "(no output)", tuple(media))
