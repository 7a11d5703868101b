"""Grok (xAI) data export (`prod-grok-backend.json`): `{"conversations": [{"conversation":
{...}, "responses": [{"response": {...}}]}]}`. Senders come in any case (`human`, `ASSISTANT`,
or a model name), times as ISO strings or BSON dates, branches through
`parent_response_id`; `thinking_trace` is the reply's reasoning."""

from __future__ import annotations

from typing import Any

from ..model import Role
from ..reply import REASONING_KEY
from ._common import (
    Draft,
    assemble,
    attachment,
    imported_from,
    mapping_of,
    parse_time,
)
from .model import ImportedConversation, ParsedExport, Skipped

FORMAT = "grok"


def looks_like(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    if isinstance(item.get("conversations"), list):
        return any(_is_conversation(c) for c in item["conversations"][:50])
    return _is_conversation(item)


def _is_conversation(item: Any) -> bool:
    return (isinstance(item, dict) and isinstance(item.get("conversation"), dict)
            and isinstance(item.get("responses"), list))


def _conversations(data: Any) -> list[Any]:
    if isinstance(data, dict) and isinstance(data.get("conversations"), list):
        return list(data["conversations"])
    return data if isinstance(data, list) else [data]


def grok_time(value: Any) -> float | None:
    """A time as Grok writes it: ISO 8601, or a BSON date `{"$date": {"$numberLong": ms}}`."""
    if isinstance(value, dict):
        inner = value.get("$date", value)
        if isinstance(inner, dict):
            inner = inner.get("$numberLong", inner.get("$numberDouble"))
        return parse_time(inner)
    return parse_time(value)


def parse(data: Any, first_index: int = 0) -> ParsedExport:
    conversations: list[ImportedConversation] = []
    skipped: list[Skipped] = []
    for index, item in enumerate(_conversations(data), start=first_index):
        header = mapping_of(mapping_of(item).get("conversation"))
        conv_id = str(header.get("id") or "") or f"conversation-{index + 1}"
        responses = mapping_of(item).get("responses")
        if not isinstance(responses, list):
            skipped.append(Skipped("conversation has no 'responses' list", conv_id,
                                   str(header.get("title") or "")))
            continue
        conversation, skips = _conversation(header, conv_id, responses)
        skipped.extend(skips)
        if conversation is not None:
            conversations.append(conversation)
    return ParsedExport(FORMAT, tuple(conversations), tuple(skipped))


def _conversation(header: dict[str, Any], conv_id: str, responses: list[Any]) -> tuple[
        ImportedConversation | None, list[Skipped]]:
    rows: list[tuple[float, int, dict[str, Any]]] = []
    for index, wrapped in enumerate(responses):
        response = mapping_of(wrapped).get("response", wrapped)
        if isinstance(response, dict):
            at = grok_time(_field(response, "create_time"))
            rows.append((at if at is not None else float("inf"), index, response))
    rows.sort(key=lambda r: (r[0], r[1]))
    # A response is named by `_id` in some exports and `response_id` in others, and its
    # parent by either: every name it goes by leads to it.
    sids = [_ids(response)[0] if _ids(response) else f"{conv_id}#{index + 1}"
            for index, (_, _, response) in enumerate(rows)]
    alias = {name: sid for sid, (_, _, response) in zip(sids, rows, strict=True)
             for name in _ids(response)}
    drafts: list[Draft] = []
    previous: str | None = None
    for sid, (_, _, response) in zip(sids, rows, strict=True):
        if "parent_response_id" in response or "parentResponseId" in response:
            raw_parent = _field(response, "parent_response_id")
            parent = alias.get(str(raw_parent), str(raw_parent)) if raw_parent else None
        else:
            parent = previous  # older exports: the responses in time order
        drafts.append(_draft(sid, parent, response))
        previous = sid
    current = next((str(header[k]) for k in _CURRENT if header.get(k)), None)
    return assemble(
        FORMAT,
        source_id=conv_id,
        title=str(header.get("title") or ""),
        created_at=grok_time(_field(header, "create_time")),
        updated_at=grok_time(_field(header, "modify_time")),
        model="",
        drafts=drafts,
        head=alias.get(current, current) if current else None,
    )


# Where the conversation says its open branch ends, when it does (else the newest tip).
_CURRENT = ("current_response_id", "currentResponseId", "leaf_response_id", "leafResponseId")


def _ids(response: dict[str, Any]) -> list[str]:
    names = (response.get(k) for k in ("response_id", "responseId", "_id", "id"))
    return list(dict.fromkeys(str(n) for n in names if n not in (None, "")))


def _field(item: dict[str, Any], snake: str) -> Any:
    """A field in snake_case or, as the web API writes it, camelCase."""
    if snake in item:
        return item[snake]
    head, *rest = snake.split("_")
    return item.get(head + "".join(w.capitalize() for w in rest))


def _draft(sid: str, parent: str | None, response: dict[str, Any]) -> Draft:
    sender = str(response.get("sender") or "").strip().lower()
    role: Role = "user" if sender in ("human", "user") else "assistant"
    meta: dict[str, Any] = imported_from(FORMAT, sid)
    model = response.get("model")
    name = ""
    if role == "assistant":
        if isinstance(model, str) and model:
            meta["model"] = name = model
        elif sender not in ("assistant", ""):
            meta["model"] = name = sender  # some responses name the model as the sender
        traces = [str(_field(response, "thinking_trace") or "")] + [
            str(t.get("thinking_trace") or "")
            for t in response.get("agent_thinking_traces") or () if isinstance(t, dict)
        ]
        reasoning = "\n\n".join(t for t in traces if t.strip())
        if reasoning:
            meta[REASONING_KEY] = reasoning
        if response.get("error"):
            meta["error"] = str(response["error"])
    attachments = [
        attachment(str(a.get("name") or a.get("file_name") or "") if isinstance(a, dict)
                   else "", ref=str(a.get("id") if isinstance(a, dict) else a),
                   source=a)
        for a in response.get("file_attachments") or ()
    ] + [
        attachment(str(url).rsplit("/", 1)[-1], kind="image", ref=str(url))
        for url in response.get("generated_image_urls") or () if url
    ]
    if attachments:
        meta["attachments"] = attachments
    text = str(response.get("message") or "")
    return Draft(sid, parent, role, text, name=name,
                 created_at=grok_time(_field(response, "create_time")), metadata=meta)
