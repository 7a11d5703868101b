"""The rule pipeline that turns new nodes into commit items and tightens old ones: attach and
merge expansion, per-item cap, tool aging, idle clearing and summarize (append-only, chunked
with hysteresis, respecting attach boundaries). Pure: items, clock and config come in."""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from .attachments import missing_files_note, node_attachments, stub_text
from .commit import (
    ContextCommit,
    ContextItem,
    item_tokens,
    make_commit,
    summary_id,
    tool_args_text,
)
from .model import Node
from .summarize import (
    DeterministicSummarizer,
    Summarizer,
    SummaryEntry,
    SummaryRequest,
    fence,
)
from .tokens import TokenCounter, cut_head_tail

DEFAULT_PROTECTED_TOOLS = frozenset({"todo_create", "todo_update", "todo_list", "web_search"})
CLEARED_PLACEHOLDER = (
    "[tool result cleared after an hour unused; the recall tool returns it, or run the tool "
    "again]"
)


@dataclass(frozen=True, slots=True)
class RuleConfig:
    """Thresholds of the rules (spec §3, §5), all overridable per engine."""

    tail_turns: int = 3
    # Aging rewrites the prompt from the first aged item on. By default (None) it waits for
    # the next compaction, which rewrites the prompt from the fold on anyway, so aging costs
    # no cache of its own (measured: it caused most of the lost cache tokens when it ran in
    # batches of 4 turns). A number ages old tool results in batches of that many assistant
    # turns between compactions.
    aging_batch_turns: int | None = None
    max_tool_args_chars: int = 200
    max_tool_result_chars: int = 4000
    protected_tools: frozenset[str] = DEFAULT_PROTECTED_TOOLS
    idle_clear_seconds: float = 3600.0
    anchor_max_tokens: int = 1500
    summarize_trigger: float = 0.80
    summarize_target: float = 0.50
    emergency_trigger: float = 0.95
    emergency_target: float = 0.30
    keep_recent_turns: int = 2
    summary_ratio: float = 0.15
    min_summary_tokens: int = 64
    max_summary_tokens: int = 1500
    summary_share: float = 0.25
    rollup_ratio: float = 0.5
    # A roll-up brings the summaries down to this fraction of their share.
    rollup_target: float = 0.7


CompactionMode = Literal["auto", "emergency", "manual"]


@dataclass(frozen=True, slots=True)
class CompactionRequest:
    """Ask the pipeline to summarize against a history budget. `calibration` (measured ÷
    estimated) scales our estimate to what the provider will really count."""

    history_budget: int
    mode: CompactionMode = "auto"
    calibration: float = 1.0


@dataclass(frozen=True, slots=True)
class FoldRun:
    positions: tuple[int, ...]
    group: str | None
    request: SummaryRequest


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    runs: tuple[FoldRun, ...]
    level: int
    mode: CompactionMode = "auto"
    notes: tuple[str, ...] = field(default=())


# --- node expansion ---------------------------------------------------------------------


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
    """The per-item cap (head and tail kept), its marker naming the node so the model can
    ask `recall` for what was cut."""
    if len(text) <= max_chars:
        return text
    note = f"; node {node_id}, recall returns it"
    cut = cut_head_tail(text, max(0, max_chars - len(note)))
    return cut.replace(" characters cut …]", f" characters cut{note} …]", 1)


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


# --- the pipeline -----------------------------------------------------------------------


def run_pipeline(
    parent: ContextCommit | None,
    nodes: Sequence[Node],
    *,
    session_id: str,
    head_node_id: str,
    now: float,
    counter: TokenCounter,
    config: RuleConfig,
    pinned: frozenset[str],
    attachments: Mapping[str, ContextCommit | None],
    compaction: CompactionRequest | None,
    summarizer: Summarizer | None,
    instructions: str,
) -> ContextCommit:
    chain = generate_chain(
        parent, nodes, session_id=session_id, head_node_id=head_node_id, now=now,
        counter=counter, config=config, pinned=pinned, attachments=attachments,
        compaction=compaction, summarizer=summarizer, instructions=instructions,
    )
    return chain[-1] if chain else parent  # type: ignore[return-value]


