"""What every format parser shares: drafts of messages, the checks that turn them into a
well-formed conversation (missing parents, cycles, empty messages), times, tool segments."""

from __future__ import annotations

import heapq
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from ..model import Role
from ..reply import REASONING_KEY
from .model import EdgeKind, ImportedConversation, ImportedMessage, Skipped


@dataclass(slots=True)
class Draft:
    """A message as a parser first reads it; `assemble` validates and freezes it.

    `skip_reason` drops the message (its children hang from its parent instead); a `quiet`
    skip drops something with nothing visible in it, which the summary does not mention.
    """

    source_id: str
    parent: str | None
    role: Role
    output: Any = None
    name: str = ""
    input: Any = None
    edge: EdgeKind = "predecessor"
    created_at: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    reads: tuple[str, ...] = ()
    skip_reason: str | None = None
    quiet: bool = False

    def has_content(self) -> bool:
        if self.role not in ("user", "assistant"):
            return True  # system, tool and runtime records are kept even when empty
        if self.metadata.get("hidden") or self.metadata.get("tool_calls"):
            return True
        if self.metadata.get("attachments") or self.metadata.get(REASONING_KEY):
            return True
        out = self.output
        if out is None:
            return False
        if isinstance(out, str):
            return bool(out.strip())
        return bool(out)


def imported_from(fmt: str, source_id: str) -> dict[str, Any]:
    return {"imported_from": {"format": fmt, "id": source_id}}


# --- attachments ----------------------------------------------------------------------------
# A file or image an export mentions is first a placeholder in `metadata["attachments"]`: what
# it is called and where the source app kept it (`ref`), marked `"placeholder": True`. The
# message shows it as a card of its own, so its text does not name it as well. When the export
# carries the file (a member of its zip, text the app extracted from it, bytes inline), the
# importer turns the placeholder into a real attachment; otherwise it stays as it is.


def attachment(
    name: str,
    *,
    kind: str = "file",
    ref: str = "",
    mime_type: str = "",
    size_bytes: int | None = None,
    text: str = "",
    data: str = "",
    source: Any = None,
) -> dict[str, Any]:
    """A placeholder for a file or image an imported message carried; `data` is its bytes
    when the export holds them inline (base64), taken out when the file is imported."""
    out: dict[str, Any] = {"placeholder": True, "kind": kind, "name": name or ref or kind}
    if ref:
        out["ref"] = ref
    if mime_type:
        out["mime_type"] = mime_type
    if isinstance(size_bytes, int) and not isinstance(size_bytes, bool) and size_bytes >= 0:
        out["size_bytes"] = size_bytes
    if text:
        out["text"] = text  # what the source app extracted from the file, kept whole
    if data:
        out["data"] = data
    if source is not None:
        out["source"] = source
    return out


def attachment_line(att: dict[str, Any]) -> str:
    """How a placeholder reads as a line of text (`[image: chart.png]`): how a tool's result,
    whose card shows no files, names the ones it returned; left out of titles, and of a
    message once its file is attached."""
    return f"[{att.get('kind') or 'file'}: {att.get('name') or att.get('ref') or '?'}]"


# --- times --------------------------------------------------------------------------------


