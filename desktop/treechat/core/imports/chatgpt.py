"""ChatGPT data export (`conversations.json`, or today's `conversations-NNN.json` files): each
conversation's `mapping` tree, every branch kept, HEAD at `current_node`, tool traffic (code,
browsing, `web.run`, canvas) paired to the call that caused it, the model's `thoughts` and
`reasoning_recap` folded into the reply they led to as its reasoning, images and files named
by placeholders (which the importer fills with the file when the export's zip carries it)."""

from __future__ import annotations

import json
from typing import Any

from ..model import Role
from ..reply import REASONING_KEY
from ._common import (
    Draft,
    assemble,
    attachment,
    attachment_line,
    conversations_of,
    imported_from,
    mapping_of,
    parse_time,
)
from .model import ImportedConversation, ParsedExport, Skipped

FORMAT = "chatgpt"

# Content types that are context the app injected, never shown as a chat bubble.
_CONTEXT_TYPES = frozenset({"user_editable_context", "model_editable_context"})
_INTERRUPTED_STATUS = frozenset({"in_progress", "finished_partial_completion"})
_REASONING_TYPES = frozenset({"thoughts", "reasoning_recap"})
_ASSET_KINDS = {
    "image_asset_pointer": "image",
    "audio_asset_pointer": "audio",
    "video_container_asset_pointer": "video",
    "real_time_user_audio_video_asset_pointer": "audio",
}


def looks_like(item: Any) -> bool:
    return isinstance(item, dict) and "mapping" in item and (
        "current_node" in item or "conversation_id" in item or "create_time" in item
    )


def parse(data: Any, first_index: int = 0) -> ParsedExport:
    """Read a list of conversations, or a single conversation object."""
    conversations: list[ImportedConversation] = []
    skipped: list[Skipped] = []
    for index, item in enumerate(conversations_of(data), start=first_index):
        conv_id = _conversation_id(item, index)
        if not isinstance(item, dict) or not isinstance(item.get("mapping"), dict):
            title = item.get("title", "") if isinstance(item, dict) else ""
            skipped.append(
                Skipped("conversation has no message tree ('mapping')", conv_id, str(title or ""))
            )
            continue
        conversation, skips = _conversation(item, conv_id)
        skipped.extend(skips)
        if conversation is not None:
            conversations.append(conversation)
    return ParsedExport(FORMAT, tuple(conversations), tuple(skipped))


def _conversation_id(item: Any, index: int) -> str:
    if isinstance(item, dict):
        for key in ("conversation_id", "id"):
            value = item.get(key)
            if isinstance(value, str) and value:
                return value
    return f"conversation-{index + 1}"


def _conversation(item: dict[str, Any], conv_id: str) -> tuple[ImportedConversation | None,
                                                               list[Skipped]]:
    mapping: dict[str, Any] = item["mapping"]
    title = str(item.get("title") or "")
    skipped: list[Skipped] = []

    messages: dict[str, dict[str, Any]] = {}
    for key, entry in mapping.items():
        if not isinstance(entry, dict):
            skipped.append(Skipped("malformed entry in the message tree", str(key), title))
            continue
        if isinstance(entry.get("message"), dict):
            messages[str(key)] = entry["message"]

    def parent_of(key: str) -> str | None:
        """Nearest ancestor that carries a message (the tree's root entries carry none)."""
        entry = mapping.get(key)
        parent = entry.get("parent") if isinstance(entry, dict) else None
        seen: set[str] = set()
        while isinstance(parent, str) and parent not in messages and parent in mapping:
            if parent in seen:
                return parent  # a cycle of empty entries: reported by the checks later
            seen.add(parent)
            up = mapping[parent]
            parent = up.get("parent") if isinstance(up, dict) else None
        return parent if isinstance(parent, str) else None

    drafts: dict[str, Draft] = {}
    recipients: dict[str, str] = {}
    for key, message in messages.items():
        draft, recipient = _draft(key, message, parent_of(key))
        drafts[key] = draft
        recipients[key] = recipient

    _pair_tool_traffic(drafts, recipients)
    _fold_reasoning(drafts)

    head = item.get("current_node")
    if isinstance(head, str) and head not in messages and head in mapping:
        head = parent_of(head)
    model = item.get("default_model_slug")
    conversation, skips = assemble(
        FORMAT,
        source_id=conv_id,
        title=title,
        created_at=parse_time(item.get("create_time")),
        updated_at=parse_time(item.get("update_time")),
        model=model if isinstance(model, str) else "",
        drafts=list(drafts.values()),
        head=head if isinstance(head, str) else None,
    )
    return conversation, skipped + skips