def generate_chain(
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
    compaction: CompactionRequest | None = None,
    summarizer: Summarizer | None = None,
    instructions: str = "",
) -> tuple[ContextCommit, ...]:
    """The commits generation produces, oldest first: the one extending `parent` with
    `nodes`, then any compaction commits on top of it (same head). Empty when nothing
    changed."""
    out: list[ContextCommit] = []
    commit = extend_commit(
        parent, nodes, session_id=session_id, head_node_id=head_node_id, now=now,
        counter=counter, config=config, pinned=pinned, attachments=attachments or {},
    )
    if commit is not None:
        out.append(commit)
    current = commit if commit is not None else parent
    if compaction is None or current is None:
        return tuple(out)
    summarizer = summarizer if summarizer is not None else DeterministicSummarizer(counter)
    loop = compaction_loop(current, compaction, now=now, counter=counter, config=config,
                           pinned=pinned, instructions=instructions)
    out.extend(drive(loop, summarizer.summarize))
    return tuple(out)


# --- the compaction loop ------------------------------------------------------------------

# What the loop yields and receives: a plan out, one summary text per run back in; when it
# is done it returns the commits it made (oldest first, possibly none).
CompactionLoop = Generator[CompactionPlan, Sequence[str], tuple[ContextCommit, ...]]

MAX_COMPACTION_ROUNDS = 3


def compaction_loop(
    commit: ContextCommit,
    request: CompactionRequest,
    *,
    now: float,
    counter: TokenCounter,
    config: RuleConfig,
    pinned: frozenset[str] = frozenset(),
    instructions: str = "",
) -> CompactionLoop:
    """The one compaction loop, free of I/O: it yields each plan and receives the summaries
    of its runs (however they were made: offline, by a model, on another thread), applies
    them and plans again, up to `MAX_COMPACTION_ROUNDS` rounds. The engine drives it with its
    async summarizers; tests and the benchmark drive the very same code with `drive`."""
    out: list[ContextCommit] = []
    current = commit
    mode = request.mode
    for _ in range(MAX_COMPACTION_ROUNDS):
        plan = plan_compaction(current, replace(request, mode=mode), config=config,
                               pinned=pinned, instructions=instructions)
        if plan is not None:
            plan = _gainful(plan, current, counter)
        if plan is None:
            break
        texts = list((yield plan))
        if len(texts) != len(plan.runs):
            raise ValueError(f"{len(texts)} summaries for {len(plan.runs)} runs")
        applied = apply_compaction(current, plan, texts, now=now, counter=counter,
                                   config=config, pinned=pinned)
        if applied is current:
            break  # no summary was smaller than what it would fold
        current = applied
        out.append(current)
        mode = "auto"
    return tuple(out)


@dataclass(frozen=True, slots=True)
class LoopDone:
    commits: tuple[ContextCommit, ...]


def advance(loop: CompactionLoop, texts: Sequence[str] | None = None) -> CompactionPlan | LoopDone:
    """One step of the loop: the next plan, or `LoopDone` with its commits. (A generator's
    return arrives as StopIteration, which cannot cross a thread or a future; this turns it
    into a value so a step may run on a worker thread.)"""
    try:
        return next(loop) if texts is None else loop.send(texts)
    except StopIteration as stop:
        return LoopDone(tuple(stop.value or ()))


def drive(loop: CompactionLoop,
          summarize: Callable[[SummaryRequest], str]) -> tuple[ContextCommit, ...]:
    """Run the loop to the end with a synchronous summarizer."""
    step = advance(loop)
    while not isinstance(step, LoopDone):
        step = advance(loop, [summarize(run.request) for run in step.runs])
    return step.commits


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
                items[prev] = _cleared(items[prev], counter, reason="superseded")
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


# --- tool aging and idle clearing -------------------------------------------------------


def _agable(it: ContextItem, pinned: frozenset[str], config: RuleConfig) -> bool:
    return (
        it.role == "tool"
        and it.state == "full"
        and not it.locked
        and it.source_node_id not in pinned
        and it.tool_name not in config.protected_tools
    )


def aged_tool_item(it: ContextItem, counter: TokenCounter, config: RuleConfig) -> ContextItem:
    """Tool call head kept (args cut), result replaced by a one-line stub that names what it
    stands for (the call and its node) so the model can ask `recall` for it again."""
    text = it.rendered
    lines = len(text.splitlines())
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if len(first) > 120:
        first = first[:119] + "…"
    call = " ".join(it.tool_args.split())
    if len(call) > 80:
        call = call[:79] + "…"
    stub = (f"[{it.tool_name or 'tool'} output, {lines} lines / {len(text):,} chars, aged; "
            f"{it.tool_name or 'tool'}({call}) is node {it.source_node_id}, recall returns it] "
            f"{first}")
    args = it.tool_args
    if len(args) > config.max_tool_args_chars:
        # Cut args must stay valid JSON: providers parse tool-call arguments.
        args = json.dumps({"arguments_cut": args[: config.max_tool_args_chars]}, ensure_ascii=False)
    return replace(
        it,
        state="aged",
        rendered=stub,
        tool_args=args,
        tokens=item_tokens("tool", stub, counter, tool_name=it.tool_name, tool_args=args),
        reason="tail_window",
        text_ref="",
        args_ref=args == it.tool_args and it.args_ref,
    )


