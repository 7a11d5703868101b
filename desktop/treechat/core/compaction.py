"""The one compaction loop, free of I/O: it plans folds (the oldest unpinned run of items into
one summary) and roll-ups (the newest summaries into one, the oldest left byte-identical),
yields each plan, receives the summaries however they were made, and applies them append-only."""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field, replace

from .aging import age_tools, clear_idle
from .commit import ContextCommit, ContextItem, item_tokens, make_commit, summary_id
from .compaction_facts import (
    facts_section,
    facts_so_far,
    facts_tokens,
    folded_facts,
    line_cost,
    new_lines,
    section_lines,
    within,
)
from .rule_config import CompactionMode, CompactionRequest, RuleConfig
from .summarize import SummaryEntry, SummaryRequest, fence
from .tokens import TokenCounter


@dataclass(frozen=True, slots=True)
class FoldRun:
    positions: tuple[int, ...]
    group: str | None
    request: SummaryRequest
    # A roll-up's room for the fact lines it carries over (their tokens).
    facts_room: int = 0


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    runs: tuple[FoldRun, ...]
    level: int
    mode: CompactionMode = "auto"
    notes: tuple[str, ...] = field(default=())
    # Tokens the facts so far may take together (0: none are kept apart; what a fold finds
    # is left to its summary's own lines).
    facts_budget: int = 0



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
    # Runs whose summary came back no smaller than what they would fold: they stay as they
    # are, and are not planned again (a run that can never fold must not take the rounds a
    # roll-up needs).
    unsaved: set[tuple[int, ...]] = set()
    for _ in range(MAX_COMPACTION_ROUNDS):
        plan = _next_plan(current, replace(request, mode=mode), config=config, pinned=pinned,
                          instructions=instructions, counter=counter, unsaved=unsaved)
        if plan is None:
            break
        texts = list((yield plan))
        if len(texts) != len(plan.runs):
            raise ValueError(f"{len(texts)} summaries for {len(plan.runs)} runs")
        applied = apply_compaction(current, plan, texts, now=now, counter=counter,
                                   config=config, pinned=pinned)
        unsaved.update(run.positions for run in plan.runs
                       if applied.items[run.positions[0]].state != "summarized")
        if applied is not current:
            current = applied
            out.append(current)
        mode = "auto"
    return tuple(out)


def _next_plan(commit: ContextCommit, request: CompactionRequest, *, config: RuleConfig,
               pinned: frozenset[str], instructions: str, counter: TokenCounter,
               unsaved: set[tuple[int, ...]]) -> CompactionPlan | None:
    """The folds the history calls for; when none of them can be made (nothing left to
    fold, or no summary of it would be smaller), the roll-up the summaries call for: a
    history over its trigger must not keep summaries over their share."""
    for planned in (plan_compaction(commit, request, config=config, pinned=pinned,
                                    instructions=instructions),
                    plan_rollup(commit, request, config=config, instructions=instructions)):
        plan = _gainful(planned, commit, counter, unsaved) if planned is not None else None
        if plan is not None:
            return plan
    return None


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


def kept_from(commit: ContextCommit, config: RuleConfig, budget: int = 0) -> int:
    """The position from which the last `keep_recent_turns` exchanges start: they are always
    sent in full, and nothing from there on is folded. With a `budget`, the exchanges before
    the newest one are kept only while they fit `keep_recent_share` of it: a few long
    replies must not hold most of the budget out of reach (what is re-sent after every
    compaction is what follows the summaries)."""
    items = commit.items
    protect_from = len(items)
    users = 0
    acc = 0
    cap = config.keep_recent_share * budget if budget > 0 else float("inf")
    for p in reversed(commit.live):
        it = items[p]
        acc += it.tokens
        if it.role == "user" and not it.is_summary and not it.attached_from:
            if users >= 1 and acc > cap:
                break
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
    protect_from = kept_from(commit, config, int(budget / cal))
    facts_budget = int(config.facts_share * budget / cal)
    if facts_budget < config.min_summary_tokens:
        facts_budget = 0
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
                # What the fold adds to the facts block comes out of its summary's target:
                # together they take no more than a summary alone did.
                target_tokens=max(config.min_summary_tokens, _summary_target(
                    sum(items[p].tokens for p in run), config) - (
                    facts_tokens([items[p] for p in run]) if facts_budget and not g else 0)),
                instructions=instructions,
                level=0,
                scope=f"attached from {g}" if g else "",
                facts_apart=facts_budget > 0 and not g,
            ),
        )
        for run, g in zip(runs, groups, strict=True)
    )
    return CompactionPlan(runs=fold_runs, level=0, mode=mode, facts_budget=facts_budget)


def plan_rollup(commit: ContextCommit, request: CompactionRequest, *, config: RuleConfig,
                instructions: str = "") -> CompactionPlan | None:
    """The roll-up the summaries call for (None while they fit their share)."""
    cal = request.calibration if request.calibration > 0 else 1.0
    return _plan_rollup(commit, request.history_budget, cal, config, instructions)


def _summary_target(tokens: int, config: RuleConfig) -> int:
    return max(config.min_summary_tokens,
               min(config.max_summary_tokens, int(tokens * config.summary_ratio)))


# The share of a roll-up's size its carried fact lines may take at most.
ROLLUP_FACTS_SHARE = 0.7
# What a roll-up's fence and header cost on top of its lines.
ROLLUP_FENCE_TOKENS = 60


