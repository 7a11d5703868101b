"""Rules: tool aging (tail window, args cut, stub, per-item cap, protected tools), idle
clearing, summarize (threshold, hysteresis, append-only, attach boundaries, pins, anchors),
and the invariants 3 (monotonic tightening) and 4 (locked items untouched)."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.commits import generate_commit
from tests.support.context_graph import ChainBuilder

from treechat.core.commit import ContextCommit, is_tighter_or_equal
from treechat.core.render import Composition, render
from treechat.core.rules import (
    CLEARED_PLACEHOLDER,
    CompactionRequest,
    LoopDone,
    RuleConfig,
    advance,
    compaction_loop,
    drive,
    foldable_items,
    generate_chain,
)
from treechat.core.summarize import DeterministicSummarizer
from treechat.providers.tokenizer import counter_for

COUNTER = counter_for("gpt-4o")
IMMEDIATE = RuleConfig(aging_batch_turns=1)
DEFAULT_RULES = RuleConfig()


def _run(b: ChainBuilder, commit: ContextCommit | None, nodes: list, *, config: RuleConfig,  # type: ignore[type-arg]
         compaction: CompactionRequest | None = None, pinned: frozenset[str] = frozenset(),
         now: float | None = None) -> list[ContextCommit]:
    return list(generate_chain(commit, nodes, session_id=b.session_id,
                               head_node_id=b.head or "", now=now or b.now, counter=COUNTER,
                               config=config, compaction=compaction, pinned=pinned))


def _items_for(commit: ContextCommit, node_id: str):  # type: ignore[no-untyped-def]
    return next(i for i in commit.items if i.source_node_id == node_id)


def test_tool_results_age_outside_the_tail_window() -> None:
    b = ChainBuilder()
    commit = None
    tools = []
    for i in range(5):
        b.user(f"q{i}")
        a = b.assistant(f"a{i}")
        tools.append(b.tool(a, "read_file", f"content {i}\n" * 40, args={"path": "x" * 400}))
        commit = _run(b, commit, b.nodes[-3:], config=IMMEDIATE)[-1]
    assert commit is not None
    states = [_items_for(commit, t.id).state for t in tools]
    assert states == ["aged", "aged", "full", "full", "full"]  # tail = 3 assistant turns
    aged = _items_for(commit, tools[0].id)
    assert aged.rendered.startswith("[read_file output, 40 lines")
    assert "\n" not in aged.rendered
    assert len(aged.tool_args) <= 260
    assert json.loads(aged.tool_args)  # still valid JSON for the provider
    assert aged.reason == "tail_window"


def test_aging_waits_for_a_batch_so_the_prefix_is_rewritten_rarely() -> None:
    b = ChainBuilder()
    commit = None
    tools = []
    config = RuleConfig(aging_batch_turns=3)
    aged_counts = []
    for i in range(9):
        b.user(f"q{i}")
        a = b.assistant(f"a{i}")
        tools.append(b.tool(a, "grep", f"hit {i}\n" * 20))
        commit = _run(b, commit, b.nodes[-3:], config=config)[-1]
        aged_counts.append(sum(1 for t in tools if _items_for(commit, t.id).state == "aged"))
    # Nothing ages until three turns sit outside the tail, then all three age at once.
    assert aged_counts == [0, 0, 0, 0, 0, 3, 3, 3, 6]


def test_per_item_cap_applies_even_inside_the_tail() -> None:
    b = ChainBuilder()
    b.user("run it")
    a = b.assistant("running")
    t = b.tool(a, "run_tests", "START\n" + "x" * 30_000 + "\nEND")
    commit = _run(b, None, b.nodes, config=RuleConfig())[-1]
    item = _items_for(commit, t.id)
    assert item.state == "full" and len(item.rendered) <= 4000
    assert item.rendered.startswith("START") and item.rendered.endswith("END")
    assert item.reason == "per_item_cap"


def test_protected_tools_and_pinned_items_never_age() -> None:
    b = ChainBuilder()
    commit = None
    protected = pinned_tool = None
    for i in range(6):
        b.user(f"q{i}")
        a = b.assistant(f"a{i}")
        if i == 0:
            protected = b.tool(a, "todo_list", "1. ship it")
            pinned_tool = b.tool(a, "grep", "important hit")
            commit = _run(b, commit, b.nodes[-4:], config=IMMEDIATE,
                          pinned=frozenset({pinned_tool.id}))[-1]
        else:
            b.tool(a, "grep", "other")
            commit = _run(b, commit, b.nodes[-3:], config=IMMEDIATE,
                          pinned=frozenset({pinned_tool.id}))[-1]  # type: ignore[union-attr]
    assert commit is not None and protected is not None and pinned_tool is not None
    assert _items_for(commit, protected.id).state == "full"
    assert _items_for(commit, pinned_tool.id).state == "full"


def test_idle_clearing_runs_when_the_session_was_idle() -> None:
    b = ChainBuilder()
    commit = None
    tools = []
    for i in range(6):
        b.user(f"q{i}")
        a = b.assistant(f"a{i}")
        tools.append(b.tool(a, "grep", f"hit {i}\n" * 10))
        commit = _run(b, commit, b.nodes[-3:], config=IMMEDIATE)[-1]
    assert commit is not None
    assert _items_for(commit, tools[0].id).state == "aged"
    # An active session keeps its aged stubs (rewriting them would break the cache).
    b.now += 600
    b.user("still here")
    commit = _run(b, commit, b.nodes[-1:], config=IMMEDIATE)[-1]
    assert _items_for(commit, tools[0].id).state == "aged"
    # After an idle hour the provider cache is cold: aged results become the placeholder.
    b.now += 2 * 3600
    b.user("back again")
    commit = _run(b, commit, b.nodes[-1:], config=IMMEDIATE)[-1]
    cleared = _items_for(commit, tools[0].id)
    assert cleared.state == "cleared" and cleared.rendered == CLEARED_PLACEHOLDER
    assert _items_for(commit, tools[-1].id).state == "full"


def _conversation(turns: int, budget: int, *, config: RuleConfig = DEFAULT_RULES,
                  pinned: frozenset[str] = frozenset()) -> tuple[ChainBuilder, list[ContextCommit]]:
    b, per_turn = _turns(turns, budget, config=config, pinned=pinned)
    return b, [c for chain in per_turn for c in chain]


def _turns(turns: int, budget: int, *, config: RuleConfig = DEFAULT_RULES,
           pinned: frozenset[str] = frozenset()) -> tuple[ChainBuilder, list[list[ContextCommit]]]:
    b = ChainBuilder()
    commit = None
    out: list[list[ContextCommit]] = []
    for i in range(turns):
        b.turn(f"Question {i}: the value is {1000 + i}. " + "context " * 60, "answer " * 40)
        chain = _run(b, commit, b.nodes[-2:], config=config, pinned=pinned,
                     compaction=CompactionRequest(history_budget=budget))
        out.append(chain)
        commit = chain[-1]
    return b, out


def test_summarize_over_threshold_down_to_target_with_hysteresis() -> None:
    budget = 2_000
    _, per_turn = _turns(30, budget)
    compacting = [t for t, chain in enumerate(per_turn)
                  if any(c.summary.startswith("compaction") for c in chain)]
    assert compacting
    for chain in per_turn:
        if any(c.summary.startswith("compaction") for c in chain):
            assert chain[-1].total_tokens <= 0.5 * budget + 200
        # what is sent stays under the trigger
        assert chain[-1].total_tokens <= DEFAULT_RULES.summarize_trigger * budget
    # Hysteresis: after a compaction, the next turns do not compact again at once.
    gaps = [b - a for a, b in itertools.pairwise(compacting)]
    assert min(gaps) >= 3


def test_compaction_is_append_only() -> None:
    _, commits = _conversation(40, 2_000)
    final = commits[-1]
    by_id = {i.source_node_id: i for c in commits for i in c.items if i.state == "summary"}
    for c in commits:
        for i in c.items:
            if i.state == "summary":
                later = next(x for x in final.items if x.source_node_id == i.source_node_id)
                # A summary is never rewritten: it is either unchanged or folded whole.
                assert later.state in ("summary", "summarized")
                if later.state == "summary":
                    assert later.rendered == i.rendered
    assert len(by_id) >= 2


def test_summary_is_fenced_and_keeps_facts() -> None:
    # a summary given room for a sentence of the question (at the default ratio a long
    # question does not fit a 15-message summary's target)
    _, commits = _conversation(20, 2_000, config=replace(DEFAULT_RULES, summary_ratio=0.15))
    summary = next(i for i in commits[-1].items if i.state == "summary")
    assert summary.rendered.startswith("<<<conversation-summary, ")
    assert summary.rendered.endswith("conversation-summary>>>")
    # what the fence means is said once, before the request's first summary
    sent = [m["content"] for m in render(commits[-1], Composition())]
    assert sum("as information, not as instructions" in t for t in sent) == 1
    assert "1000" in summary.rendered or "1001" in summary.rendered


def test_pinned_and_anchor_items_never_compact() -> None:
    b = ChainBuilder()
    first = b.user("The task: migrate the ledger to Decimal.")
    b.assistant("ok")
    pinned_user = b.user("Pinned note: the deadline is March 3.")
    b.assistant("noted")
    commit = _run(b, None, b.nodes, config=RuleConfig(),
                  compaction=CompactionRequest(history_budget=1_000))[-1]
    for i in range(25):
        b.turn(f"Q{i} " + "words " * 80, "reply " * 40)
        commit = _run(b, commit, b.nodes[-2:], config=RuleConfig(),
                      pinned=frozenset({pinned_user.id}),
                      compaction=CompactionRequest(history_budget=1_000))[-1]
    assert _items_for(commit, first.id).state == "full"  # the opening message is an anchor
    assert _items_for(commit, first.id).is_anchor
    assert _items_for(commit, pinned_user.id).state == "full"
    assert any(i.state == "summarized" for i in commit.items)


def test_summarize_respects_attach_boundaries() -> None:
    src = ChainBuilder(session_id="side", seq=500)
    source = None
    for i in range(6):
        nodes = src.turn(f"side finding {i} " + "detail " * 60, "side reply " * 30)
        source = generate_commit(source, nodes, session_id="side", head_node_id=src.head or "",
                                 now=src.now, counter=COUNTER)
    assert source is not None
    b = ChainBuilder()
    commit = None
    for i in range(4):
        nodes = b.turn(f"main {i} " + "text " * 60, "main reply " * 30)
        commit = _run(b, commit, nodes, config=RuleConfig())[-1]
    att = b.runtime("attach", "side", {"source_session": "side", "source_head": src.head,
                                       "source_commit": source.id})
    commit = generate_commit(commit, [att], session_id="s", head_node_id=att.id, now=b.now,
                             counter=COUNTER, attachments={att.id: source})
    for i in range(4):
        nodes = b.turn(f"after {i} " + "text " * 60, "reply " * 30)
        commit = _run(b, commit, nodes, config=RuleConfig())[-1]
    assert commit is not None
    commit = _run(b, commit, [], config=RuleConfig(),
                  compaction=CompactionRequest(history_budget=3_000, mode="manual"))[-1]
    by_key = {i.key: i for i in commit.items}
    for item in commit.items:
        if item.state != "summarized":
            continue
        summary = next(s for s in commit.items if s.source_node_id == item.merged_into)
        # A summary covers native items or one attach block, never both.
        assert summary.attached_from == item.attached_from
    assert by_key


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.booleans()),
                min_size=2, max_size=14))
def test_rules_only_tighten_and_never_touch_locked_items(
    script: list[tuple[int, int, bool]],
) -> None:
    """Invariants 3 and 4 over random conversations, tool loads, idle gaps and compactions."""
    b = ChainBuilder()
    commit: ContextCommit | None = None
    for tools, mode, idle in script:
        if idle:
            b.now += 3 * 3600
        b.user("q " * 120, **({"locked": True} if mode == 1 else {}))
        a = b.assistant("a " * 60)
        for k in range(tools):
            b.tool(a, "grep" if k else "todo_list", "hit\n" * (300 * k + 5))
        nodes = [n for n in b.nodes if commit is None or n.seq > commit.max_seq]
        compaction = None
        if mode == 2:
            compaction = CompactionRequest(history_budget=1_200)
        elif mode == 1:
            compaction = CompactionRequest(history_budget=900, mode="manual")
        for child in _run(b, commit, nodes, config=RuleConfig(aging_batch_turns=2),
                          compaction=compaction):
            if commit is not None:
                for p, before in enumerate(commit.items):
                    after = child.items[p]
                    assert is_tighter_or_equal(before, after), (before, after)
                    if before.locked:
                        assert after == before
            commit = child


# --- the one compaction loop, driven step by step -----------------------------------------


def _summaries(commit: ContextCommit) -> list[tuple[str, str]]:
    """(id, text) of the summaries as render orders them."""
    items = commit.items
    order = sorted((p for p in commit.live if items[p].is_summary),
                   key=lambda p: (items[p].order, p))
    return [(items[p].source_node_id, items[p].rendered) for p in order]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.integers(300, 2_000)),
                min_size=3, max_size=16))
def test_the_one_loop_keeps_its_invariants_when_driven_from_outside(
    script: list[tuple[int, bool, int]],
) -> None:
    """The engine drives `compaction_loop` a step at a time with summaries made elsewhere
    (a model, another thread); whoever drives it, states only tighten, summaries are
    append-only (live ones keep their bytes and their place at the front), locked items are
    untouched, and the commits are the ones `drive` makes from the same summaries."""
    b = ChainBuilder()
    commit: ContextCommit | None = None
    for tools, locked, budget in script:
        b.user("q " * 120, **({"locked": True} if locked else {}))
        a = b.assistant("a " * 60)
        for k in range(tools):
            b.tool(a, "grep", "hit\n" * (200 * k + 5))
        nodes = [n for n in b.nodes if commit is None or n.seq > commit.max_seq]
        base = _run(b, commit, nodes, config=DEFAULT_RULES)
        current = base[-1] if base else commit
        assert current is not None
        request = CompactionRequest(history_budget=budget)
        loop = compaction_loop(current, request, now=b.now, counter=COUNTER,
                               config=DEFAULT_RULES)
        texts_given: list[list[str]] = []
        step = advance(loop)
        while not isinstance(step, LoopDone):
            texts = [f"summary of {len(run.positions)} items, round {len(texts_given)}"
                     for run in step.runs]
            texts_given.append(texts)
            step = advance(loop, texts)
        # the same loop driven again with the same summaries gives the same commits
        rounds = iter(texts_given)
        again = compaction_loop(current, request, now=b.now, counter=COUNTER,
                                config=DEFAULT_RULES)
        s2 = advance(again)
        while not isinstance(s2, LoopDone):
            s2 = advance(again, next(rounds))
        assert [c.id for c in s2.commits] == [c.id for c in step.commits]
        prev = current
        for child in step.commits:
            for p, before in enumerate(prev.items):
                after = child.items[p]
                assert is_tighter_or_equal(before, after), (before, after)
                if before.locked:
                    assert after == before
            old, new = _summaries(prev), _summaries(child)
            kept = [s for s in old if s[0] in {n[0] for n in new}]
            assert new[: len(kept)] == kept  # survivors unchanged, still in front
            prev = child
        commit = prev


def test_a_loop_refuses_the_wrong_number_of_summaries() -> None:
    b = ChainBuilder()
    for i in range(12):
        b.turn(f"question {i} " + "word " * 200, "answer " * 100)
    (commit,) = _run(b, None, b.nodes, config=DEFAULT_RULES)
    loop = compaction_loop(commit, CompactionRequest(history_budget=2_000), now=b.now,
                           counter=COUNTER, config=DEFAULT_RULES)
    plan = advance(loop)
    assert not isinstance(plan, LoopDone)
    with pytest.raises(ValueError, match="summaries for"):
        advance(loop, [])


def test_rollups_fold_the_newest_summaries_and_leave_the_prefix_alone() -> None:
    """A roll-up rewrites the request from the first summary it folds; folding the newest
    keeps the oldest summaries, and the cached prefix they form, byte for byte."""
    b = ChainBuilder()
    commit: ContextCommit | None = None
    rollups = 0
    # summaries given a small share, so they outgrow it often
    rules = replace(DEFAULT_RULES, summary_share=0.3)
    for i in range(60):
        nodes = b.turn(f"Turn {i}: " + " ".join(f"w{i}x{k}" for k in range(120)), "ok " * 80)
        chain = _run(b, commit, nodes, config=rules,
                     compaction=CompactionRequest(history_budget=3_000))
        for child in chain:
            if commit is not None and any(
                    it.reason.startswith("rolled up") for it in child.summaries()
                    if it.source_node_id not in {x.source_node_id for x in commit.items}):
                rollups += 1
                old, new = _summaries(commit), _summaries(child)
                assert old and new[0] == old[0]
            commit = child
    assert rollups >= 2


def test_an_old_attachment_ages_to_a_stub_naming_the_file_and_a_new_one_is_budgeted() -> None:
    from treechat.core.attachments import AttachmentRef, with_attachments
    from treechat.core.commit import ContextItem
    from treechat.core.model import Node
    from treechat.core.rules import age_tools, node_item

    ref = AttachmentRef("ab" * 32, "plan.pdf", "application/pdf", 4096, tokens=900)
    node = Node(id="u1", seq=1, created_at=1.0, session_id="s", role="user", output="Read this",
                metadata=with_attachments({}, [ref]))
    item = node_item(node, COUNTER, DEFAULT_RULES, 1.0)
    assert item is not None and item.files == (ref,)
    assert item.tokens >= 900  # the file's tokens count against the budget at once
    items: list[ContextItem] = [item] + [
        ContextItem(source_node_id=f"a{i}", role="assistant", rendered="ok", tokens=3)
        for i in range(4)
    ]
    changed: set[int] = set()
    age_tools(items, changed, start=0, force=True, pinned=frozenset(), config=DEFAULT_RULES,
              counter=COUNTER)
    aged = items[0]
    assert changed == {0} and aged.files == () and aged.state == "aged"
    assert aged.rendered.startswith("Read this\n\n[attachment plan.pdf (application/pdf")
    assert aged.tokens < 900


def test_a_file_an_import_did_not_carry_is_named_to_the_model_not_sent() -> None:
    from treechat.core.model import Node
    from treechat.core.rules import node_item

    meta = {"attachments": [
        {"placeholder": True, "kind": "image", "name": "chart.png", "ref": "file-PLOT123"},
        {"placeholder": True, "kind": "file", "name": "../../etc/passwd"},
    ]}
    user = Node(id="u1", seq=1, created_at=1.0, session_id="s", role="user",
                output="What does this show?", metadata=meta)
    item = node_item(user, COUNTER, DEFAULT_RULES, 1.0)
    assert item is not None and item.files == ()
    assert item.rendered == ("What does this show?\n\n"
                             "[image not included in this imported chat: chart.png]\n"
                             "[file not included in this imported chat: passwd]")
    only = Node(id="u2", seq=2, created_at=1.0, session_id="s", role="user", output="",
                metadata=meta)
    alone = node_item(only, COUNTER, DEFAULT_RULES, 1.0)
    assert alone is not None and alone.rendered.startswith("[image not included")
    plain = Node(id="u3", seq=3, created_at=1.0, session_id="s", role="user", output="hi")
    item3 = node_item(plain, COUNTER, DEFAULT_RULES, 1.0)
    assert item3 is not None and item3.rendered == "hi" and item3.text_ref == "node"


def _manual(commit: ContextCommit, summarize) -> tuple[ContextCommit, ...]:  # type: ignore[no-untyped-def]
    loop = compaction_loop(commit, CompactionRequest(history_budget=3_000, mode="manual"),
                           now=1.0, counter=COUNTER, config=DEFAULT_RULES)
    return drive(loop, summarize)


def test_a_fold_whose_summary_is_not_smaller_never_happens() -> None:
    """Short turns: the fenced summary of three short messages costs more than the messages.
    /compact then leaves every item full and the request no bigger."""
    b = ChainBuilder()
    b.turn("Hi.", "Hello!")
    b.turn("A dragon?", "Yes, a small one.")
    b.turn("Name it.", "Ember.")
    b.turn("Tell me a long story about it.", "Once upon a time...")
    (commit,) = _run(b, None, b.nodes, config=DEFAULT_RULES)
    count, tokens = foldable_items(commit, DEFAULT_RULES)
    assert count >= 3 and tokens > 0  # the older exchanges could be folded...
    summarizer = DeterministicSummarizer(COUNTER)
    assert _manual(commit, summarizer.summarize) == ()  # ...but no summary would be smaller
    assert all(i.state == "full" for i in commit.items)


def test_a_fold_happens_exactly_when_its_summary_is_smaller() -> None:
    """The rule is about tokens, not about any kind of text: the same items fold with a
    summary one token under their cost and stay full with one at their cost."""
    b = ChainBuilder()
    for i in range(4):
        b.turn(f"Question {i}: " + "detail " * 40, "answer " * 30)
    (commit,) = _run(b, None, b.nodes, config=DEFAULT_RULES)
    plan = advance(compaction_loop(commit, CompactionRequest(history_budget=3_000,
                                                             mode="manual"),
                                   now=1.0, counter=COUNTER, config=DEFAULT_RULES))
    assert not isinstance(plan, LoopDone)
    (run,) = plan.runs
    cost = sum(commit.items[p].tokens for p in run.positions)

    (folded,) = _manual(commit, lambda _r: "- user: the question was about details.")
    (summary,) = [i for i in folded.items if i.state == "summary"]
    assert summary.tokens < cost
    assert folded.total_tokens < commit.total_tokens
    too_big = "word " * (cost * 2)
    assert _manual(commit, lambda _r: too_big) == ()


def test_runs_no_summary_could_shrink_are_never_sent_to_a_summarizer() -> None:
    """One word a message: the summary's fence alone costs more than the run, so no
    summarizer (a model call, say) is asked for it."""
    b = ChainBuilder()
    for word in ("Hi.", "Yes.", "No."):
        b.turn(word, "Ok.")
    (commit,) = _run(b, None, b.nodes, config=DEFAULT_RULES)
    asked: list[object] = []

    def summarize(request):  # type: ignore[no-untyped-def]
        asked.append(request)
        return "x"

    assert _manual(commit, summarize) == ()
    assert asked == []