def _cleared(it: ContextItem, counter: TokenCounter, *, reason: str) -> ContextItem:
    args = it.tool_args
    return replace(
        it,
        state="cleared",
        rendered=CLEARED_PLACEHOLDER,
        tokens=item_tokens("tool", CLEARED_PLACEHOLDER, counter, tool_name=it.tool_name,
                           tool_args=args),
        reason=reason,
        text_ref="",
    )


def age_tools(
    items: list[ContextItem],
    changed: set[int],
    *,
    start: int,
    force: bool,
    pinned: frozenset[str],
    config: RuleConfig,
    counter: TokenCounter,
) -> int:
    """Age tool results older than the tail window (the newest `tail_turns` assistant
    items). Returns the new aging frontier: everything before it is settled."""
    n = len(items)
    seen = 0
    tail_start = -1
    for p in range(n - 1, start - 1, -1):
        it = items[p]
        if it.role == "assistant" and it.live:
            seen += 1
            if seen >= config.tail_turns:
                tail_start = p
                break
    if tail_start <= start:
        return start
    if not force:
        batch = config.aging_batch_turns
        if batch is None:
            return start
        turns = sum(1 for p in range(start, tail_start) if items[p].role == "assistant")
        if turns < batch:
            return start
    for p in range(start, tail_start):
        it = items[p]
        if _agable(it, pinned, config):
            items[p] = aged_tool_item(it, counter, config)
            changed.add(p)
        elif it.files and it.live and not it.locked and it.source_node_id not in pinned:
            items[p] = aged_files_item(it, counter)
            changed.add(p)
    return tail_start


def aged_files_item(it: ContextItem, counter: TokenCounter) -> ContextItem:
    """A message whose files have aged: its text kept, each file a stub naming it."""
    stubs = "\n".join(stub_text(f) for f in it.files)
    rendered = f"{it.rendered}\n\n{stubs}" if it.rendered else stubs
    return replace(
        it,
        state="aged" if it.state == "full" else it.state,
        rendered=rendered,
        files=(),
        tokens=item_tokens(it.role, rendered, counter),
        reason="tail_window",
        text_ref="",
    )


def clear_idle(
    items: list[ContextItem],
    changed: set[int],
    live: Sequence[int],
    *,
    now: float,
    pinned: frozenset[str],
    config: RuleConfig,
    counter: TokenCounter,
) -> int:
    """Aged tool results untouched for `idle_clear_seconds` become a fixed placeholder."""
    cleared = 0
    for p in live:
        if p >= len(items):
            break
        it = items[p]
        if (
            it.state == "aged"
            and it.role == "tool"
            and not it.locked
            and it.source_node_id not in pinned
            and now - it.touched_at >= config.idle_clear_seconds
        ):
            items[p] = _cleared(it, counter, reason="idle_60min")
            changed.add(p)
            cleared += 1
    return cleared


# --- summarize --------------------------------------------------------------------------


def _foldable(it: ContextItem, pinned: frozenset[str]) -> bool:
    return (
        it.live
        and not it.is_summary
        and not it.locked
        and not it.is_anchor
        and it.source_node_id not in pinned
    )


def compaction_level(
    history_tokens: int, budget: int, calibration: float, config: RuleConfig
) -> CompactionMode | None:
    """Whether the history (scaled by calibration) crosses the auto threshold."""
    if budget <= 0:
        return None
    return "auto" if history_tokens * calibration > config.summarize_trigger * budget else None


def _entries(items: Sequence[ContextItem], positions: Sequence[int]) -> tuple[SummaryEntry, ...]:
    out: list[SummaryEntry] = []
    for p in positions:
        it = items[p]
        role = "summary" if it.is_summary else it.role
        if role == "runtime":
            role = "user"
        out.append(SummaryEntry(role=role, text=it.rendered, name=it.tool_name))
    return tuple(out)