def _draft(key: str, message: dict[str, Any], parent: str | None) -> tuple[Draft, str]:
    author = mapping_of(message.get("author"))
    source_role = str(author.get("role") or "")
    source_meta = mapping_of(message.get("metadata"))
    raw_content = message.get("content")
    content = raw_content if isinstance(raw_content, dict) else None
    content_type = str(content.get("content_type") or "") if content is not None else ""
    recipient = str(message.get("recipient") or "all")

    text, extra = _content_text(content)
    meta: dict[str, Any] = {**imported_from(FORMAT, key)}
    if content_type:
        meta["content_type"] = content_type
    meta.update(extra)
    if source_meta:
        meta["chatgpt"] = source_meta
    # Files the user uploaded with a message are listed in its metadata, not its parts.
    uploads = [
        attachment(str(a.get("name") or ""), ref=str(a.get("id") or ""),
                   mime_type=str(a.get("mime_type") or ""), size_bytes=a.get("size"), source=a)
        for a in source_meta.get("attachments") or () if isinstance(a, dict)
    ]
    if uploads:
        meta["attachments"] = [*meta.get("attachments", ()), *uploads]

    hidden = bool(source_meta.get("is_visually_hidden_from_conversation")) or (
        content_type in _CONTEXT_TYPES
    )
    role: Role
    name = ""
    if content_type in _CONTEXT_TYPES or source_role == "system":
        role = "system"
        hidden = hidden or not text.strip()
    elif source_role == "user":
        role = "user"
    elif source_role == "assistant":
        role = "assistant"
        slug = source_meta.get("model_slug")
        if isinstance(slug, str) and slug:
            name = slug
            meta["model"] = slug
        if recipient != "all":
            # A message addressed to a tool is the call itself: its code or JSON arguments
            # are the call's (shown with the tool's result), never the assistant's prose.
            meta["recipient"] = recipient
            meta["tool_calls"] = [{"id": key, "name": recipient, "arguments": _arguments(text)}]
            text = ""
    elif source_role == "tool":
        role = "tool"
        name = str(author.get("name") or "")
        # A tool's card shows its text only, so the files it returned (DALL·E's image) are
        # named there.
        lines = [attachment_line(a) for a in meta.get("attachments", ())]
        text = "\n".join(p for p in (text, *lines) if p)
    else:
        draft = Draft(key, parent, "system", skip_reason=f"unknown author role {source_role!r}")
        return draft, recipient
    if hidden:
        meta["hidden"] = True

    finish = source_meta.get("finish_details")
    if message.get("status") in _INTERRUPTED_STATUS or (
        isinstance(finish, dict) and finish.get("type") == "interrupted"
    ):
        meta["interrupted"] = True

    draft = Draft(
        key,
        parent,
        role,
        output=None if role == "system" else text,
        input=text if role == "system" else None,
        name=name,
        created_at=parse_time(message.get("create_time")),
        metadata=meta,
    )
    if content is None:
        draft.skip_reason = "message has no content"
        draft.quiet = True
    return draft, recipient


def _arguments(text: str) -> Any:
    """A call's arguments: the JSON object `web.run` and canvas calls send, else the text
    (code for `python`, a query for the old browser)."""
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        try:
            return json.loads(stripped)
        except ValueError:
            pass
    return text


