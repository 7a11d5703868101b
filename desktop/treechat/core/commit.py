"""ContextCommit: the immutable, content-addressed snapshot of what a head's history looks like
to the model, stored as a delta against its first parent, and the generator that extends it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from .attachments import AttachmentRef, node_attachments
from .tokens import MESSAGE_FRAMING_TOKENS, TOOL_CALL_FRAMING_TOKENS, TokenCounter

ItemState = Literal["full", "aged", "cleared", "summarized", "summary"]
ITEM_STATES: tuple[ItemState, ...] = ("full", "aged", "cleared", "summarized", "summary")

# How complete an item is; a rule may only move an item up this order (invariant 3). A
# summary is complete in its own right and can later be folded into a roll-up.
STATE_RANK: dict[str, int] = {"full": 0, "summary": 0, "aged": 1, "cleared": 2, "summarized": 3}

RULES_VERSION = "treechat-rules-1"

TextRef = Literal["", "node", "cap"]


@dataclass(frozen=True, slots=True)
class ContextItem:
    """One entry of a commit. `rendered` is what the model sees for it; the DAG node it came
    from is never changed. Tool items carry the call's name, id and (possibly cut) args."""

    source_node_id: str
    role: str
    state: ItemState = "full"
    locked: bool = False
    rendered: str = ""
    tokens: int = 0
    reason: str = "new"
    merged_into: str | None = None
    is_anchor: bool = False
    attached_from: str | None = None
    tool_name: str = ""
    tool_call_id: str = ""
    tool_args: str = ""
    call_of: str | None = None
    touched_at: float = 0.0
    seq: int = 0
    # How `rendered` derives from the node ("node": its text, "cap": its text capped), so a
    # stored item can reference node content instead of copying it.
    text_ref: TextRef = ""
    args_ref: bool = False
    # Summaries render in this order: the position of the earliest item they cover.
    order: int = 0
    # The files a user message carries (none once it has aged: the stub names them).
    files: tuple[AttachmentRef, ...] = ()
    # A tool result's facts, read from its whole output when it arrived (what its aged stub
    # and the facts kept by compaction quote, whatever the cap cut).
    facts: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """Unique within a commit: the same node may appear natively and once per attach."""
        if self.attached_from:
            return f"{self.attached_from}|{self.source_node_id}"
        return self.source_node_id

    @property
    def live(self) -> bool:
        """Whether render shows it (folded items live on only inside their summary)."""
        return self.state != "summarized"

    @property
    def is_summary(self) -> bool:
        return self.state == "summary"


def is_tighter_or_equal(before: ContextItem, after: ContextItem) -> bool:
    """Invariant 3: an item never goes back to a more complete state."""
    if before.state == "summary" and after.state not in ("summary", "summarized"):
        return False
    if before.state != "summary" and after.state == "summary":
        return False
    return STATE_RANK[after.state] >= STATE_RANK[before.state]


@dataclass(frozen=True, slots=True)
class ContextCommit:
    """An immutable snapshot of the history sent for `head_node_id`.

    `changed` lists the positions that differ from the first parent (the stored delta);
    `live` the positions render shows; `max_seq` the newest node covered (late tool results
    are detected against it); `aged_through` the position below which aging is settled.
    """

    id: str
    session_id: str
    parent_ids: tuple[str, ...]
    created_at: float
    head_node_id: str
    rules_version: str
    total_tokens: int
    items: tuple[ContextItem, ...]
    summary: str = ""
    max_seq: int = 0
    depth: int = 0
    changed: tuple[int, ...] = ()
    live: tuple[int, ...] = ()
    aged_through: int = 0

    def live_items(self) -> tuple[ContextItem, ...]:
        items = self.items
        return tuple(items[p] for p in self.live)

    def summaries(self) -> tuple[ContextItem, ...]:
        return tuple(i for i in self.live_items() if i.is_summary)

    def attached_sources(self) -> frozenset[str]:
        return frozenset(i.attached_from for i in self.items if i.attached_from)

    def newest_question(self) -> str:
        """The text of the newest live message the user wrote here (not a summary, not an
        attached branch's), "" when there is none: what passages are looked up for."""
        items = self.items
        newest = next((items[p] for p in reversed(self.live)
                       if items[p].role == "user" and not items[p].is_summary
                       and not items[p].attached_from), None)
        return newest.rendered if newest is not None and newest.rendered.strip() else ""


# --- content addressing ---------------------------------------------------------------


def item_record(item: ContextItem) -> dict[str, Any]:
    """Every field of an item as plain JSON values (for digests and storage)."""
    return {
        "n": item.source_node_id,
        "r": item.role,
        "s": item.state,
        "l": item.locked,
        "x": item.rendered,
        "t": item.tokens,
        "why": item.reason,
        "m": item.merged_into,
        "a": item.is_anchor,
        "f": item.attached_from,
        "tn": item.tool_name,
        "tc": item.tool_call_id,
        "ta": item.tool_args,
        "cb": item.call_of,
        "ts": item.touched_at,
        "q": item.seq,
        "ref": item.text_ref,
        "aref": item.args_ref,
        "o": item.order,
        # only when there are files, so items without any keep their digests
        **({"fl": [f.as_meta() for f in item.files]} if item.files else {}),
        **({"fx": list(item.facts)} if item.facts else {}),
    }


# Values `item_from_record` assumes for absent keys (storage omits them).
RECORD_DEFAULTS: dict[str, Any] = {
    "s": "full", "l": False, "x": "", "t": 0, "why": "new", "m": None, "a": False, "f": None,
    "tn": "", "tc": "", "ta": "", "cb": None, "ts": 0.0, "q": 0, "ref": "", "aref": False,
    "o": 0,
}