def kept_from(commit: ContextCommit, config: RuleConfig) -> int:
    """The position from which the last `keep_recent_turns` exchanges start: they are always
    sent in full, and nothing from there on is folded."""
    items = commit.items
    protect_from = len(items)
    users = 0
    for p in reversed(commit.live):
        it = items[p]
        if it.role == "user" and not it.is_summary and not it.attached_from:
            users += 1
            protect_from = p
            if users >= config.keep_recent_turns:
                break
    return protect_from


def foldable_items(commit: ContextCommit, config: RuleConfig,
                   pinned: frozenset[str] = frozenset()) -> tuple[int, int]:
    """(items, tokens) a fold could take now: live, unpinned, older than the kept turns."""
    protect_from = kept_from(commit, config)
    positions = [p for p in commit.live
                 if p < protect_from and _foldable(commit.items[p], pinned)]
    return len(positions), sum(commit.items[p].tokens for p in positions)


def plan_compaction(
    commit: ContextCommit,
    request: CompactionRequest,
    *,
    config: RuleConfig,
    pinned: frozenset[str] = frozenset(),
    instructions: str = "",
) -> CompactionPlan | None:
    """Which runs to fold. Auto: only over `summarize_trigger` of the budget, then down to
    `summarize_target` (the gap is the hysteresis that stops re-compacting every turn).
    Summaries over their share are rolled up. None when there is nothing to do."""
    budget = request.history_budget
    cal = request.calibration if request.calibration > 0 else 1.0
    items = commit.items
    total = commit.total_tokens
    mode = request.mode
    if mode == "auto" and total * cal <= config.summarize_trigger * budget:
        return _plan_rollup(commit, budget, cal, config, instructions)
    target_share = config.emergency_target if mode == "emergency" else config.summarize_target
    need = total - target_share * budget / cal
    if mode == "manual":
        need = max(need, float(total))
    if need <= 0:
        return _plan_rollup(commit, budget, cal, config, instructions)

    live = commit.live
    protect_from = kept_from(commit, config)
    runs: list[list[int]] = []
    groups: list[str | None] = []
    cur: list[int] = []
    group: str | None = None
    folded = 0
    for p in live:
        if p >= protect_from:
            break
        it = items[p]
        if folded >= need and it.role == "user" and not it.attached_from:
            break
        if not _foldable(it, pinned):
            if cur:
                runs.append(cur)
                groups.append(group)
                cur = []
            continue
        if cur and it.attached_from != group:
            runs.append(cur)
            groups.append(group)
            cur = []
        if not cur:
            group = it.attached_from
        cur.append(p)
        folded += it.tokens
    if cur:
        runs.append(cur)
        groups.append(group)
    if not runs:
        return _plan_rollup(commit, budget, cal, config, instructions)
    fold_runs = tuple(
        FoldRun(
            positions=tuple(run),
            group=g,
            request=SummaryRequest(
                entries=_entries(items, run),
                target_tokens=_summary_target(sum(items[p].tokens for p in run), config),
                instructions=instructions,
                level=0,
                scope=f"attached from {g}" if g else "",
            ),
        )
        for run, g in zip(runs, groups, strict=True)
    )
    return CompactionPlan(runs=fold_runs, level=0, mode=mode)


def _summary_target(tokens: int, config: RuleConfig) -> int:
    return max(config.min_summary_tokens,
               min(config.max_summary_tokens, int(tokens * config.summary_ratio)))


def _plan_rollup(
    commit: ContextCommit, budget: int, cal: float, config: RuleConfig, instructions: str
) -> CompactionPlan | None:
    """Summaries are never rewritten, but when together they outgrow their share of the
    budget the newest are folded into one roll-up (they become `summarized`).

    The newest, not the oldest: summaries sit right after the system prompt, so a roll-up
    rewrites the request from the first summary it folds. Rolling the newest run leaves the
    older summaries, and the cached prefix they form, untouched; the roll-up lands where the
    new summary of the same compaction would have landed anyway. Only when the newest run
    cannot free enough does it reach back further (as far as the first summary, rarely)."""
    items = commit.items
    summaries = sorted((p for p in commit.live if items[p].is_summary),
                       key=lambda p: (items[p].order, p))
    total = sum(items[p].tokens for p in summaries)
    share = config.summary_share * budget / cal
    if total <= share or len(summaries) < 2:
        return None
    # Folding `acc` tokens into a roll-up of `rollup_ratio * acc` frees the rest.
    need = (total - config.rollup_target * share) / max(0.05, 1.0 - config.rollup_ratio)
    run: list[int] = []
    group = items[summaries[-1]].attached_from
    acc = 0
    for p in reversed(summaries):
        it = items[p]
        if it.locked or it.attached_from != group:
            break
        run.append(p)
        acc += it.tokens
        if acc >= need and len(run) >= 2:
            break
    run.reverse()
    if len(run) < 2:
        return None
    request = SummaryRequest(
        entries=_entries(items, run),
        target_tokens=max(config.min_summary_tokens, int(acc * config.rollup_ratio)),
        instructions=instructions,
        level=1,
        scope=f"attached from {group}" if group else "",
    )
    return CompactionPlan(runs=(FoldRun(tuple(run), group, request),), level=1)


