"""Open WebUI chat export: `chat.history.messages` keyed by id, linked by `parentId` /
`childrenIds`, HEAD at `currentId`. Older exports with only a `messages` list are linear."""

from __future__ import annotations

import html
import re
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

FORMAT = "openwebui"

_ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant", "system": "system"}
_DETAILS = re.compile(r"<details\b([^>]*)>(.*?)</details>", re.DOTALL)
_ATTR = re.compile(r'(\w+)="([^"]*)"')
_SUMMARY = re.compile(r"<summary>.*?</summary>", re.DOTALL)


def _chat_of(item: Any) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        return None
    chat = item.get("chat")
    if isinstance(chat, dict):
        return chat
    if isinstance(item.get("history"), dict):
        return item
    return None


def looks_like(item: Any) -> bool:
    chat = _chat_of(item)
    if chat is None:
        return False
    history = chat.get("history")
    return (isinstance(history, dict) and "messages" in history) or isinstance(
        chat.get("messages"), list
    )


def parse(data: Any, first_index: int = 0) -> ParsedExport:
    conversations: list[ImportedConversation] = []
    skipped: list[Skipped] = []
    for index, item in enumerate(conversations_of(data), start=first_index):
        chat = _chat_of(item)
        conv_id = ""
        if isinstance(item, dict):
            conv_id = str(item.get("id") or (chat or {}).get("id") or "")
        conv_id = conv_id or f"conversation-{index + 1}"
        if chat is None or not isinstance(item, dict):
            skipped.append(Skipped("conversation has no 'chat' object", conv_id))
            continue
        conversation, skips = _conversation(item, chat, conv_id)
        skipped.extend(skips)
        if conversation is not None:
            conversations.append(conversation)
    return ParsedExport(FORMAT, tuple(conversations), tuple(skipped))


def _conversation(
    item: dict[str, Any], chat: dict[str, Any], conv_id: str
) -> tuple[ImportedConversation | None, list[Skipped]]:
    history = mapping_of(chat.get("history"))
    raw = history.get("messages")
    head: Any = history.get("currentId")
    entries: list[tuple[str, Any]]
    linear = False
    if isinstance(raw, dict) and raw:
        entries = [(str(k), v) for k, v in raw.items()]
    elif isinstance(chat.get("messages"), list):
        entries = [
            (str(m.get("id") or f"{conv_id}#{i + 1}") if isinstance(m, dict) else
             f"{conv_id}#{i + 1}", m)
            for i, m in enumerate(chat["messages"])
        ]
        linear = not any(isinstance(m, dict) and "parentId" in m for _, m in entries)
        head = None
    else:
        entries = []

    # A message without `parentId` is found through its parent's `childrenIds`.
    listed_parent: dict[str, str] = {}
    for key, message in entries:
        if isinstance(message, dict):
            for child in message.get("childrenIds") or ():
                listed_parent.setdefault(str(child), key)

    models = chat.get("models")
    default_model = str(models[0]) if isinstance(models, list) and models else ""
    drafts: list[Draft] = []
    previous: str | None = None
    for key, message in entries:
        if not isinstance(message, dict):
            drafts.append(Draft(key, previous, "user", skip_reason="malformed message"))
            continue
        sid = str(message.get("id") or key)
        if linear:
            parent = previous
        elif "parentId" in message:
            link = message.get("parentId")
            parent = str(link) if link not in (None, "") else None
        else:
            parent = listed_parent.get(sid)
        drafts.extend(_message_drafts(sid, parent, message, default_model))
        previous = sid
    title = str(item.get("title") or chat.get("title") or "")
    return assemble(
        FORMAT,
        source_id=conv_id,
        title=title,
        created_at=parse_time(item.get("created_at", chat.get("timestamp"))),
        updated_at=parse_time(item.get("updated_at")),
        model=default_model,
        drafts=drafts,
        head=str(head) if isinstance(head, str | int) and head != "" else None,
    )