def _content_text(content: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """Readable text of a content object, and what else it carries worth keeping."""
    if content is None:
        return "", {}
    ctype = content.get("content_type")
    extra: dict[str, Any] = {}
    if ctype in ("text", "multimodal_text") or (ctype is None and "parts" in content):
        pieces: list[str] = []
        attachments: list[Any] = []
        for part in content.get("parts") or ():
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    pieces.append(part["text"])  # audio transcriptions and the like
                else:
                    attachments.append(_asset(part))  # shown as its card, not as text
        if attachments:
            extra["attachments"] = attachments
        return "\n".join(p for p in pieces if p), extra
    if ctype == "code":
        if content.get("language"):
            extra["language"] = content["language"]
        return str(content.get("text") or ""), extra
    if ctype == "execution_output":
        return str(content.get("text") or ""), extra
    if ctype == "tether_browsing_display":
        parts = [str(content.get(k) or "") for k in ("result", "summary")]
        return "\n\n".join(p for p in parts if p), extra
    if ctype == "tether_quote":
        quote = {k: content[k] for k in ("url", "domain", "title") if content.get(k)}
        if quote:
            extra["quote"] = quote
        header = " — ".join(str(quote[k]) for k in ("title", "url") if k in quote)
        body = str(content.get("text") or "")
        return (f"{header}\n\n{body}" if header else body), extra
    if ctype == "thoughts":
        blocks = []
        for thought in content.get("thoughts") or ():
            if isinstance(thought, dict):
                summary = str(thought.get("summary") or "")
                body = str(thought.get("content") or "")
                blocks.append(f"**{summary}**\n{body}" if summary else body)
        return "\n\n".join(b for b in blocks if b), extra
    if ctype == "reasoning_recap":
        return str(content.get("content") or ""), extra
    if ctype == "user_editable_context":
        parts = [str(content.get(k) or "") for k in ("user_profile", "user_instructions")]
        return "\n\n".join(p for p in parts if p), extra
    if ctype == "model_editable_context":
        return str(content.get("model_set_context") or ""), extra
    for key in ("text", "result", "content"):
        if isinstance(content.get(key), str):
            return str(content[key]), extra
    rest = {k: v for k, v in content.items() if k != "content_type"}
    return (json.dumps(rest, ensure_ascii=False, sort_keys=True) if rest else ""), extra


def _asset(part: dict[str, Any]) -> dict[str, Any]:
    """A placeholder for an image (or audio, video, file) part, named by its asset id."""
    ptype = str(part.get("content_type") or "attachment")
    pointer = str(part.get("asset_pointer") or "")
    asset_id = pointer.split("://", 1)[-1] if pointer else ""
    meta = mapping_of(part.get("metadata"))
    name = str(meta.get("file_name") or part.get("name") or asset_id or ptype)
    return attachment(name, kind=_ASSET_KINDS.get(ptype, "file"), ref=pointer,
                      mime_type=str(part.get("mime_type") or ""),
                      size_bytes=part.get("size_bytes"), source=part)


def _fold_reasoning(drafts: dict[str, Draft]) -> None:
    """Move `thoughts` and `reasoning_recap` messages into the assistant message they led to
    (the nearest assistant below them that is not reasoning itself): its reasoning part in
    `metadata["reasoning"]` (and the recap line in `metadata["reasoning_recap"]`). The
    reasoning messages are then dropped quietly: nothing of them is lost. Reasoning with no
    reply below it (an interrupted answer) stays a node of its own, as reasoning."""
    def kind(d: Draft) -> str:
        return str(d.metadata.get("content_type") or "")

    children: dict[str, list[str]] = {}
    for key, draft in drafts.items():
        if draft.parent is not None:
            children.setdefault(draft.parent, []).append(key)
    index = {key: i for i, key in enumerate(drafts)}
    for key, draft in drafts.items():
        if kind(draft) not in _REASONING_TYPES or draft.skip_reason is not None:
            continue
        if draft.parent is not None and drafts.get(draft.parent) is not None and kind(
            drafts[draft.parent]
        ) in _REASONING_TYPES:
            continue  # folded with the first message of its run
        run: list[Draft] = [draft]
        replies: list[Draft] = []
        frontier = [key]
        seen = {key}
        while frontier and not replies:
            below: list[str] = []
            for k in frontier:
                for child in sorted(children.get(k, ()), key=index.__getitem__):
                    if child in seen:
                        continue
                    seen.add(child)
                    node = drafts[child]
                    if node.role == "assistant" and kind(node) in _REASONING_TYPES:
                        run.append(node)
                        below.append(child)
                    elif node.role == "assistant" and node.skip_reason is None:
                        replies.append(node)
                    elif node.role in ("system", "tool") or node.metadata.get("hidden"):
                        below.append(child)
            frontier = below
        thoughts = "\n\n".join(str(d.output or "") for d in run
                                if kind(d) == "thoughts" and d.output)
        recap = "\n".join(str(d.output or "") for d in run
                          if kind(d) == "reasoning_recap" and d.output)
        if not replies:
            for d in run:
                d.metadata[REASONING_KEY] = str(d.output or "")
                d.output = ""
            continue
        for reply in replies:
            if thoughts:
                earlier = reply.metadata.get(REASONING_KEY)
                reply.metadata[REASONING_KEY] = (
                    f"{earlier}\n\n{thoughts}" if isinstance(earlier, str) and earlier
                    else thoughts
                )
            if recap:
                reply.metadata["reasoning_recap"] = recap
        for d in run:
            d.skip_reason, d.quiet = "reasoning, kept with the reply it led to", True


def _pair_tool_traffic(drafts: dict[str, Draft], recipients: dict[str, str]) -> None:
    """Hang each tool message from the assistant message that called it (a call edge with
    `tool_call_id`), and let the turn continue from that assistant, as Treechat's own
    agent loop writes it. A tool message nobody called stays on the conversation edge."""
    caller_of: dict[str, str] = {}
    for key, draft in drafts.items():
        if draft.role != "tool":
            continue
        seen: set[str] = set()
        up = draft.parent
        while up is not None and up in drafts and up not in seen:
            seen.add(up)
            above = drafts[up]
            if above.role == "tool":
                up = above.parent
                continue
            if above.role == "assistant" and recipients.get(up, "all") != "all":
                caller_of[key] = up
            break

    results: dict[str, list[str]] = {}
    for key, caller in caller_of.items():
        results.setdefault(caller, []).append(key)
    index = {key: i for i, key in enumerate(drafts)}
    for caller, keys in results.items():
        keys.sort(key=lambda k: (drafts[k].created_at or 0.0, index[k]))
        (call,) = drafts[caller].metadata["tool_calls"]
        for number, key in enumerate(keys, start=1):
            tool = drafts[key]
            tool.parent = caller
            tool.edge = "caller"
            tool.input = call["arguments"]
            # One call can return several messages (a page, then quotes); each keeps its
            # own id so none replaces another, and the first answers the call itself.
            tool.metadata["tool_call_id"] = caller if number == 1 else f"{caller}#{number}"
    for key, draft in drafts.items():
        if key not in results and recipients.get(key, "all") != "all" and draft.metadata.get(
            "tool_calls"
        ):
            # A call no tool message answers has no card to show what it sent: it says so
            # itself, as the export wrote it.
            (call,) = draft.metadata["tool_calls"]
            arguments = call["arguments"]
            draft.output = arguments if isinstance(arguments, str) else json.dumps(
                arguments, ensure_ascii=False, indent=2)

    def anchor(key: str) -> str:
        seen: set[str] = set()
        while key in caller_of and key not in seen:
            seen.add(key)
            key = caller_of[key]
        return key

    for key, draft in drafts.items():
        if key in caller_of or draft.parent is None:
            continue
        if draft.parent in caller_of:
            draft.parent = anchor(draft.parent)
