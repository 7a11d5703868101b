"""render(commit, composition) -> messages, a pure function: L0 constant -> L1 situation ->
summaries -> items -> volatile digest. Tool calls keep valid pairing or become text;
Anthropic requests get at most four cache breakpoints at stable boundaries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .attachments import AttachmentPayload, AttachmentRef
from .commit import ContextCommit, ContextItem
from .summarize import SUMMARIES_NOTE

Category = Literal["system", "summaries", "messages", "tool_results", "attachments"]
CATEGORIES: tuple[Category, ...] = ("system", "summaries", "messages", "tool_results",
                                    "attachments")
MAX_BREAKPOINTS = 4
_EPHEMERAL = {"type": "ephemeral"}


@dataclass(frozen=True, slots=True)
class Composition:
    """What surrounds the history: L0 (identity, global instructions; constant for the
    session), L1 (situation: workspace instructions, memory), the volatile digest sent
    last, and whether to place Anthropic cache breakpoints."""

    system_prompt: str = ""
    situation: str = ""
    digest: str = ""
    cache_breakpoints: bool = False
    # What the model receives for each attachment the items name, by hash (prepared by the
    # engine from the store; a file missing here is rendered as a note naming it).
    files: Mapping[str, AttachmentPayload] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RenderedMessage:
    message: dict[str, Any]
    category: Category
    position: int = -1  # the commit item it came from (-1: system or digest)
    # Of the message's tokens, those its attachments take (counted under "attachments"),
    # and those a text count cannot see (images, priced by the provider's rule).
    attachment_tokens: int = 0
    unseen_tokens: int = 0


def render(commit: ContextCommit | None, composition: Composition) -> tuple[dict[str, Any], ...]:
    """The provider messages (OpenAI chat format) for a commit. Same input, same bytes."""
    return tuple(part.message for part in render_parts(commit, composition))


def render_parts(
    commit: ContextCommit | None, composition: Composition
) -> tuple[RenderedMessage, ...]:
    """`render` with each message's category and source position (for occupancy)."""
    parts: list[RenderedMessage] = []
    system = _system_message(composition)
    if system is not None:
        parts.append(RenderedMessage(system, "system"))
    n_summaries = 0
    if commit is not None:
        items = commit.items
        summaries = sorted((p for p in commit.live if items[p].is_summary),
                           key=lambda p: (items[p].order, p))
        for k, p in enumerate(summaries):
            text = items[p].rendered
            if k == 0 and not text.startswith("["):  # (one stored with its own note has it)
                text = f"{SUMMARIES_NOTE}\n{text}"
            parts.append(RenderedMessage({"role": "user", "content": text}, "summaries", p))
        n_summaries = len(summaries)
        parts.extend(_item_messages(items, [p for p in commit.live if not items[p].is_summary],
                                    composition.files))
    if composition.digest:
        parts.append(RenderedMessage({"role": "user", "content": composition.digest}, "messages"))
    if composition.cache_breakpoints:
        parts = _with_breakpoints(parts, commit, system is not None, n_summaries,
                                  bool(composition.digest))
    return tuple(parts)


def _system_message(composition: Composition) -> dict[str, Any] | None:
    texts = [t for t in (composition.system_prompt, composition.situation) if t]
    if not texts:
        return None
    if not composition.cache_breakpoints:
        return {"role": "system", "content": "\n\n".join(texts)}
    blocks: list[dict[str, Any]] = [{"type": "text", "text": t} for t in texts]
    # One mark at the end of L0+L1 covers the tool schemas too (Anthropic orders them first).
    blocks[-1]["cache_control"] = dict(_EPHEMERAL)
    return {"role": "system", "content": blocks}


def _label(it: ContextItem) -> str:
    if it.role == "system":
        return "[System note]"
    if it.role == "runtime":
        return "[Note]"
    return ""


def _tool_text(it: ContextItem, where: str = "") -> str:
    return f"[Tool {it.tool_name or 'call'}({it.tool_args}){where} returned]\n{it.rendered}"