def _message_drafts(
    sid: str, parent: str | None, message: dict[str, Any], default_model: str
) -> list[Draft]:
    role = _ROLES.get(str(message.get("role") or ""))
    if role is None:
        return [Draft(sid, parent, "user",
                      skip_reason=f"unknown role {message.get('role')!r}")]
    meta: dict[str, Any] = imported_from(FORMAT, sid)
    name = ""
    if role == "assistant":
        model = message.get("model") or default_model
        if isinstance(model, str) and model:
            name = model
            meta["model"] = model
    if message.get("done") is False:
        meta["interrupted"] = True
    if message.get("error"):
        meta["error"] = message["error"]
    usage = message.get("usage")
    info = message.get("info")
    if not usage and isinstance(info, dict):
        usage = info.get("usage") or info  # older versions keep token stats in `info`
    if usage:
        meta["usage"] = usage
    if message.get("files"):
        meta["attachments"] = message["files"]
    created = parse_time(message.get("timestamp"))

    if role == "system":
        text = as_text(message.get("content"))
        return [Draft(sid, parent, "system", None, input=text, created_at=created,
                      metadata=meta)]
    segments = _segments(message)
    if role == "assistant" and any(s.kind in ("call", "result") for s in segments):
        return expand_segments(FORMAT, sid, parent, segments, name=name, created_at=created,
                               metadata=meta)
    text = "\n\n".join(s.text for s in segments if s.kind == "text" and s.text)
    thinking = "\n\n".join(s.text for s in segments if s.kind == "thinking" and s.text)
    if thinking:
        meta[REASONING_KEY] = thinking
    draft = Draft(sid, parent, role, text, name=name, created_at=created, metadata=meta)
    if "content" not in message and "output" not in message:
        draft.skip_reason = "message has no content"
    return [draft]


def _segments(message: dict[str, Any]) -> list[Segment]:
    output = message.get("output")
    if isinstance(output, list) and output:
        return _output_segments(output)
    content = message.get("content")
    if isinstance(content, str):
        return _content_segments(content)
    return [Segment("text", as_text(content))]


def _output_segments(output: list[Any]) -> list[Segment]:
    """The structured record newer Open WebUI versions keep beside `content`."""
    out: list[Segment] = []
    for entry in output:
        if not isinstance(entry, dict):
            continue
        kind = entry.get("type")
        if kind == "message":
            out.append(Segment("text", as_text(entry.get("content"))))
        elif kind == "reasoning":
            out.append(Segment("thinking", as_text(entry.get("content") or entry.get("summary"))))
        elif kind == "function_call":
            out.append(Segment("call", call_id=str(entry.get("call_id") or entry.get("id") or ""),
                               name=str(entry.get("name") or ""),
                               arguments=entry.get("arguments")))
        elif kind == "function_call_output":
            out.append(Segment("result", as_text(entry.get("output")),
                               call_id=str(entry.get("call_id") or ""),
                               is_error=entry.get("status") == "failed"))
    return out


def _content_segments(content: str) -> list[Segment]:
    """Plain `content`, where reasoning and tool calls are folded into `<details>` blocks."""
    out: list[Segment] = []
    cursor = 0
    for match in _DETAILS.finditer(content):
        before = content[cursor:match.start()].strip()
        if before:
            out.append(Segment("text", before))
        cursor = match.end()
        attrs = {k: html.unescape(v) for k, v in _ATTR.findall(match.group(1))}
        inner = html.unescape(_SUMMARY.sub("", match.group(2))).strip()
        kind = attrs.get("type")
        if kind == "reasoning":
            lines = [line[1:].lstrip() if line.startswith(">") else line
                     for line in inner.splitlines()]
            out.append(Segment("thinking", "\n".join(lines).strip()))
        elif kind == "tool_calls":
            cid = attrs.get("id", "")
            out.append(Segment("call", call_id=cid, name=attrs.get("name", ""),
                               arguments=attrs.get("arguments")))
            out.append(Segment("result", attrs.get("result", inner), call_id=cid,
                               name=attrs.get("name", "")))
        else:
            out.append(Segment("text", match.group(0)))
    rest = content[cursor:].strip()
    if rest or not out:
        out.append(Segment("text", rest))
    return out