def parse_time(value: Any) -> float | None:
    """Seconds since the epoch from a number (s, ms, µs or ns) or an ISO 8601 string."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
        if not math.isfinite(number) or number < 0:
            return None
        # Exports disagree on the unit; a date after 5138 in seconds is really finer.
        for scale in (1.0, 1e3, 1e6, 1e9):
            if number / scale < 1e11:
                return number / scale
        return None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            return parse_time(float(text))
        except ValueError:
            pass
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    return None


# --- assembling a conversation ------------------------------------------------------------


def assemble(
    fmt: str,
    *,
    source_id: str,
    title: str,
    created_at: float | None,
    updated_at: float | None,
    model: str,
    drafts: Sequence[Draft],
    head: str | None,
    exact: bool = False,
) -> tuple[ImportedConversation | None, list[Skipped]]:
    """Check and order a conversation's drafts.

    Duplicate ids, empty messages, missing parents and parent cycles become reported skips;
    what remains is ordered parent before child, siblings by time. HEAD falls back to the
    newest tip when the file names none. `exact` (Treechat's own files) keeps file order,
    empty messages, and the title, model and HEAD exactly as written.
    """
    skipped: list[Skipped] = []

    def skip(reason: str, sid: str) -> None:
        skipped.append(Skipped(reason, sid, title or source_id))

    by_id: dict[str, Draft] = {}
    order: dict[str, int] = {}
    for draft in drafts:
        if draft.source_id in by_id:
            skip("another message in this conversation has the same id", draft.source_id)
            continue
        by_id[draft.source_id] = draft
        order[draft.source_id] = len(order)

    # Dropped messages are spliced out: their children hang from their parent instead.
    # An empty message is dropped quietly: there is nothing in it to miss, and the chain it
    # carried (an empty reply whose child is the real answer) is kept by the splice.
    dropped: dict[str, str | None] = {}
    for draft in by_id.values():
        reason = draft.skip_reason
        quiet = draft.quiet
        if reason is None and not exact and not draft.has_content():
            reason, quiet = "message has no content", True
        if reason is not None:
            if not quiet:
                skip(reason, draft.source_id)
            dropped[draft.source_id] = draft.parent

    def through_dropped(pid: str | None) -> str | None:
        seen: set[str] = set()
        while pid is not None and pid in dropped and pid not in seen:
            seen.add(pid)
            pid = dropped[pid]
        return pid

    kept: dict[str, Draft] = {}
    for sid, draft in by_id.items():
        if sid in dropped:
            continue
        parent = through_dropped(draft.parent)
        if parent != draft.parent:
            draft.parent = parent
            draft.edge = "predecessor"  # the call it answered is gone
        kept[sid] = draft

    _drop_unrooted(kept, skip)

    if not kept:
        if not skipped or all(s.source_id != source_id for s in skipped):
            skip("conversation has no messages to import", source_id)
        return None, skipped

    times = _effective_times(kept, created_at)
    ordered = _topological(kept, times, order, chronological=not exact)
    nodes = tuple(
        ImportedMessage(
            source_id=d.source_id,
            parent_source_id=d.parent,
            edge=d.edge if d.parent is not None else "predecessor",
            role=d.role,
            name=d.name,
            input=d.input,
            output=d.output,
            created_at=times[d.source_id],
            metadata=d.metadata,
            reads=d.reads,
        )
        for d in ordered
    )
    head_id = through_dropped(head)
    if not exact or (head_id is not None and head_id not in {n.source_id for n in nodes}):
        head_id = _resolve_head(nodes, head_id)
    conv_created = created_at if created_at is not None else min(n.created_at for n in nodes)
    conv_updated = updated_at if updated_at is not None else max(n.created_at for n in nodes)
    if not model and not exact:
        model = _last_model(nodes)
    if not exact:
        title = title.strip() or _title_from(nodes) or "Imported chat"
    conversation = ImportedConversation(
        source_id=source_id,
        title=title,
        created_at=conv_created,
        model=model,
        nodes=nodes,
        head_source_id=head_id,
        source_format=fmt,
        updated_at=conv_updated if exact else max(conv_updated, conv_created),
    )
    return conversation, skipped


def _drop_unrooted(kept: dict[str, Draft], skip: Any) -> None:
    """Remove (and report) messages whose parent chain never reaches a root: a parent that
    is not in the file, or a cycle in the parent links. Their descendants go with them."""
    status: dict[str, str] = {}  # "ok" | reason
    cause: dict[str, str] = {}
    for start in kept:
        path: list[str] = []
        on_path: set[str] = set()
        sid: str | None = start
        verdict = "ok"
        culprit = ""
        while sid is not None and sid not in status:
            if sid in on_path:
                verdict, culprit = "cycle", sid
                break
            path.append(sid)
            on_path.add(sid)
            parent = kept[sid].parent
            if parent is not None and parent not in kept:
                verdict, culprit = "missing", sid
                break
            sid = parent
        else:
            if sid is not None:
                verdict = status[sid]
                culprit = cause.get(sid, "")
        for node in path:
            status[node] = verdict
            if verdict != "ok":
                cause[node] = culprit
    for sid in [s for s, v in status.items() if v != "ok"]:
        draft = kept.pop(sid)
        culprit = cause[sid]
        if status[sid] == "cycle":
            skip(f"parent links form a cycle (through message {culprit})", sid)
        elif sid == culprit:
            skip(f"its parent message {draft.parent} is not in the file", sid)
        else:
            skip(f"it hangs below message {culprit}, whose parent is not in the file", sid)


def _effective_times(kept: dict[str, Draft], fallback: float | None) -> dict[str, float]:
    """A message without a time takes its parent's (else the conversation's, else 0)."""
    times: dict[str, float] = {}
    for start in kept:
        chain: list[str] = []
        sid: str | None = start
        base = fallback if fallback is not None else 0.0
        while sid is not None and sid not in times:
            own = kept[sid].created_at
            if own is not None:
                times[sid] = own
                break
            chain.append(sid)
            sid = kept[sid].parent
        if sid is not None:
            base = times[sid]
        for node in chain:
            times[node] = base
    return times


def _topological(
    kept: dict[str, Draft], times: dict[str, float], order: dict[str, int], *,
    chronological: bool
) -> list[Draft]:
    children: dict[str, list[str]] = {}
    ready: list[tuple[float, int, str]] = []

    def key(sid: str) -> tuple[float, int, str]:
        return (times[sid] if chronological else 0.0, order[sid], sid)

    for sid, draft in kept.items():
        if draft.parent is None:
            heapq.heappush(ready, key(sid))
        else:
            children.setdefault(draft.parent, []).append(sid)
    out: list[Draft] = []
    while ready:
        _, _, sid = heapq.heappop(ready)
        out.append(kept[sid])
        for child in children.get(sid, ()):
            heapq.heappush(ready, key(child))
    return out


def _resolve_head(nodes: tuple[ImportedMessage, ...], wanted: str | None) -> str | None:
    by_id = {n.source_id: n for n in nodes}
    node = by_id.get(wanted) if wanted is not None else None
    if node is None:
        # No (valid) pointer in the file: the newest conversation tip, as the source app
        # shows the latest version of every branch point.
        tips = _tips(nodes)
        if not tips:
            return None
        index = {n.source_id: i for i, n in enumerate(nodes)}
        node = max(tips, key=lambda n: (n.created_at, index[n.source_id]))
    while node.edge == "caller" and node.parent_source_id in by_id:
        node = by_id[node.parent_source_id]  # HEAD is a turn, never a tool result
    return node.source_id


def _tips(nodes: Iterable[ImportedMessage]) -> list[ImportedMessage]:
    conversational = [n for n in nodes if n.edge == "predecessor"]
    has_child = {n.parent_source_id for n in conversational}
    return [n for n in conversational if n.source_id not in has_child]


def _last_model(nodes: Sequence[ImportedMessage]) -> str:
    for node in reversed(nodes):
        model = node.metadata.get("model")
        if node.role == "assistant" and isinstance(model, str) and model:
            return model
    return ""


_PLACEHOLDER_LINE = re.compile(r"^\[(?:file|image|audio|video): [^\]]*\]$")


def _title_from(nodes: Sequence[ImportedMessage]) -> str:
    """A title from the first user message that says something: its words, or, when it is
    only files, their names (as a chat begun with a file is titled in the window)."""
    for node in nodes:
        if node.role != "user":
            continue
        text = node.output if isinstance(node.output, str) else ""
        words = "\n".join(
            line for line in text.splitlines() if not _PLACEHOLDER_LINE.match(line.strip())
        )
        if not words.strip():
            words = ", ".join(
                str(a["name"]) for a in node.metadata.get("attachments") or ()
                if isinstance(a, dict) and str(a.get("name") or "").strip()
            )
        if words.strip():
            line = " ".join(words.split())
            return line if len(line) <= 60 else line[:59].rstrip() + "…"
    return ""


# --- assistant turns with embedded tool calls ---------------------------------------------

SegmentKind = Literal["text", "thinking", "call", "result"]


@dataclass(frozen=True, slots=True)
class Segment:
    """A piece of one assistant message in order: text, reasoning, a call or its result."""

    kind: SegmentKind
    text: str = ""
    call_id: str = ""
    name: str = ""
    arguments: Any = None
    is_error: bool = False


def as_text(value: Any) -> str:
    """Text from a string, a list of content blocks, or anything else (as JSON)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        pieces = [as_text(v) for v in value]
        return "\n".join(p for p in pieces if p)
    if isinstance(value, dict):
        for key in ("text", "value", "content", "output"):
            inner = value.get(key)
            if isinstance(inner, str):
                return inner
            if isinstance(inner, list | dict) and key != "value":
                return as_text(inner)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def expand_segments(
    fmt: str,
    source_id: str,
    parent: str | None,
    segments: Sequence[Segment],
    *,
    name: str,
    created_at: float | None,
    metadata: dict[str, Any],
) -> list[Draft]:
    """One assistant message that called tools becomes Treechat's shape of an agent turn:
    an assistant node per round (text, then its calls), each call's result a tool node
    hanging from it by a call edge, and the text after the results a continuation node.

    The last round keeps the message's own id, so replies to the message hang below it;
    `metadata` (usage, flags) goes on that last round.
    """
    rounds: list[dict[str, list[Segment]]] = [{"text": [], "thinking": [], "calls": [],
                                               "results": []}]
    for seg in segments:
        current = rounds[-1]
        if seg.kind in ("text", "thinking"):
            if current["calls"] or current["results"]:
                current = {"text": [], "thinking": [], "calls": [], "results": []}
                rounds.append(current)
            current["text" if seg.kind == "text" else "thinking"].append(seg)
        elif seg.kind == "call":
            if current["results"]:
                current = {"text": [], "thinking": [], "calls": [], "results": []}
                rounds.append(current)
            current["calls"].append(seg)
        else:
            current["results"].append(seg)

    drafts: list[Draft] = []
    previous = parent
    call_counter = 0
    result_counter = 0
    for index, rnd in enumerate(rounds):
        last = index == len(rounds) - 1
        rid = source_id if last else f"{source_id}#part{index + 1}"
        calls: list[dict[str, Any]] = []
        call_names: dict[str, str] = {}
        call_args: dict[str, Any] = {}
        pending: list[str] = []
        for call in rnd["calls"]:
            call_counter += 1
            cid = call.call_id or f"{source_id}#call{call_counter}"
            calls.append({"id": cid, "name": call.name, "arguments": call.arguments})
            call_names[cid] = call.name
            call_args[cid] = call.arguments
            pending.append(cid)
        meta: dict[str, Any] = dict(metadata) if last else {
            **imported_from(fmt, source_id), "part_of": source_id
        }
        if last and "imported_from" not in meta:
            meta.update(imported_from(fmt, source_id))
        if calls:
            meta["tool_calls"] = calls
        thinking = "\n\n".join(s.text for s in rnd["thinking"] if s.text)
        if thinking:
            meta[REASONING_KEY] = thinking
        text = "\n\n".join(s.text for s in rnd["text"] if s.text)
        drafts.append(
            Draft(rid, previous, "assistant", text, name=name, created_at=created_at,
                  metadata=meta)
        )
        for result in rnd["results"]:
            result_counter += 1
            if result.call_id and result.call_id in call_names:
                cid = result.call_id
                if cid in pending:
                    pending.remove(cid)
            elif pending:
                cid = pending.pop(0)  # results without ids answer the calls in order
            else:
                cid = result.call_id or f"{source_id}#result{result_counter}"
            tool_meta: dict[str, Any] = {**imported_from(fmt, source_id), "tool_call_id": cid}
            if result.is_error:
                tool_meta["is_error"] = True
            drafts.append(
                Draft(
                    f"{source_id}#result{result_counter}",
                    rid,
                    "tool",
                    result.text,
                    name=result.name or call_names.get(cid, ""),
                    input=call_args.get(cid),
                    edge="caller",
                    created_at=created_at,
                    metadata=tool_meta,
                )
            )
        previous = rid
    return drafts


def mapping_of(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (exports omit or null fields)."""
    return value if isinstance(value, dict) else {}


def conversations_of(data: Any) -> list[Any]:
    """An export holds a list of conversations, or is one conversation object."""
    return data if isinstance(data, list) else [data]
