"""Facts so far: each fold appends what the user stated and what tool results found to its
new summary's facts section, roll-ups carry those lines over byte for byte, and past the
budget the oldest tool facts go before any statement."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

from tests.support.context_graph import ChainBuilder

from treechat.core.commit import ContextCommit, ContextItem, item_from_record, item_record
from treechat.core.compaction_facts import (
    USER_PREFIX,
    FactLine,
    facts_section,
    facts_so_far,
    folded_facts,
    line_cost,
    new_lines,
    section_lines,
    thinning_order,
    within,
)
from treechat.core.rule_config import CompactionRequest, RuleConfig
from treechat.core.rules import generate_chain
from treechat.providers.tokenizer import counter_for

COUNTER = counter_for("gpt-4o")


def _pods(odd: str) -> str:
    rows = ["NAME            STATUS     RESTARTS"]
    rows += [f"web-{k}-00aa      Running    0" for k in range(10)]
    rows.insert(5, f"{odd}      OOMKilled  31")
    return "\n".join(rows)


def _chat(turns: int, budget: int, rules: RuleConfig | None = None) -> list[ContextCommit]:
    b = ChainBuilder()
    commit: ContextCommit | None = None
    out: list[ContextCommit] = []
    for i in range(turns):
        user = " ".join(f"Item {i}.{k} of the audit has {k * i} entries." for k in range(8))
        if i == 2:
            user += " We deploy only from the harbour branch, never from main."
        tools = [("kubectl", _pods(f"jobs-{i:02d}-ffee"))] if i % 3 == 1 else []
        reply = " ".join(f"Entry {k} of item {i} looks consistent." for k in range(12))
        chain = generate_chain(commit, b.turn(user, reply, tools), session_id=b.session_id,
                               head_node_id=b.head or "", now=b.now, counter=COUNTER,
                               config=rules or RuleConfig(),
                               compaction=CompactionRequest(history_budget=budget))
        out.extend(chain)
        commit = chain[-1] if chain else commit
    return out


def _facts(commit: ContextCommit) -> list[str]:
    items = commit.items
    ordered = sorted((p for p in commit.live if items[p].is_summary),
                     key=lambda p: (items[p].order, p))
    return facts_so_far(items[p] for p in ordered)


def _is_subsequence(small: list[str], big: list[str]) -> bool:
    it = iter(big)
    return all(any(x == y for y in it) for x in small)


def test_roll_ups_carry_fact_lines_over_byte_for_byte_or_leave_them_out() -> None:
    for share in (0.4, 0.05):
        commits = _chat(90, 4_000, RuleConfig(facts_share=share))
        rollups = 0
        for before, after in itertools.pairwise(commits):
            if "rolled up" not in after.summary:
                continue
            rollups += 1
            old, new = _facts(before), _facts(after)
            # Nothing is rewritten: each line is carried as it was, or not at all, and the
            # lines of the summaries the roll-up left alone are all there.
            assert _is_subsequence(new, old)
            first = section_lines(next(it for it in after.live_items() if it.is_summary
                                       and it.order == min(x.order for x in after.summaries())
                                       ).rendered)
            assert new[: len(first)] == first
        assert rollups >= 2


def test_folds_append_after_the_facts_already_carried() -> None:
    commits = _chat(90, 4_000)
    grew = 0
    for before, after in itertools.pairwise(commits):
        old, new = _facts(before), _facts(after)
        if "summarized" in after.summary and new != old:
            grew += 1
            assert new[: len(old)] == old
    assert grew >= 3
    last = _facts(commits[-1])
    assert any("We deploy only from the harbour branch" in ln for ln in last)
    assert any("OOMKilled" in ln and "jobs-" in ln for ln in last)
    assert len(last) == len({ln.lower() for ln in last})


def test_over_budget_tool_facts_are_thinned_evenly_before_any_statement() -> None:
    lines = [f"{USER_PREFIX}I work on the atlas team."]
    lines += [f"- kubectl get pods: row {k} of a long listing of pods" for k in range(8)]
    lines.append(f"{USER_PREFIX}Our release train leaves on Thursdays.")
    one = line_cost(lines[1])
    total = sum(map(line_cost, lines))
    kept = within(lines, total - 4 * one)
    # every other row goes (not the four oldest): rows of every age are still carried
    rows = [ln.split("row ")[1].split()[0] for ln in kept if "row " in ln]
    assert rows == ["0", "3", "5", "7"]
    assert kept[0] == lines[0] and kept[-1] == lines[-1]
    tools_gone = within(lines, total - 8 * one)
    assert tools_gone == [lines[0], lines[-1]]
    assert within(lines, total) == lines
    assert within(lines, 0) == []


def test_thinning_leaves_what_remains_evenly_spread() -> None:
    for n in (1, 2, 5, 8, 13):
        order = thinning_order(n)
        assert sorted(order) == list(range(n))
    assert thinning_order(8)[:3] == [4, 2, 6]
    left = sorted(set(range(16)) - set(thinning_order(16)[:8]))
    assert left[0] == 0 and left[-1] == 15
    assert max(b - a for a, b in itertools.pairwise(left)) <= 3


def test_a_fold_adds_only_lines_not_carried_yet() -> None:
    found = [FactLine("- a: 1", False), FactLine("- B: 2", False), FactLine("- b: 2", False)]
    assert new_lines(found, ["- A: 1"]) == ["- B: 2"]


def test_folded_tool_items_give_their_findings_under_their_call_once() -> None:
    tool = ContextItem(source_node_id="t1", role="tool", rendered="(cut)",
                       tool_name="kubectl", tool_args=json.dumps({"cmd": "get pods"}),
                       facts=("NAME: jobs-7, STATUS: OOMKilled", "NAME: jobs-1"))
    user = ContextItem(source_node_id="u1", role="user",
                       rendered="My laptop is a ThinkPad with 8 GB. What now?")
    attached = replace(user, source_node_id="u2", attached_from="cc_x")
    lines = [f.text for f in folded_facts([tool, user, attached])]
    # one line a call: the label once, its findings after it
    assert lines == ["- kubectl get pods: NAME: jobs-7, STATUS: OOMKilled; NAME: jobs-1",
                     f"{USER_PREFIX}My laptop is a ThinkPad with 8 GB."]


def test_a_stored_item_keeps_its_facts_and_a_section_reads_back() -> None:
    it = ContextItem(source_node_id="t1", role="tool", facts=("a: 1", "b: two"))
    assert item_from_record(item_record(it)) == it
    section = facts_section(["- x: 1", "- y: <<<2>>>"])
    assert section_lines("summary text" + section) == ["- x: 1", "- y: ‹‹‹2›››"]
    assert facts_section([]) == "" and section_lines("no section") == []