def apply_compaction(
    commit: ContextCommit,
    plan: CompactionPlan,
    texts: Sequence[str],
    *,
    now: float,
    counter: TokenCounter,
    config: RuleConfig,
    pinned: frozenset[str] = frozenset(),
) -> ContextCommit:
    """Fold each run into one new summary item appended after the existing ones (earlier
    summaries are never rewritten). Because the prompt after the summaries is re-sent from
    here anyway, pending aging and idle clearing ride along at no extra cache cost."""
    items = list(commit.items)
    changed: set[int] = set()
    folded = 0
    applied = 0
    for run, text in zip(plan.runs, texts, strict=True):
        scope = run.request.scope
        rendered = fence(text, scope=scope, count=_count_covered(items, run.positions))
        tokens = item_tokens("user", rendered, counter)
        if not fold_saves(tokens, (items[p] for p in run.positions)):
            # A summary no smaller than what it would fold only makes the request bigger:
            # the items stay as they are.
            continue
        keys = [items[p].key for p in run.positions]
        sid = summary_id(keys)
        order = min(items[p].order if items[p].is_summary else p for p in run.positions)
        summary = ContextItem(
            source_node_id=sid,
            role="user",
            state="summary",
            rendered=rendered,
            tokens=tokens,
            reason=f"summarized {len(run.positions)} items" if plan.level == 0
            else f"rolled up {len(run.positions)} summaries",
            attached_from=run.group,
            touched_at=now,
            seq=max(items[p].seq for p in run.positions),
            order=order,
        )
        for p in run.positions:
            # A folded item only needs to say where it went; dropping the rest keeps every
            # later keyframe small.
            items[p] = replace(
                items[p], state="summarized", merged_into=sid, rendered="", tokens=0,
                text_ref="", tool_args="", args_ref=False, reason="", tool_name="",
                tool_call_id="", call_of=None, touched_at=0.0, is_anchor=False,
            )
            changed.add(p)
        folded += len(run.positions)
        applied += 1
        items.append(summary)
    if not applied:
        return commit
    aged_through = age_tools(items, changed, start=commit.aged_through, force=True,
                             pinned=pinned, config=config, counter=counter)
    clear_idle(items, changed, commit.live, now=now, pinned=pinned, config=config,
               counter=counter)
    verb = "summarized" if plan.level == 0 else "rolled up"
    return make_commit(
        commit, items, changed, session_id=commit.session_id,
        head_node_id=commit.head_node_id, now=now,
        summary=f"compaction ({plan.mode}): {verb} {folded} items into {applied}",
        max_seq=commit.max_seq, aged_through=aged_through,
    )


def _gainful(plan: CompactionPlan, commit: ContextCommit,
             counter: TokenCounter) -> CompactionPlan | None:
    """The plan without the runs no summary could make smaller (their fence alone costs as
    much as they do), so nobody is asked to summarize them; None when none is left."""
    items = commit.items
    runs = tuple(
        run for run in plan.runs
        if fold_saves(item_tokens("user", fence("", scope=run.request.scope,
                                                count=_count_covered(items, run.positions)),
                                  counter),
                      (items[p] for p in run.positions))
    )
    if not runs:
        return None
    return plan if len(runs) == len(plan.runs) else replace(plan, runs=runs)


def fold_saves(summary_tokens: int, folded: Iterable[ContextItem]) -> bool:
    """The rule every fold obeys: its summary must cost fewer tokens than the live items it
    replaces, or the fold does not happen (short turns gain nothing from a summary)."""
    return summary_tokens < sum(it.tokens for it in folded if it.live)


def _count_covered(items: Sequence[ContextItem], positions: Sequence[int]) -> int:
    n = 0
    for p in positions:
        it = items[p]
        if it.is_summary:
            n += _covered_from_reason(it.reason)
        else:
            n += 1
    return n


def _covered_from_reason(reason: str) -> int:
    parts = reason.split()
    for part in parts:
        if part.isdigit():
            return int(part)
    return 1
