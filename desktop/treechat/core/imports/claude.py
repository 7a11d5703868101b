"""Claude.ai data export (`conversations.json` with `chat_messages`): branches from
`parent_message_uuid` when the export has it, otherwise the messages in order."""

from __future__ import annotations

from typing import Any

from ..model import Role
from ._common import (
    Draft,
    Segment,
    as_text,
    assemble,
    conversations_of,
    expand_segments,
    imported_from,
    parse_time,
)
from .model import ImportedConversation, ParsedExport, Skipped

FORMAT = "claude"

_INTERRUPTED_STOPS = frozenset({"user_canceled", "user_cancelled", "canceled", "cancelled"})


def looks_like(item: Any) -> bool:
    return isinstance(item, dict) and "chat_messages" in item


def parse(data: Any) -> ParsedExport:
    conversations: list[ImportedConversation] = []
    skipped: list[Skipped] = []
    for index, item in enumerate(conversations_of(data)):
        conv_id = str(item.get("uuid") or "") if isinstance(item, dict) else ""
        conv_id = conv_id or f"conversation-{index + 1}"
        if not isinstance(item, dict) or not isinstance(item.get("chat_messages"), list):
            skipped.append(Skipped("conversation has no 'chat_messages' list", conv_id))
            continue
        conversation, skips = _conversation(item, conv_id)
        skipped.extend(skips)
        if conversation is not None:
            conversations.append(conversation)
    return ParsedExport(FORMAT, tuple(conversations), tuple(skipped))


def _is_root(parent: Any) -> bool:
    # Claude marks "no parent" with the nil UUID, version and variant digits aside.
    if not isinstance(parent, str) or not parent:
        return True
    digits = parent.replace("-", "")
    return len(digits) == 32 and not (digits[:12] + digits[13:16] + digits[17:]).strip("0")


def _conversation(item: dict[str, Any], conv_id: str) -> tuple[ImportedConversation | None,
                                                               list[Skipped]]:
    messages = item["chat_messages"]
    branched = any(isinstance(m, dict) and "parent_message_uuid" in m for m in messages)
    drafts: list[Draft] = []
    previous: str | None = None
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            drafts.append(Draft(f"{conv_id}#{index + 1}", previous, "user",
                                skip_reason="malformed message"))
            continue
        sid = str(message.get("uuid") or f"{conv_id}#{index + 1}")
        if branched and "parent_message_uuid" in message:
            raw_parent = message.get("parent_message_uuid")
            parent = None if _is_root(raw_parent) else str(raw_parent)
        else:
            parent = previous
        drafts.extend(_message_drafts(sid, parent, message))
        previous = sid
    model = item.get("model")
    head = item.get("current_leaf_message_uuid")
    return assemble(
        FORMAT,
        source_id=conv_id,
        title=str(item.get("name") or ""),
        created_at=parse_time(item.get("created_at")),
        updated_at=parse_time(item.get("updated_at")),
        model=model if isinstance(model, str) else "",
        drafts=drafts,
        head=head if isinstance(head, str) else None,
    )


def _message_drafts(sid: str, parent: str | None, message: dict[str, Any]) -> list[Draft]:
    sender = message.get("sender")
    created = parse_time(message.get("created_at"))
    meta: dict[str, Any] = imported_from(FORMAT, sid)
    attachments = [
        *(a for a in message.get("attachments") or () if isinstance(a, dict)),
        *(f for f in message.get("files") or () if isinstance(f, dict)),
    ]
    if attachments:
        meta["attachments"] = attachments
    stop = message.get("stop_reason")
    if isinstance(stop, str):
        meta["stop_reason"] = stop
        if stop in _INTERRUPTED_STOPS:
            meta["interrupted"] = True
    if message.get("truncated"):
        meta["truncated"] = True
    role: Role
    if sender == "human":
        role = "user"
    elif sender == "assistant":
        role = "assistant"
    else:
        return [Draft(sid, parent, "user", skip_reason=f"unknown sender {sender!r}")]

    segments = _segments(message)
    if role == "assistant" and any(s.kind in ("call", "result") for s in segments):
        return expand_segments(FORMAT, sid, parent, segments, name="", created_at=created,
                               metadata=meta)
    text = "\n\n".join(s.text for s in segments if s.kind == "text" and s.text)
    thinking = "\n\n".join(s.text for s in segments if s.kind == "thinking" and s.text)
    if thinking:
        meta["thinking"] = thinking
    draft = Draft(sid, parent, role, text, created_at=created, metadata=meta)
    if "text" not in message and "content" not in message:
        draft.skip_reason = "message has no content"
    return [draft]


def _segments(message: dict[str, Any]) -> list[Segment]:
    blocks = message.get("content")
    if not isinstance(blocks, list) or not blocks:
        return [Segment("text", str(message.get("text") or ""))]
    out: list[Segment] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            out.append(Segment("text", str(block.get("text") or "")))
        elif kind == "thinking":
            out.append(Segment("thinking", str(block.get("thinking") or "")))
        elif kind == "tool_use":
            out.append(Segment("call", call_id=str(block.get("id") or ""),
                               name=str(block.get("name") or ""), arguments=block.get("input")))
        elif kind == "tool_result":
            out.append(Segment("result", as_text(block.get("content")),
                               call_id=str(block.get("tool_use_id") or ""),
                               name=str(block.get("name") or ""),
                               is_error=bool(block.get("is_error"))))
    if not any(s.kind == "text" and s.text for s in out) and message.get("text"):
        out.insert(0, Segment("text", str(message["text"])))
    return out
