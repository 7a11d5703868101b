"""Claude.ai data export (`conversations.json` with `chat_messages`): branches from
`parent_message_uuid` when the export has it, otherwise the messages in time order; content
blocks become text, reasoning (`thinking`, and `<antThinking>` in the text) and tool nodes
(`tool_use` / `tool_result`), an `<antArtifact>` a titled card with its code, and
attachments and files become named placeholders (an attachment whose text the export holds
is imported as a text file)."""

from __future__ import annotations

from typing import Any

from ..artifacts import ARTIFACTS_KEY, has_claude_markup, split_claude_markup
from ..model import Role
from ..reply import REASONING_KEY
from ._common import (
    Draft,
    Segment,
    as_text,
    assemble,
    attachment,
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


def parse(data: Any, first_index: int = 0) -> ParsedExport:
    conversations: list[ImportedConversation] = []
    skipped: list[Skipped] = []
    for index, item in enumerate(conversations_of(data), start=first_index):
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


def _order(messages: list[Any]) -> list[tuple[int, Any]]:
    """Messages in conversation order. Exports without parent links are not always in order:
    sort by `created_at`, keeping file order among equal times, a human message before the
    reply that shares its time; messages without a time keep their place after the one
    before them."""
    keyed: list[tuple[float, int, int, Any]] = []
    last = float("-inf")
    for index, message in enumerate(messages):
        at = parse_time(message.get("created_at")) if isinstance(message, dict) else None
        if at is None:
            at = last
        last = at
        human = isinstance(message, dict) and message.get("sender") == "human"
        keyed.append((at, 0 if human else 1, index, message))
    keyed.sort(key=lambda k: (k[0], k[1], k[2]))
    return [(k[2], k[3]) for k in keyed]


def _conversation(item: dict[str, Any], conv_id: str) -> tuple[ImportedConversation | None,
                                                               list[Skipped]]:
    messages = item["chat_messages"]
    branched = any(isinstance(m, dict) and "parent_message_uuid" in m for m in messages)
    ordered = list(enumerate(messages)) if branched else _order(messages)
    drafts: list[Draft] = []
    calls_of: dict[str, list[dict[str, Any]]] = {}  # message id -> its last round's calls
    previous: str | None = None
    for index, message in ordered:
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
        made = _message_drafts(sid, parent, message, calls_of.get(parent or "", []))
        drafts.extend(made)
        for draft in made:
            if draft.source_id == sid and draft.metadata.get("tool_calls"):
                calls_of[sid] = list(draft.metadata["tool_calls"])
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


def _attachments(message: dict[str, Any]) -> list[dict[str, Any]]:
    """Placeholders for what the message carried: `attachments` (text the app extracted from
    the file, kept whole) and `files` / `files_v2` (uploads, images)."""
    out: list[dict[str, Any]] = []
    for raw in message.get("attachments") or ():
        if isinstance(raw, dict):
            out.append(attachment(
                str(raw.get("file_name") or ""), kind="file", ref=str(raw.get("id") or ""),
                mime_type=str(raw.get("file_type") or ""), size_bytes=raw.get("file_size"),
                text=str(raw.get("extracted_content") or ""), source=raw,
            ))
    seen = {a["name"] for a in out}
    for key in ("files", "files_v2"):
        for raw in message.get(key) or ():
            if not isinstance(raw, dict):
                continue
            name = str(raw.get("file_name") or "")
            if name and name in seen:
                continue
            seen.add(name)
            kind = "image" if str(raw.get("file_kind") or "") == "image" else "file"
            out.append(attachment(name, kind=kind, ref=str(raw.get("file_uuid") or ""),
                                  source=raw))
    return out


def _message_drafts(
    sid: str, parent: str | None, message: dict[str, Any], parent_calls: list[dict[str, Any]]
) -> list[Draft]:
    sender = message.get("sender")
    created = parse_time(message.get("created_at"))
    meta: dict[str, Any] = imported_from(FORMAT, sid)
    attachments = _attachments(message)
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
    # Results at the start of a message answer the calls the message before it made (an
    # API-shaped turn: the calls in one message, their results in the next).
    lead: list[Segment] = []
    while segments and segments[0].kind == "result":
        lead.append(segments.pop(0))
    out = _answers(sid, parent, lead, parent_calls, created)
    rest_has_text = any(s.kind != "result" and (s.text or s.kind == "call") for s in segments)
    if lead and not rest_has_text and not attachments:
        # Nothing but results: the message itself is only the carrier of the chain.
        out.append(Draft(sid, parent, role, "", created_at=created, metadata=meta,
                         skip_reason="only tool results", quiet=True))
        return out
    if role == "assistant" and any(s.kind in ("call", "result") for s in segments):
        return out + expand_segments(FORMAT, sid, parent, segments, name="", created_at=created,
                                     metadata=meta)
    text = "\n\n".join(s.text for s in segments if s.kind == "text" and s.text)
    thinking = "\n\n".join(s.text for s in segments if s.kind == "thinking" and s.text)
    if role == "assistant" and has_claude_markup(text):
        split = split_claude_markup(text)
        text = split.text
        thinking = "\n\n".join(t for t in (thinking, split.thinking) if t)
        if split.artifacts:
            meta[ARTIFACTS_KEY] = [a.as_dict() for a in split.artifacts]
    if thinking:
        meta[REASONING_KEY] = thinking
    draft = Draft(sid, parent, role, text,
                  created_at=created, metadata=meta)
    if "text" not in message and "content" not in message and not attachments:
        draft.skip_reason = "message has no content"
        draft.quiet = True
    return [*out, draft]


def _answers(
    sid: str, parent: str | None, results: list[Segment], calls: list[dict[str, Any]],
    created: float | None,
) -> list[Draft]:
    """Tool nodes for results that answer the calls of `parent`, hanging from it."""
    pending = [c for c in calls if isinstance(c, dict)]
    out: list[Draft] = []
    for number, result in enumerate(results, start=1):
        call = next((c for c in pending if result.call_id and c.get("id") == result.call_id),
                    pending[0] if pending else None)
        if call is not None:
            pending.remove(call)
        meta: dict[str, Any] = imported_from(FORMAT, sid)
        if call is not None:
            meta["tool_call_id"] = call.get("id")
        elif result.call_id:
            meta["tool_call_id"] = result.call_id
        if result.is_error:
            meta["is_error"] = True
        out.append(Draft(
            f"{sid}#answer{number}", parent, "tool", result.text,
            name=result.name or str((call or {}).get("name") or ""),
            input=(call or {}).get("arguments"),
            edge="caller" if call is not None else "predecessor",
            created_at=created, metadata=meta,
        ))
    return out


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
            thought = str(block.get("thinking") or "")
            if not thought:  # some exports keep only the summaries of a long thought
                thought = "\n".join(
                    str(s.get("summary") or "") for s in block.get("summaries") or ()
                    if isinstance(s, dict)
                )
            out.append(Segment("thinking", thought))
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
