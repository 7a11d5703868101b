"""What the bundled model's server reads of a request: OpenAI messages reduced to what a chat
template renders, Hermes-style tool calls parsed out of a reply, and the request's numbers
and stop sequences checked. Errors come back in OpenAI's error shape."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any


class RequestError(Exception):
    """A client error, reported in OpenAI's error shape."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        kind: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _text_of(content: Any) -> str:
    """Message content as plain text (OpenAI allows a string or a list of typed parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "".join(parts)
    return json.dumps(content, ensure_ascii=False)


def normalize_messages(messages: Any) -> list[dict[str, str]]:
    """Messages reduced to role + text, the only thing a plain chat template can render.

    Tool calls and their results are kept as text so that the model still sees them.
    """
    if not isinstance(messages, list) or not messages:
        raise RequestError("'messages' must be a non-empty array", param="messages")
    out: list[dict[str, str]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise RequestError(f"messages[{index}] must be an object with a role", param="messages")
        role = message["role"]
        role = "system" if role == "developer" else role
        text = _text_of(message.get("content"))
        calls = message.get("tool_calls") or []
        for call in calls if isinstance(calls, list) else []:
            function = call.get("function", {}) if isinstance(call, Mapping) else {}
            text += f"\n[tool call {function.get('name', '?')}({function.get('arguments', '')})]"
        out.append({"role": role, "content": text})
    return out


def tool_messages(messages: Any) -> list[dict[str, Any]]:
    """Messages for a template that renders tools: tool calls keep their structure (with
    arguments as objects, as Hugging Face templates expect) and tool results their id."""
    flat = normalize_messages(messages)
    out: list[dict[str, Any]] = []
    for message, plain in zip(messages, flat, strict=True):
        entry: dict[str, Any] = {"role": plain["role"], "content": _text_of(message.get("content"))}
        calls = message.get("tool_calls")
        if isinstance(calls, list) and calls:
            entry["tool_calls"] = [_call_for_template(call) for call in calls]
        for key in ("tool_call_id", "name"):
            if isinstance(message.get(key), str):
                entry[key] = message[key]
        out.append(entry)
    return out


def _call_for_template(call: Any) -> dict[str, Any]:
    function = call.get("function", {}) if isinstance(call, Mapping) else {}
    arguments: Any = function.get("arguments", "{}")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except ValueError:
            arguments = {"input": arguments}
    return {
        "id": call.get("id", "") if isinstance(call, Mapping) else "",
        "type": "function",
        "function": {"name": str(function.get("name", "")), "arguments": arguments},
    }


TOOL_CALL_OPEN, TOOL_CALL_CLOSE = "<tool_call>", "</tool_call>"


def parse_tool_calls(text: str) -> tuple[str, list[dict[str, Any]]]:
    """Split a reply into its text and its tool calls, in the `<tool_call>{"name": ...,
    "arguments": {...}}</tool_call>` form that Hermes-style templates (Qwen2.5, Hermes,
    SmolLM3 and others) teach their models. A block that is not valid JSON stays text."""
    calls: list[dict[str, Any]] = []
    kept: list[str] = []
    rest = text
    while (start := rest.find(TOOL_CALL_OPEN)) >= 0:
        end = rest.find(TOOL_CALL_CLOSE, start)
        body = rest[start + len(TOOL_CALL_OPEN): end if end >= 0 else len(rest)]
        try:
            parsed = json.loads(body.strip())
            name = parsed["name"]
            arguments = parsed.get("arguments", parsed.get("parameters", {}))
        except (ValueError, KeyError, TypeError, AttributeError):
            break
        kept.append(rest[:start])
        calls.append({
            "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {
                "name": str(name),
                "arguments": arguments if isinstance(arguments, str)
                else json.dumps(arguments, ensure_ascii=False),
            },
        })
        rest = rest[end + len(TOOL_CALL_CLOSE):] if end >= 0 else ""
    kept.append(rest)
    return ("".join(kept).strip() if calls else text), calls



def positive_int(body: Mapping[str, Any], *names: str) -> int | None:
    for name in names:
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise RequestError(f"'{name}' must be a positive integer", param=name)
        return value
    return None


def stop_sequences(body: Mapping[str, Any]) -> list[str]:
    stop = body.get("stop")
    if stop is None:
        return []
    if isinstance(stop, str):
        return [stop] if stop else []
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        return [s for s in stop if s]
    raise RequestError("'stop' must be a string or an array of strings", param="stop")

