"""LibreChat conversation export: messages nested through `children[]`, linked by
`parentMessageId`, or both. Every message is its own node, whatever its text."""

from __future__ import annotations

from typing import Any

from ..model import Role
from ..reply import REASONING_KEY
from ._common import (
    Draft,
    Segment,
    as_text,
    assemble,
    conversations_of,
    expand_segments,
    imported_from,
    mapping_of,
    parse_time,
)
from .model import ImportedConversation, ParsedExport, Skipped

FORMAT = "librechat"
NO_PARENT = "00000000-0000-0000-0000-000000000000"


def looks_like(item: Any) -> bool:
    return isinstance(item, dict) and "conversationId" in item and (
        "messages" in item or "messagesTree" in item
    )


def parse(data: Any, first_index: int = 0) -> ParsedExport:
    conversations: list[ImportedConversation] = []
    skipped: list[Skipped] = []
    for index, item in enumerate(conversations_of(data), start=first_index):
        fields = mapping_of(item)
        conv_id = str(fields.get("conversationId") or "") or f"conversation-{index + 1}"
        tree = fields.get("messagesTree", fields.get("messages"))
        if not isinstance(tree, list):
            skipped.append(Skipped("conversation has no 'messages' list", conv_id))
            continue
        conversation, skips = _conversation(fields, conv_id, tree)
        skipped.extend(skips)
        if conversation is not None:
            conversations.append(conversation)
    return ParsedExport(FORMAT, tuple(conversations), tuple(skipped))


def _conversation(
    item: dict[str, Any], conv_id: str, tree: list[Any]
) -> tuple[ImportedConversation | None, list[Skipped]]:
    options = mapping_of(item.get("options"))
    default_model = str(options.get("model") or item.get("model") or "")
    drafts: list[Draft] = []
    # Depth-first in file order with an explicit stack: exports can nest thousands deep.
    stack: list[tuple[Any, str | None, bool]] = [(m, None, False) for m in reversed(tree)]
    counter = 0
    while stack:
        message, nest_parent, nested = stack.pop()
        counter += 1
        if not isinstance(message, dict):
            drafts.append(Draft(f"{conv_id}#{counter}", nest_parent, "user",
                                skip_reason="malformed message"))
            continue
        sid = str(message.get("messageId") or f"{conv_id}#{counter}")
        if nested:
            parent = nest_parent  # the tree the export wrote wins over a stale link
        else:
            linked = message.get("parentMessageId")
            parent = None if not isinstance(linked, str) or linked in ("", NO_PARENT) else linked
        drafts.extend(_message_drafts(sid, parent, message, default_model))
        children = message.get("children")
        if isinstance(children, list):
            stack.extend((child, sid, True) for child in reversed(children))
    created = parse_time(item.get("createdAt"))
    return assemble(
        FORMAT,
        source_id=conv_id,
        title=str(item.get("title") or ""),
        created_at=created,
        updated_at=parse_time(item.get("updatedAt")),
        model=default_model,
        drafts=drafts,
        head=None,
    )


def _message_drafts(
    sid: str, parent: str | None, message: dict[str, Any], default_model: str
) -> list[Draft]:
    by_user = message.get("isCreatedByUser")
    if by_user is None:
        by_user = str(message.get("sender") or "").lower() == "user"
    role: Role = "user" if by_user else "assistant"
    meta: dict[str, Any] = imported_from(FORMAT, sid)
    for source, target in (
        ("tokenCount", "token_count"),
        ("promptTokens", "prompt_tokens"),
        ("sender", "sender"),
        ("endpoint", "endpoint"),
        ("finish_reason", "finish_reason"),
        ("files", "attachments"),
    ):
        if message.get(source) not in (None, "", []):
            meta[target] = message[source]
    if message.get("error"):
        meta["error"] = True
    if message.get("unfinished"):
        meta["interrupted"] = True
    name = ""
    if role == "assistant":
        model = message.get("model") or default_model
        if isinstance(model, str) and model:
            name = model
            meta["model"] = model
    created = parse_time(message.get("createdAt"))

    segments = _segments(message)
    if role == "assistant" and any(s.kind in ("call", "result") for s in segments):
        return expand_segments(FORMAT, sid, parent, segments, name=name, created_at=created,
                               metadata=meta)
    text = "\n\n".join(s.text for s in segments if s.kind == "text" and s.text)
    thinking = "\n\n".join(s.text for s in segments if s.kind == "thinking" and s.text)
    if thinking:
        meta[REASONING_KEY] = thinking
    return [Draft(sid, parent, role, text, name=name, created_at=created, metadata=meta)]


def _segments(message: dict[str, Any]) -> list[Segment]:
    parts = message.get("content")
    if not isinstance(parts, list) or not parts:
        return [Segment("text", str(message.get("text") or ""))]
    out: list[Segment] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text":
            value = part.get("text")
            out.append(Segment("text", as_text(value)))
        elif kind == "think":
            out.append(Segment("thinking", as_text(part.get("think"))))
        elif kind == "tool_call" and isinstance(part.get("tool_call"), dict):
            call = part["tool_call"]
            cid = str(call.get("id") or "")
            out.append(Segment("call", call_id=cid, name=str(call.get("name") or ""),
                               arguments=call.get("args")))
            if call.get("output") is not None:
                out.append(Segment("result", as_text(call.get("output")), call_id=cid,
                                   name=str(call.get("name") or "")))
        elif kind == "error":
            out.append(Segment("text", as_text(part.get("error"))))
    if not any(s.kind == "text" and s.text for s in out) and message.get("text"):
        out.insert(0, Segment("text", str(message["text"])))
    return out