def item_from_record(rec: Mapping[str, Any]) -> ContextItem:
    r = {**RECORD_DEFAULTS, **rec}
    return ContextItem(
        source_node_id=str(r["n"]),
        role=str(r["r"]),
        state=r["s"],
        locked=bool(r["l"]),
        rendered=str(r["x"] or ""),
        tokens=int(r["t"]),
        reason=str(r["why"]),
        merged_into=r["m"],
        is_anchor=bool(r["a"]),
        attached_from=r["f"],
        tool_name=str(r["tn"] or ""),
        tool_call_id=str(r["tc"] or ""),
        tool_args=str(r["ta"] or ""),
        call_of=r["cb"],
        touched_at=float(r["ts"]),
        seq=int(r["q"]),
        text_ref=r["ref"] or "",
        args_ref=bool(r["aref"]),
        order=int(r["o"]),
        files=node_attachments({"attachments": r.get("fl") or ()}),
        facts=tuple(str(f) for f in r.get("fx") or ()),
    )


def item_digest(item: ContextItem) -> str:
    data = json.dumps(item_record(item), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


def commit_id(
    parent_ids: Sequence[str],
    head_node_id: str,
    rules_version: str,
    length: int,
    changes: Iterable[tuple[int, ContextItem]],
) -> str:
    """Content address: the parents plus exactly what changed determine the items, as a git
    commit's id covers its parent and tree. Same inputs give the same id."""
    h = hashlib.sha256()
    h.update(json.dumps([list(parent_ids), head_node_id, rules_version, length]).encode())
    for pos, item in changes:
        h.update(f"\n{pos}:".encode())
        h.update(item_digest(item).encode())
    return "cc_" + h.hexdigest()[:40]


def summary_id(keys: Sequence[str]) -> str:
    h = hashlib.sha256("\n".join(keys).encode("utf-8", "surrogatepass")).hexdigest()
    return "sm_" + h[:24]


def make_commit(
    parent: ContextCommit | None,
    items: Sequence[ContextItem],
    changed: Iterable[int],
    *,
    session_id: str,
    head_node_id: str,
    now: float,
    extra_parents: Sequence[str] = (),
    summary: str = "",
    max_seq: int | None = None,
    aged_through: int | None = None,
) -> ContextCommit:
    """Build the child of `parent` whose items differ from it at `changed` positions (and
    any positions beyond the parent's length). Costs O(changed + live), not O(items)."""
    items = tuple(items)
    base_len = len(parent.items) if parent is not None else 0
    changed_set = {p for p in changed if p < base_len}
    positions = sorted(changed_set) + list(range(base_len, len(items)))
    if parent is not None:
        total = parent.total_tokens
        for p in changed_set:
            old = parent.items[p]
            if old.live:
                total -= old.tokens
            if items[p].live:
                total += items[p].tokens
        folded = {p for p in changed_set if not items[p].live}
        live = [p for p in parent.live if p not in folded] if folded else list(parent.live)
    else:
        total = 0
        live = []
    for p in range(base_len, len(items)):
        if items[p].live:
            total += items[p].tokens
            live.append(p)
    parent_ids = ((parent.id,) if parent is not None else ()) + tuple(
        p for p in extra_parents if parent is None or p != parent.id
    )
    cid = commit_id(
        parent_ids, head_node_id, RULES_VERSION, len(items), ((p, items[p]) for p in positions)
    )
    return ContextCommit(
        id=cid,
        session_id=session_id,
        parent_ids=parent_ids,
        created_at=now,
        head_node_id=head_node_id,
        rules_version=RULES_VERSION,
        total_tokens=total,
        items=items,
        summary=summary,
        max_seq=max_seq if max_seq is not None else (parent.max_seq if parent else 0),
        depth=(parent.depth + 1) if parent is not None else 0,
        changed=tuple(positions),
        live=tuple(live),
        aged_through=aged_through if aged_through is not None else (
            parent.aged_through if parent else 0
        ),
    )


def apply_delta(
    base: Sequence[ContextItem], changes: Iterable[tuple[int, ContextItem]], length: int
) -> tuple[ContextItem, ...]:
    """Rebuild a commit's items from its first parent's and its stored delta."""
    items = list(base[:length])
    for pos, item in sorted(changes, key=lambda c: c[0]):
        if pos < len(items):
            items[pos] = item
        elif pos == len(items):
            items.append(item)
        else:
            raise ValueError(f"delta position {pos} skips past the end ({len(items)})")
    if len(items) != length:
        raise ValueError(f"delta rebuilt {len(items)} items, expected {length}")
    return tuple(items)


def live_positions(items: Sequence[ContextItem]) -> tuple[int, ...]:
    return tuple(i for i, it in enumerate(items) if it.live)


def with_items(commit: ContextCommit, items: Sequence[ContextItem]) -> ContextCommit:
    """The same commit record over fully materialized items (used when loading)."""
    items = tuple(items)
    live = live_positions(items)
    return replace(
        commit, items=items, live=live, total_tokens=sum(items[p].tokens for p in live)
    )


# --- nodes to items ---------------------------------------------------------------------


def item_tokens(role: str, rendered: str, counter: TokenCounter, *, tool_name: str = "",
                tool_args: str = "") -> int:
    """Tokens an item costs when rendered, framing included (a tool item also pays for its
    call's name and arguments on the assistant message)."""
    total = MESSAGE_FRAMING_TOKENS + counter.count(rendered)
    if role == "tool":
        total += TOOL_CALL_FRAMING_TOKENS + counter.count(tool_name) + counter.count(tool_args)
    return total


def tool_args_text(value: Any) -> str:
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
