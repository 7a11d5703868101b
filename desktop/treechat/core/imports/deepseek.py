"""DeepSeek data export (`conversations.json`): a `mapping` tree like ChatGPT's, each message a
list of `fragments` — REQUEST (the user's text), THINK (reasoning), RESPONSE (the answer),
SEARCH (web results) — with `inserted_at` times. Editing the first message makes another root:
every root is kept, and HEAD goes to the newest tip (the file names none).

Also the chat history as DeepSeek's web app receives it from its API
(`{"code": 0, "data": {"biz_data": {"chat_session": {...}, "chat_messages": [...]}}}`): the
messages a `parent_id` tree, older ones with `content` and `thinking_content` instead of
fragments, and HEAD the session's `current_message_id`, the branch the user was on."""

from __future__ import annotations

from typing import Any

from ..model import Role
from ..reply import REASONING_KEY
from ._common import (
    Draft,
    Segment,
    assemble,
    attachment,
    conversations_of,
    expand_segments,
    imported_from,
    mapping_of,
    parse_time,
)
from .model import ImportedConversation, ParsedExport, Skipped

FORMAT = "deepseek"


def looks_like(item: Any) -> bool:
    if _api_chat(item) is not None:
        return True
    if not isinstance(item, dict) or not isinstance(item.get("mapping"), dict):
        return False
    if "inserted_at" in item:
        return True
    for entry in list(item["mapping"].values())[:5]:
        message = entry.get("message") if isinstance(entry, dict) else None
        if isinstance(message, dict) and isinstance(message.get("fragments"), list):
            return True
    return False


def parse(data: Any, first_index: int = 0) -> ParsedExport:
    conversations: list[ImportedConversation] = []
    skipped: list[Skipped] = []
    for index, item in enumerate(conversations_of(data), start=first_index):
        api = _api_chat(item)
        if api is not None:
            conversation, skips = _api_conversation(api, f"conversation-{index + 1}")
            skipped.extend(skips)
            if conversation is not None:
                conversations.append(conversation)
            continue
        fields = mapping_of(item)
        conv_id = str(fields.get("id") or "") or f"conversation-{index + 1}"
        if not isinstance(fields.get("mapping"), dict):
            skipped.append(Skipped("conversation has no message tree ('mapping')", conv_id))
            continue
        conversation, skips = _conversation(fields, conv_id)
        skipped.extend(skips)
        if conversation is not None:
            conversations.append(conversation)
    return ParsedExport(FORMAT, tuple(conversations), tuple(skipped))


def _conversation(item: dict[str, Any], conv_id: str) -> tuple[ImportedConversation | None,
                                                               list[Skipped]]:
    mapping: dict[str, Any] = item["mapping"]
    title = str(item.get("title") or "")
    carriers = {str(k) for k, e in mapping.items()
                if not (isinstance(e, dict) and isinstance(e.get("message"), dict))}
    drafts: list[Draft] = []
    skipped: list[Skipped] = []
    for raw_key, entry in mapping.items():
        key = str(raw_key)
        if not isinstance(entry, dict):
            skipped.append(Skipped("malformed entry in the message tree", key, title))
            continue
        message = entry.get("message")
        if not isinstance(message, dict):
            continue  # the tree's root: its children are the conversation's first messages
        parent = entry.get("parent")
        parent = None if parent is None or str(parent) in carriers else str(parent)
        drafts.extend(_drafts(key, parent, message))
    return _finish(item, conv_id, title, drafts, skipped)


def _finish(item: dict[str, Any], conv_id: str, title: str, drafts: list[Draft],
            skipped: list[Skipped]) -> tuple[ImportedConversation | None, list[Skipped]]:
    conversation, skips = assemble(
        FORMAT,
        source_id=conv_id,
        title=title,
        created_at=parse_time(item.get("inserted_at")),
        updated_at=parse_time(item.get("updated_at")),
        model="",
        drafts=drafts,
        head=None,
    )
    return conversation, skipped + skips