def _item_messages(
    items: tuple[ContextItem, ...], positions: list[int],
    files: Mapping[str, AttachmentPayload] | None = None,
) -> list[RenderedMessage]:
    out: list[RenderedMessage] = []
    i = 0
    n = len(positions)
    while i < n:
        p = positions[i]
        it = items[p]
        if it.attached_from:
            out.append(RenderedMessage({"role": "user", "content": _attached_text(it)},
                                       "attachments", p))
            i += 1
            continue
        if it.role == "assistant":
            # The tool results that directly follow their call form a valid pair; a re-run
            # of the same call id supersedes the earlier one, which is kept as text.
            j = i + 1
            run: list[int] = []
            while j < n:
                t = items[positions[j]]
                if t.role != "tool" or t.attached_from or t.call_of != it.source_node_id:
                    break
                run.append(positions[j])
                j += 1
            last_by_id = {items[q].tool_call_id: q for q in run}
            calls = [q for q in run if last_by_id[items[q].tool_call_id] == q]
            superseded = [q for q in run if last_by_id[items[q].tool_call_id] != q]
            message: dict[str, Any] = {"role": "assistant", "content": it.rendered or None}
            if calls:
                message["tool_calls"] = [
                    {
                        "id": items[q].tool_call_id,
                        "type": "function",
                        "function": {"name": items[q].tool_name, "arguments": items[q].tool_args},
                    }
                    for q in calls
                ]
            if calls or it.rendered:
                out.append(RenderedMessage(message, "messages", p))
            for q in calls:
                out.append(RenderedMessage(
                    {"role": "tool", "tool_call_id": items[q].tool_call_id,
                     "content": items[q].rendered or "(no output)"},
                    "tool_results", q))
            for q in superseded:
                out.append(RenderedMessage({"role": "user", "content": _tool_text(items[q])},
                                           "tool_results", q))
            i = j
            continue
        if it.role == "tool":
            # Its call is not in the request (folded, pinned apart, interrupted): as text.
            out.append(RenderedMessage({"role": "user", "content": _tool_text(it)},
                                       "tool_results", p))
            i += 1
            continue
        label = _label(it)
        text = f"{label} {it.rendered}" if label else it.rendered
        if it.files:
            out.append(_with_files(text, it.files, files or {}, p))
        else:
            out.append(RenderedMessage({"role": "user", "content": text}, "messages", p))
        i += 1
    return out


def _with_files(text: str, refs: tuple[AttachmentRef, ...],
                files: Mapping[str, AttachmentPayload], position: int) -> RenderedMessage:
    """A user message with attachments: its text, then each file's blocks, in order."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    counted = unseen = 0
    for ref in refs:
        payload = files.get(ref.sha256)
        if payload is None:
            blocks.append({"type": "text", "text": f"[attachment {ref.name} ({ref.media_type})]"})
            continue
        blocks.extend(dict(b) for b in payload.blocks)
        counted += payload.text_tokens
        unseen += payload.image_tokens
    return RenderedMessage({"role": "user", "content": blocks}, "messages", position,
                           attachment_tokens=counted + unseen, unseen_tokens=unseen)


def _attached_text(it: ContextItem) -> str:
    if it.role == "tool":
        return _tool_text(it, " in the attached branch")
    if it.role == "runtime" or it.is_summary:
        return it.rendered  # the attach markers and summaries already say what they are
    return f"[{it.role.capitalize()}, attached branch] {it.rendered}"


# --- Anthropic cache breakpoints --------------------------------------------------------


def _markable(message: dict[str, Any]) -> bool:
    content = message.get("content")
    if isinstance(content, str):
        return bool(content)
    if isinstance(content, list):
        return any(isinstance(b, dict) and b.get("text") for b in content)
    return False


def _mark(message: dict[str, Any]) -> dict[str, Any]:
    out = dict(message)
    content = out.get("content")
    if isinstance(content, str):
        out["content"] = [{"type": "text", "text": content, "cache_control": dict(_EPHEMERAL)}]
    elif isinstance(content, list):
        blocks = [dict(b) if isinstance(b, dict) else b for b in content]
        for b in reversed(blocks):
            if isinstance(b, dict) and b.get("text"):
                b["cache_control"] = dict(_EPHEMERAL)
                break
        out["content"] = blocks
    return out


def _nearest_markable(parts: list[RenderedMessage], index: int, floor: int) -> int | None:
    """`index` itself, or the tool result right after a text-less tool call, or the closest
    earlier message that has text."""
    if _markable(parts[index].message):
        return index
    if index + 1 < len(parts) and parts[index + 1].message.get("role") == "tool" and _markable(
        parts[index + 1].message
    ):
        return index + 1
    for k in range(index - 1, floor - 1, -1):
        if _markable(parts[k].message):
            return k
    return None


def _with_breakpoints(
    parts: list[RenderedMessage],
    commit: ContextCommit | None,
    has_system: bool,
    n_summaries: int,
    has_digest: bool,
) -> list[RenderedMessage]:
    """Marks, in order of stability: end of L0/L1 (done on the system message), end of the
    last summary, the aging frontier (items before it never change again), and the last
    message before the volatile digest (or the last message). At most four."""
    first_history = 1 if has_system else 0
    marks: list[int] = []
    if n_summaries:
        marks.append(first_history + n_summaries - 1)
    end = len(parts) - (2 if has_digest else 1)
    if commit is not None:
        frontier = None
        for k in range(end, first_history + n_summaries - 1, -1):
            pos = parts[k].position
            if 0 <= pos < commit.aged_through:
                frontier = k
                break
        if frontier is not None:
            marks.append(frontier)
    if end >= first_history:
        marks.append(end)
    budget = MAX_BREAKPOINTS - (1 if has_system else 0)
    chosen: list[int] = []
    for m in marks:
        found = _nearest_markable(parts, m, first_history)
        if found is not None and found not in chosen:
            chosen.append(found)
    # Keep the newest marks when over budget: they cover the most tokens.
    chosen = sorted(chosen)[-budget:] if budget > 0 else []
    out = list(parts)
    for k in chosen:
        out[k] = replace(parts[k], message=_mark(parts[k].message))
    return out
