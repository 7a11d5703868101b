"""The compaction loop's folds and roll-ups: the oldest summary stays byte-identical through
every roll-up, what the user stated is carried through roll-ups, and a tool run folds into its
findings rather than its first line."""

from __future__ import annotations

import itertools

from tests.support.context_graph import ChainBuilder

from treechat.core.commit import ContextCommit
from treechat.core.compaction import CompactionPlan, compaction_loop, drive
from treechat.core.rule_config import CompactionRequest, RuleConfig
from treechat.core.rules import generate_chain
from treechat.core.summarize import DeterministicSummarizer, SummaryRequest
from treechat.providers.tokenizer import counter_for

COUNTER = counter_for("gpt-4o")
RULES = RuleConfig()


def _chat(turns: int, budget: int, *, fact_at: int = -1, tool_fact_at: int = -1,
          uncompacted: int = 0) -> list[ContextCommit]:
    """Commits of a conversation compacted against `budget`, one per generated step (the
    last `uncompacted` turns only appended)."""
    b = ChainBuilder()
    commit: ContextCommit | None = None
    out: list[ContextCommit] = []
    for i in range(turns):
        user = " ".join(f"Part {i}.{k} of the report lists {k * i} rows." for k in range(8))
        if i == fact_at:
            user = f"{user} Also, OUR office is in Tampere since the move."
        tools = []
        if i == tool_fact_at:
            code = [f"    total_{k % 7} = step_{k % 11}(rows)  # {k % 3}" for k in range(300)]
            code.insert(170, "# The staging server is kestrel, ask before deploying.")
            tools = [("read_file", "def main(rows):\n" + "\n".join(code))]
        reply = " ".join(f"Section {k} of part {i} reads fine to me." for k in range(12))
        nodes = b.turn(user, reply, tools)
        chain = generate_chain(commit, nodes, session_id=b.session_id, head_node_id=b.head or "",
                               now=b.now, counter=COUNTER, config=RULES,
                               compaction=CompactionRequest(history_budget=budget)
                               if i < turns - uncompacted else None)
        out.extend(chain)
        commit = chain[-1] if chain else commit
    return out


def _summaries(commit: ContextCommit) -> list[str]:
    items = commit.items
    return [items[p].rendered for p in sorted(
        (p for p in commit.live if items[p].is_summary), key=lambda p: (items[p].order, p))]


def test_every_roll_up_leaves_the_oldest_summary_byte_identical() -> None:
    commits = _chat(160, 4_000)
    rollups = 0
    for before, after in itertools.pairwise(commits):
        if "rolled up" not in after.summary:
            continue
        rollups += 1
        old, new = _summaries(before), _summaries(after)
        assert len(old) >= 3 and new[0] == old[0]
    assert rollups >= 5
    assert all(c.total_tokens <= 4_000 for c in commits if c.summary.startswith("compaction"))


def test_what_the_user_stated_survives_roll_ups_in_any_case() -> None:
    commits = _chat(120, 4_000, fact_at=3)
    last = commits[-1]
    assert any("rolled up" in c.summary for c in commits)
    text = "\n".join(_summaries(last))
    assert "Tampere" in text
    assert "- user said: Also, OUR office is in Tampere" in text


def test_a_tool_run_folds_into_its_findings_not_its_first_line() -> None:
    commits = _chat(30, 4_000, tool_fact_at=2)
    folded = next(c for c in commits if "summarized" in c.summary)
    text = "\n".join(_summaries(commits[-1]))
    assert folded is not None
    assert "kestrel" in text
    assert "def main(rows)" not in text


def test_a_plan_names_its_runs() -> None:
    assert CompactionPlan(runs=(), level=0).mode == "auto"


def test_summaries_over_their_share_roll_up_even_when_no_fold_can_be_made() -> None:
    """A fold whose summary comes back no smaller leaves its items as they are; it must not
    take the rounds the roll-up needs, or summaries grow past their share until the request
    overflows the window. Nor is the same run asked for again."""
    commit = _chat(64, 4_000, uncompacted=4)[-1]
    summaries = sum(i.tokens for i in commit.summaries())
    budget = int(0.95 * summaries / RULES.summary_share)  # a smaller window: over both
    request = CompactionRequest(history_budget=budget)
    assert commit.total_tokens > RULES.summarize_trigger * budget
    assert summaries > RULES.summary_share * budget
    deterministic = DeterministicSummarizer(COUNTER)
    asked: list[tuple[str, ...]] = []

    def summarize(run: SummaryRequest) -> str:
        asked.append(tuple(e.text for e in run.entries))
        if run.level == 0:  # no fold comes out smaller than what it folds
            return "\n".join(e.text for e in run.entries) * 2
        return deterministic.summarize(run)

    commits = drive(compaction_loop(commit, request, now=1.0, counter=COUNTER, config=RULES),
                    summarize)
    assert commits and "rolled up" in commits[-1].summary
    assert sum(i.tokens for i in commits[-1].summaries()) < sum(
        i.tokens for i in commit.summaries())
    assert len(asked) == len(set(asked))