def _drafts(key: str, parent: str | None, message: dict[str, Any]) -> list[Draft]:
    fragments = [f for f in message.get("fragments") or () if isinstance(f, dict)]
    kinds = {str(f.get("type") or "").upper() for f in fragments}
    created = parse_time(message.get("inserted_at"))
    meta: dict[str, Any] = imported_from(FORMAT, key)
    model = message.get("model")
    attachments = [
        attachment(str(f.get("file_name") or f.get("name") or ""), ref=str(f.get("id") or ""),
                   size_bytes=f.get("file_size"), source=f)
        for f in message.get("files") or () if isinstance(f, dict)
    ]
    if attachments:
        meta["attachments"] = attachments
    role: Role = "user" if "REQUEST" in kinds else "assistant"
    if role == "assistant" and isinstance(model, str) and model:
        meta["model"] = model
    segments: list[Segment] = []
    for fragment in fragments:
        kind = str(fragment.get("type") or "").upper()
        content = str(fragment.get("content") or "")
        if kind in ("REQUEST", "RESPONSE"):
            segments.append(Segment("text", content))
        elif kind == "THINK":
            segments.append(Segment("thinking", content))
        elif kind in ("SEARCH", "READ_LINK", "TOOL_SEARCH", "TOOL_OPEN"):
            results = [r for r in fragment.get("results") or () if isinstance(r, dict)]
            text = "\n\n".join(
                " — ".join(str(r.get(k) or "") for k in ("title", "url") if r.get(k))
                + (f"\n{r.get('snippet')}" if r.get("snippet") else "")
                for r in results
            ) or content
            segments.append(Segment("call", name=kind.lower(),
                                    arguments=fragment.get("queries") or content or None))
            segments.append(Segment("result", text, name=kind.lower()))
        elif content:
            segments.append(Segment("text", content))
    name = str(model) if role == "assistant" and isinstance(model, str) else ""
    if role == "assistant" and any(s.kind == "call" for s in segments):
        return expand_segments(FORMAT, key, parent, segments, name=name, created_at=created,
                               metadata=meta)
    text = "\n\n".join(s.text for s in segments if s.kind == "text" and s.text)
    thinking = "\n\n".join(s.text for s in segments if s.kind == "thinking" and s.text)
    if thinking:
        meta[REASONING_KEY] = thinking
    return [Draft(key, parent, role, text, name=name,
                  created_at=created, metadata=meta)]


# --- the web app's API shape ------------------------------------------------------------


def _api_chat(item: Any) -> dict[str, Any] | None:
    """The `biz_data` of an API answer (or that object itself), when `item` is one."""
    inner = mapping_of(mapping_of(item).get("data")).get("biz_data", item)
    inner = mapping_of(inner)
    if isinstance(inner.get("chat_messages"), list) and isinstance(
            inner.get("chat_session"), dict):
        return inner
    return None


def _api_conversation(chat: dict[str, Any], fallback_id: str) -> tuple[
        ImportedConversation | None, list[Skipped]]:
    session = mapping_of(chat.get("chat_session"))
    conv_id = str(session.get("id") or "") or fallback_id
    title = str(session.get("title") or "")
    drafts: list[Draft] = []
    skipped: list[Skipped] = []
    for message in chat["chat_messages"]:
        if not isinstance(message, dict) or message.get("message_id") is None:
            skipped.append(Skipped("a message without an id", "", title))
            continue
        parent = message.get("parent_id")
        drafts.extend(_drafts(str(message["message_id"]),
                              None if parent is None else str(parent), _with_fragments(message)))
    current = session.get("current_message_id")
    conversation, skips = assemble(
        FORMAT,
        source_id=conv_id,
        title=title,
        created_at=parse_time(session.get("inserted_at")),
        updated_at=parse_time(session.get("updated_at")),
        model="",
        drafts=drafts,
        head=None if current is None else str(current),
    )
    return conversation, skipped + skips


def _with_fragments(message: dict[str, Any]) -> dict[str, Any]:
    """An API message as the export writes one: `fragments` made from `role`, `content`,
    `thinking_content` and `search_results` when it has none."""
    user = str(message.get("role") or "").upper() == "USER"
    fragments = [f for f in message.get("fragments") or () if isinstance(f, dict)]
    if not fragments:
        if message.get("thinking_content"):
            fragments.append({"type": "THINK", "content": message["thinking_content"]})
        if message.get("search_results"):
            fragments.append({"type": "SEARCH", "results": message["search_results"]})
        fragments.append({"type": "REQUEST" if user else "RESPONSE",
                          "content": message.get("content") or ""})
    elif user and not any(str(f.get("type") or "").upper() == "REQUEST" for f in fragments):
        fragments = [{"type": "REQUEST", "content": message.get("content") or ""}, *fragments]
    return {**message, "fragments": fragments}
