"""The nodes a turn writes: the reply with what it records of its request, a reply cut short
(stopped, failed mid-stream), and a tool call's result."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ...core.model import Node
from ...core.reply import with_reasoning
from ...providers import stream as provider_stream
from ...store.repository import Repository
from ...tools.base import ToolResult
from ..models.catalog import Endpoint
from .endpoints import address, model_meta


def reply_node(
    node_id: str, session_id: str, head: str | None, endpoint: Endpoint,
    result: provider_stream.TurnResult, usage: dict[str, Any] | None,
    run_meta: Mapping[str, Any], now: float,
) -> Node:
    """The finished reply under `head`, its metadata naming the model, the finish reason,
    the usage, how it was asked and the tool calls it made."""
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in result.tool_calls]
    metadata = {
        **model_meta(endpoint),
        "finish_reason": result.finish_reason,
        "usage": usage,
        **run_meta,
        **({"tool_calls": calls} if calls else {}),
        **({"overflow_retried": True} if result.attempts > 1 else {}),
        # the provider sent lines that were not valid data: pieces may be missing
        **(
            {"unreadable_stream_lines": result.unreadable_lines}
            if result.unreadable_lines
            else {}
        ),
    }
    return _assistant(node_id, session_id, head, endpoint, result.text, now,
                      with_reasoning(metadata, result.reasoning))


def interrupted_node(
    node_id: str, session_id: str, head: str | None, endpoint: Endpoint, text: str,
    reason: str, extra: Mapping[str, Any] | None, now: float,
) -> Node:
    """What streamed before a stop or a failure, kept as a reply marked interrupted."""
    return _assistant(node_id, session_id, head, endpoint, text, now, {
        **model_meta(endpoint), "interrupted": True, "reason": reason, **(extra or {})
    })


def tool_node(
    node_id: str, session_id: str, caller: Node, call: provider_stream.ToolCall,
    result: ToolResult, now: float,
) -> Node:
    """A tool call's result, hung under the reply that asked for it."""
    return Node(
        id=node_id,
        seq=0,
        created_at=now,
        session_id=session_id,
        role="tool",
        name=call.name,
        input=json_or_raw(call.arguments),
        output=result.text,
        caller=caller.id,
        metadata={"tool_call_id": call.id, "ok": result.ok, **result.metadata},
    )


def _assistant(
    node_id: str, session_id: str, head: str | None, endpoint: Endpoint, text: str,
    now: float, metadata: dict[str, Any],
) -> Node:
    return Node(id=node_id, seq=0, created_at=now, session_id=session_id, role="assistant",
                name=address(endpoint), output=text, predecessor=head, metadata=metadata)


def appender(node: Node) -> Callable[[Repository], tuple[Node, ...]]:
    return lambda repo: repo.append_nodes([node])


def json_or_raw(arguments: str) -> Any:
    try:
        return json.loads(arguments) if arguments else {}
    except json.JSONDecodeError:
        return arguments
