"""Google AI Studio prompt files (the JSON it saves to Drive, also what Gemini's "export to
Drive" writes): `chunkedPrompt.chunks`, each `{"role": "user" | "model", "text", "isThought"}`.

A file has no ids, so messages are named by what they say and where: the same opening in two
files (AI Studio's "branch from here" copies the prompt) becomes one conversation with two
branches, and a longer export of the same prompt adds only its new turns. Thought chunks are
the reasoning of the model turn they belong to; consecutive chunks of one role are one
message (an image, then the question about it)."""

from __future__ import annotations

import hashlib
from typing import Any

from ..model import Role
from ..reply import REASONING_KEY
from ._common import (
    Draft,
    assemble,
    attachment,
    conversations_of,
    imported_from,
    mapping_of,
)
from .model import ImportedConversation, ParsedExport, Skipped

FORMAT = "aistudio"

_MEDIA = {"driveImage": "image", "inlineImage": "image", "driveDocument": "file",
          "inlineData": "file", "youtubeVideo": "video", "driveVideo": "video"}


def looks_like(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(
        mapping_of(item.get("chunkedPrompt")).get("chunks"), list
    )


def parse(data: Any, first_index: int = 0) -> ParsedExport:
    conversations: list[ImportedConversation] = []
    skipped: list[Skipped] = []
    for index, item in enumerate(conversations_of(data), start=first_index):
        if not looks_like(item):
            skipped.append(Skipped("prompt has no 'chunkedPrompt.chunks' list",
                                   f"prompt-{index + 1}"))
            continue
        conversation, skips = _conversation(item)
        skipped.extend(skips)
        if conversation is not None:
            conversations.append(conversation)
    return ParsedExport(FORMAT, tuple(conversations), tuple(skipped))


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()[:24]


def _turns(chunks: list[Any]) -> list[dict[str, Any]]:
    """Consecutive chunks of one role merged into one turn: text, reasoning, attachments."""
    turns: list[dict[str, Any]] = []
    for chunk in chunks:
        if not isinstance(chunk, dict):
            continue
        role: Role = "assistant" if chunk.get("role") == "model" else "user"
        if not turns or turns[-1]["role"] != role:
            turns.append({"role": role, "text": [], "thoughts": [], "attachments": [],
                          "tokens": 0, "finish": ""})
        turn = turns[-1]
        pieces: list[tuple[str, bool]] = []
        if isinstance(chunk.get("parts"), list):
            for part in chunk["parts"]:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    pieces.append((part["text"], bool(part.get("thought"))))
        elif isinstance(chunk.get("text"), str):
            pieces.append((chunk["text"], bool(chunk.get("isThought"))))
        for text, thought in pieces:
            (turn["thoughts"] if thought or chunk.get("isThought") else turn["text"]).append(text)
        for key, kind in _MEDIA.items():
            media = chunk.get(key)
            if isinstance(media, dict):
                ref = str(media.get("id") or media.get("url") or "")
                turn["attachments"].append(attachment(
                    str(media.get("name") or ref or key), kind=kind, ref=ref,
                    mime_type=str(media.get("mimeType") or ""),
                    data=str(media.get("data") or "") if isinstance(media.get("data"), str)
                    else "",
                    source={k: v for k, v in media.items() if k != "data"},
                ))
        if isinstance(chunk.get("tokenCount"), int):
            turn["tokens"] += chunk["tokenCount"]
        if isinstance(chunk.get("finishReason"), str):
            turn["finish"] = chunk["finishReason"]
    return turns


def _conversation(item: dict[str, Any]) -> tuple[ImportedConversation | None, list[Skipped]]:
    settings = mapping_of(item.get("runSettings"))
    model = str(settings.get("model") or "").removeprefix("models/")
    chunks = list(item["chunkedPrompt"]["chunks"])
    drafts: list[Draft] = []
    system = mapping_of(item.get("systemInstruction"))
    system_text = str(system.get("text") or "") or "\n".join(
        str(p.get("text") or "") for p in system.get("parts") or () if isinstance(p, dict))
    parent: str | None = None
    if system_text.strip():
        parent = "s" + _digest("system", system_text)
        drafts.append(Draft(parent, None, "system", None, input=system_text,
                            metadata=imported_from(FORMAT, parent)))
    for turn in _turns(chunks):
        text = "\n\n".join(t for t in turn["text"] if t)
        reasoning = "\n\n".join(t for t in turn["thoughts"] if t)
        sid = "m" + _digest(parent or "", turn["role"], text, reasoning)
        meta: dict[str, Any] = imported_from(FORMAT, sid)
        if reasoning:
            meta[REASONING_KEY] = reasoning
        if turn["attachments"]:
            meta["attachments"] = turn["attachments"]
        if turn["role"] == "assistant":
            if model:
                meta["model"] = model
            if turn["finish"]:
                meta["finish_reason"] = turn["finish"]
        drafts.append(Draft(sid, parent, turn["role"], text,
                            name=model if turn["role"] == "assistant" else "",
                            metadata=meta))
        parent = sid
    first = next((d.source_id for d in drafts if d.role != "system"), None)
    if first is None:
        return None, [Skipped("prompt has no messages to import", "prompt")]
    return assemble(
        FORMAT,
        source_id="prompt-" + _digest(first),
        title="",
        created_at=None,
        updated_at=None,
        model=model,
        drafts=drafts,
        head=parent,
    )