def _plan_rollup(
    commit: ContextCommit, budget: int, cal: float, config: RuleConfig, instructions: str
) -> CompactionPlan | None:
    """Summaries are never rewritten, but when together they outgrow their share of the
    budget the newest are folded into one roll-up (they become `summarized`).

    The newest, not the oldest: summaries sit right after the system prompt, so a roll-up
    rewrites the request from the first summary it folds. Rolling the newest run leaves the
    older summaries, and the cached prefix they form, untouched; the roll-up lands where the
    new summary of the same compaction would have landed anyway. When the newest run cannot
    free enough it reaches back further, but never to the oldest summary while there are
    others: the share is budgeted so that this holds (the summaries' share is large and each
    roll-up takes only what it must, so the newest roll-up stays small)."""
    items = commit.items
    summaries = sorted((p for p in commit.live if items[p].is_summary),
                       key=lambda p: (items[p].order, p))
    total = sum(items[p].tokens for p in summaries)
    share = config.summary_share * budget / cal
    if total <= share or len(summaries) < 2:
        return None
    # What the roll-up must free (its own fence included), and so the fewest of the newest
    # summaries that can free it when a roll-up keeps at least `rollup_ratio` of its input.
    free = total - config.rollup_target * share + ROLLUP_FENCE_TOKENS
    need = free / max(0.05, 1.0 - config.rollup_ratio)
    run: list[int] = []
    group = items[summaries[-1]].attached_from
    acc = 0
    # The oldest summary is never rolled up while there are others to fold: the request
    # from the system prompt through it stays byte-identical (a cached prefix).
    oldest = summaries[0] if len(summaries) >= 3 else -1
    for p in reversed(summaries):
        it = items[p]
        if p == oldest or it.locked or it.attached_from != group:
            break
        run.append(p)
        acc += it.tokens
        if acc >= need and len(run) >= 2:
            break
    run.reverse()
    if len(run) < 2:
        return None
    # Free what must be freed and keep the rest: a roll-up condensed further than that
    # loses more than it must, and makes the next one come sooner.
    target = max(config.min_summary_tokens, int(max(acc * config.rollup_ratio, acc - free)))
    # The fact lines of the rolled summaries are carried over as they are, within what the
    # facts' budget leaves beside the other summaries' lines and most of the target.
    facts_budget = int(config.facts_share * budget / cal)
    carried = sum(line_cost(ln) for p in run for ln in section_lines(items[p].rendered))
    others = sum(line_cost(ln) for ln in facts_so_far(
        items[p] for p in summaries if p not in run))
    # The older summaries' lines never move (they are the cached prefix), so the budget they
    # leave shrinks as they accumulate; the roll-up still gets its fair part of it, by the
    # share of the conversation it covers, or the newest facts alone would be thinned.
    covered = _count_covered(items, summaries)
    fair = facts_budget * _count_covered(items, run) // max(1, covered)
    room = min(carried, max(fair, facts_budget - others), int(ROLLUP_FACTS_SHARE * target))
    request = SummaryRequest(
        entries=_entries(items, run),
        target_tokens=max(config.min_summary_tokens, target - room),
        instructions=instructions,
        level=1,
        scope=f"attached from {group}" if group else "",
    )
    return CompactionPlan(runs=(FoldRun(tuple(run), group, request, facts_room=room),),
                          level=1, facts_budget=facts_budget)


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
    known = facts_so_far(it for it in items if it.live and it.is_summary)
    for run, text in zip(plan.runs, texts, strict=True):
        scope = run.request.scope
        lines = _run_facts(items, run, plan, known)
        rendered = fence(text, scope=scope, count=_count_covered(items, run.positions)) + (
            facts_section(lines))
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
        known.extend(lines)
        for p in run.positions:
            # A folded item only needs to say where it went; dropping the rest keeps every
            # later keyframe small.
            items[p] = replace(
                items[p], state="summarized", merged_into=sid, rendered="", tokens=0,
                text_ref="", tool_args="", args_ref=False, reason="", tool_name="",
                tool_call_id="", call_of=None, touched_at=0.0, is_anchor=False, facts=(),
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


def _run_facts(items: Sequence[ContextItem], run: FoldRun, plan: CompactionPlan,
               known: Sequence[str]) -> list[str]:
    """The fact lines a run's summary carries: for a fold, what its items state and found
    that no summary carries yet; for a roll-up, the lines of the summaries it rolls up,
    verbatim, within its room."""
    if plan.level == 0:
        if plan.facts_budget <= 0 or run.group:
            return []
        return new_lines(folded_facts([items[p] for p in run.positions]), known)
    carried = [ln for p in run.positions for ln in section_lines(items[p].rendered)]
    if plan.facts_budget <= 0:
        return carried
    return within(carried, run.facts_room)


def _gainful(plan: CompactionPlan, commit: ContextCommit, counter: TokenCounter,
             unsaved: set[tuple[int, ...]]) -> CompactionPlan | None:
    """The plan without the runs no summary could make smaller (their fence alone costs as
    much as they do, or their summary already came back no smaller), so nobody is asked to
    summarize them; None when none is left."""
    items = commit.items
    runs = tuple(
        run for run in plan.runs
        if run.positions not in unsaved and fold_saves(
            item_tokens("user", fence("", scope=run.request.scope,
                                      count=_count_covered(items, run.positions)), counter),
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
    """The messages the items at `positions` stand for: a summary its fence's count, any
    other item itself."""
    return sum(_covered(items[p].rendered) if items[p].is_summary else 1 for p in positions)


# The count a summary's fence gives: on its opening line, or (summaries stored before the
# note was said once a request) in its own note.
_FENCE_COUNT = re.compile(
    r"^(?:<<<conversation-summary, (\d+) messages|\[Condensed record[^\]\n]*?, (\d+) messages\.)")


def _covered(rendered: str) -> int:
    """The messages a summary stands for, as its fence says (a roll-up's fence counts the
    messages of every summary it rolled up, not the summaries)."""
    found = _FENCE_COUNT.match(rendered)
    return int(found.group(1) or found.group(2)) if found else 1
