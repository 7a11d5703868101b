"""New nodes become commit items: attach and merge expansion, the per-item cap (whose marker
names the node and keeps the cut part's findings), re-runs superseding earlier results, and the
structural rules run over the result. Pure: items, clock and config come in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from .aging import age_tools, clear_idle, cleared_item
from .attachments import missing_files_note, node_attachments
from .commit import ContextCommit, ContextItem, item_tokens, make_commit, tool_args_text
from .model import Node
from .rule_config import RuleConfig
from .tokens import TokenCounter
from .tool_facts import result_facts, tool_facts


def node_item(
    node: Node, counter: TokenCounter, config: RuleConfig, now: float
) -> ContextItem | None:
    """A new node as a `full` item (None for runtime bookkeeping with nothing to show)."""
    text = node.text
    if node.role == "tool":
        rendered = capped_text(text, node.id, config.max_tool_result_chars)
        args = tool_args_text(node.input)
        call_id = str(node.metadata.get("tool_call_id") or node.id)
        return ContextItem(
            source_node_id=node.id,
            role="tool",
            rendered=rendered,
            tokens=item_tokens("tool", rendered, counter, tool_name=node.name, tool_args=args),
            reason="new" if rendered == text else "per_item_cap",
            tool_name=node.name,
            tool_call_id=call_id,
            tool_args=args,
            call_of=node.caller,
            touched_at=node.created_at,
            seq=node.seq,
            text_ref="node" if rendered == text else "cap",
            args_ref=True,
            locked=bool(node.metadata.get("locked")),
            facts=result_facts(text),
        )
    if node.role == "runtime" and not text:
        return None
    # A merge node carries the user's merge instruction.
    role = "user" if node.is_merge else node.role
    if node.role == "system" and not text and isinstance(node.input, str):
        text = node.input
    files = node_attachments(node.metadata) if node.role == "user" else ()
    if node.role in ("user", "assistant") and (missing := missing_files_note(node.metadata)):
        text = f"{text}\n\n{missing}" if text else missing
    return ContextItem(
        source_node_id=node.id,
        role=role,
        rendered=text,
        tokens=item_tokens(role, text, counter) + sum(f.tokens for f in files),
        files=files,
        touched_at=node.created_at,
        seq=node.seq,
        text_ref="node" if text == node.text else "",
        is_anchor=bool(node.metadata.get("anchor")),
        locked=bool(node.metadata.get("locked")),
    )


def capped_text(text: str, node_id: str, max_chars: int) -> str:
    """The per-item cap: head and tail kept, and between them a marker that names the node
    (the model can ask `recall` for what was cut) and quotes the lines of the cut part that
    stand out from the rest (a setting, a name, an error), so a finding buried in the middle
    of a long read is not lost with it."""
    if len(text) <= max_chars:
        return text
    note = f"; node {node_id}, recall returns it"
    keep = max(0, max_chars - len(note) - CUT_FINDINGS_CHARS - 40)
    head = keep * 2 // 3
    tail = keep - head
    middle = text[head:len(text) - tail]
    lines = tool_facts(middle, limit=2)
    quoted = "".join(f"\n  {ln}" for ln in lines)[:CUT_FINDINGS_CHARS]
    said = f"; in it:{quoted}\n" if quoted else ""
    marker = f"\n[… {len(middle):,} characters cut{note}{said} …]\n"
    return text[:head] + marker + (text[-tail:] if tail else "")


# Room the cap's marker gives the cut part's findings.
CUT_FINDINGS_CHARS = 340


def _marker(node: Node, source: ContextCommit, counter: TokenCounter, *, end: bool) -> ContextItem:
    meta = node.metadata
    where = f"session {meta.get('source_session', source.session_id)}, node {source.head_node_id}"
    text = (
        f"[End of attached context from {where}.]"
        if end
        else f"[Attached context from {where} begins. It is quoted from another branch for "
        "reference; it does not replace this conversation.]"
    )
    return ContextItem(
        source_node_id=node.id + ("#end" if end else ""),
        role="runtime",
        rendered=text,
        tokens=item_tokens("runtime", text, counter),
        reason=f"attached_from:{source.id}",
        attached_from=source.id,
        touched_at=node.created_at,
        seq=node.seq,
    )


def expand_attach(
    node: Node,
    source: ContextCommit | None,
    *,
    present: set[str],
    attached: set[str],
    counter: TokenCounter,
) -> list[ContextItem]:
    """An attach pointer becomes the source commit's live items between open/close markers,
    once (dedup by `attached_from`); items this commit already has natively are not
    repeated. An unloadable source falls back to one user item naming it."""
    if source is None:
        meta = node.metadata
        text = (
            f"[Attached: session {meta.get('source_session', '?')} at node "
            f"{meta.get('source_head', '?')}; its context could not be loaded.]"
        )
        return [
            ContextItem(
                source_node_id=node.id,
                role="runtime",
                rendered=text,
                tokens=item_tokens("runtime", text, counter),
                reason="attach_unavailable",
                attached_from=str(meta.get("source_commit") or f"node:{node.id}"),
                touched_at=node.created_at,
                seq=node.seq,
            )
        ]
    if source.id in attached:
        return []
    attached.add(source.id)
    out = [_marker(node, source, counter, end=False)]
    for item in source.live_items():
        if item.source_node_id in present:
            continue
        out.append(
            replace(
                item,
                attached_from=source.id,
                locked=False,
                reason=f"attached_from:{source.id}",
            )
        )
    out.append(_marker(node, source, counter, end=True))
    return out


def _peer_ids(node: Node, resolved: Mapping[str, str]) -> tuple[list[str], str | None]:
    """Commit ids of a merge's peers and of its base peer. A peer names its commit directly
    (`source_commit`) or is resolved through the attach pointers written before the merge
    (by head or session id)."""

    def resolve(ref: object) -> str | None:
        if isinstance(ref, Mapping):
            for k in ("source_commit", "commit"):
                v = ref.get(k)
                if isinstance(v, str) and v:
                    return resolved.get(v, v)
            for k in ("source_head", "head", "source_session", "session"):
                v = ref.get(k)
                if isinstance(v, str) and v in resolved:
                    return resolved[v]
            return None
        if isinstance(ref, str):
            return resolved.get(ref, ref if ref.startswith("cc_") else None)
        return None

    peers = node.metadata.get("peers") or []
    ids: list[str] = []
    for ref in peers if isinstance(peers, list) else []:
        cid = resolve(ref)
        if cid is not None and cid not in ids:
            ids.append(cid)
    return ids, resolve(node.metadata.get("base_peer"))




def extend_commit(
    parent: ContextCommit | None,
    nodes: Sequence[Node],
    *,
    session_id: str,
    head_node_id: str,
    now: float,
    counter: TokenCounter,
    config: RuleConfig,
    pinned: frozenset[str] = frozenset(),
    attachments: Mapping[str, ContextCommit | None] | None = None,
) -> ContextCommit | None:
    """Append `nodes` as items and run the structural rules (expansion, cap, aging, idle
    clearing). Costs O(new items + tail), not O(history). None when nothing changed."""
    attachments = attachments or {}
    items: list[ContextItem] = list(parent.items) if parent is not None else []
    base_len = len(items)
    changed: set[int] = set()
    extra_parents: list[str] = []
    notes: list[str] = []
    max_seq = parent.max_seq if parent is not None else 0
    present: set[str] | None = None
    attached: set[str] | None = None
    resolved: dict[str, str] = {}
    by_call: dict[str, int] = {}
    # The first user message of a conversation states the task: keep it through compaction.
    want_anchor = parent is None

    for node in nodes:
        max_seq = max(max_seq, node.seq)
        if node.is_attach:
            if present is None:
                present = {it.source_node_id for it in items if not it.attached_from}
                attached = {it.attached_from for it in items if it.attached_from}
            assert attached is not None
            source = attachments.get(node.id)
            if source is not None:
                for k in ("source_commit", "source_head", "source_session"):
                    v = node.metadata.get(k)
                    if isinstance(v, str):
                        resolved[v] = source.id
                resolved[source.id] = source.id
            block = expand_attach(node, source, present=present, attached=attached,
                                  counter=counter)
            if block:
                notes.append(f"attached {len(block)} items")
            items.extend(block)
            continue
        item = node_item(node, counter, config, now)
        if node.is_merge:
            peers, base = _peer_ids(node, resolved)
            extra_parents.extend(peers)
            if base is not None:
                for p, it in enumerate(items):
                    if it.attached_from == base and not it.locked:
                        items[p] = replace(it, locked=True, reason="merge_base")
                        if p < base_len:
                            changed.add(p)
            notes.append(f"merged {len(peers)} peers")
        if item is None:
            continue
        if item.role == "tool":
            # A re-run of a tool call replaces the earlier result.
            key = f"{item.call_of}|{item.tool_call_id}"
            prev = by_call.get(key)
            if prev is None:
                prev = _find_tool_call(items, item.call_of, item.tool_call_id)
            if prev is not None and items[prev].live and items[prev].state != "cleared":
                items[prev] = cleared_item(items[prev], counter, reason="superseded")
                if prev < base_len:
                    changed.add(prev)
            by_call[key] = len(items)
        if want_anchor and item.role == "user":
            want_anchor = False
            anchor = item.is_anchor or item.tokens <= config.anchor_max_tokens
            item = replace(item, is_anchor=anchor)
        if node.reads:
            _touch_reads(items, node.reads, changed, base_len=base_len, now=now, config=config)
        items.append(item)

    aged_through = parent.aged_through if parent is not None else 0
    aged_through = age_tools(items, changed, start=aged_through, force=False,
                             pinned=pinned, config=config, counter=counter)
    if parent is not None and now - parent.created_at >= config.idle_clear_seconds:
        # The provider's prompt cache has expired after an idle hour, so rewriting old
        # items now costs nothing extra; while the session is active it would break it.
        n = clear_idle(items, changed, parent.live, now=now, pinned=pinned, config=config,
                       counter=counter)
        if n:
            notes.append(f"cleared {n} idle tool results")
    if len(items) == base_len and not changed and not extra_parents and parent is not None:
        return None
    return make_commit(
        parent, items, changed, session_id=session_id, head_node_id=head_node_id, now=now,
        extra_parents=extra_parents, summary="; ".join(_describe(len(items) - base_len, notes)),
        max_seq=max_seq, aged_through=aged_through,
    )


def _describe(added: int, notes: list[str]) -> list[str]:
    out = [f"+{added} items"] if added else []
    return out + notes


def _find_tool_call(items: Sequence[ContextItem], caller: str | None, call_id: str) -> int | None:
    if caller is None:
        return None
    for p in range(len(items) - 1, -1, -1):
        it = items[p]
        if it.source_node_id == caller and not it.attached_from:
            return None  # reached the assistant: no earlier run of this call
        if it.role == "tool" and it.call_of == caller and it.tool_call_id == call_id:
            return p
    return None


def _touch_reads(items: list[ContextItem], reads: Sequence[str], changed: set[int], *,
                 base_len: int, now: float, config: RuleConfig) -> None:
    """Items a node says it read are cited: they become anchors (kept through
    summarization) and count as touched for idle clearing."""
    wanted = set(reads)
    for p in range(len(items) - 1, -1, -1):
        it = items[p]
        if it.source_node_id in wanted and not it.attached_from and it.live:
            anchor = it.is_anchor or it.tokens <= config.anchor_max_tokens
            items[p] = replace(it, is_anchor=anchor, touched_at=now)
            if p < base_len:
                changed.add(p)
            wanted.discard(it.source_node_id)
            if not wanted:
                return


