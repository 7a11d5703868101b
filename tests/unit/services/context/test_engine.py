"""ContextEngine.prepare() end to end on a real DuckDB store: the TurnPrep shape, the
one history path, compaction (auto at 80%, emergency, manual, calibrated), pins,
occupancy bases, late tool results, attach and merge through the graph, and restart."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.context_graph import ChainBuilder

from treechat.core.budget import ContextOverflowError
from treechat.core.dag import Change
from treechat.core.model import Annotation, Node, Session
from treechat.core.occupancy import MeasuredUsage
from treechat.core.rules import RuleConfig
from treechat.core.summarize import DeterministicSummarizer, SummaryRequest
from treechat.providers.tokenizer import counter_for
from treechat.services.context import ContextEngine, EngineConfig, TurnPrep
from treechat.store import commits as cs
from treechat.store.database import Store

COUNTER = counter_for("gpt-4o")
TOOLS = [
    {"type": "function", "function": {"name": "zeta", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "alpha", "parameters": {"type": "object"}}},
]
WINDOW = 8_192


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "engine.duckdb")
    s.call(lambda r: r.create_session(Session("s", "t", None, "m", 0.0)))
    yield s
    s.close()


def _append(store: Store, b: ChainBuilder, nodes: list[Node], head: str | None = None) -> None:
    store.call(lambda r: r.apply_change(b.session_id, Change(tuple(nodes), head or b.head), b.now))


async def _prepare(engine: ContextEngine, b: ChainBuilder, **kw: object) -> TurnPrep:
    args: dict[str, object] = dict(model="openai/gpt-4o", window=WINDOW, tools=TOOLS,
                                   system_prompt="You are helpful.", now=b.now + 1)
    args.update(kw)
    return await engine.prepare(b.session_id, **args)  # type: ignore[arg-type]


def _fill(store: Store, b: ChainBuilder, turns: int, words: int = 60) -> None:
    for i in range(turns):
        nodes = b.turn(f"Turn {i}: the code is {7000 + i}. " + "detail " * words, "ok " * 30)
        _append(store, b, nodes)


def test_prepare_returns_the_request(store: Store) -> None:
    async def run() -> None:
        b = ChainBuilder()
        b.user("hello")
        a = b.assistant("let me look")
        t = b.tool(a, "alpha", "found it", call_id="call-1")
        _append(store, b, b.nodes[:], head=a.id)
        engine = ContextEngine(store, COUNTER)
        prep = await _prepare(engine, b, head=a.id, situation="AGENTS.md: be brief")
        assert prep.session_id == "s" and prep.head == a.id and prep.model == "openai/gpt-4o"
        assert [tool["function"]["name"] for tool in prep.tools] == ["alpha", "zeta"]
        assert prep.messages[0] == {"role": "system",
                                    "content": "You are helpful.\n\nAGENTS.md: be brief"}
        assert prep.messages[1] == {"role": "user", "content": "hello"}
        assert prep.messages[2]["tool_calls"][0]["id"] == "call-1"
        assert prep.messages[3] == {"role": "tool", "tool_call_id": "call-1",
                                    "content": "found it"}
        assert prep.window == WINDOW and 0 < prep.max_output_tokens < WINDOW
        expected = COUNTER.count_messages(prep.messages) + sum(
            v for k, v in prep.occupancy.breakdown if k == "tools")
        assert prep.estimated_prompt_tokens == expected
        assert prep.occupancy.total_used == prep.estimated_prompt_tokens
        assert not prep.compacted
        commit = await engine.commit_for("s", a.id, now=b.now)
        assert commit.id == prep.commit_id
        assert t.id in {i.source_node_id for i in commit.items}

    asyncio.run(run())


def test_anthropic_models_get_breakpoints_and_others_do_not(store: Store) -> None:
    async def run() -> None:
        b = ChainBuilder()
        _fill(store, b, 3)
        engine = ContextEngine(store, COUNTER)
        plain = await _prepare(engine, b)
        marked = await _prepare(engine, b, model="anthropic/claude-sonnet-4-5")
        assert all(isinstance(m["content"], str) for m in plain.messages)
        marks = sum(1 for m in marked.messages if isinstance(m["content"], list)
                    for blk in m["content"] if "cache_control" in blk)
        assert 1 <= marks <= 4

    asyncio.run(run())


def test_auto_compaction_keeps_the_request_inside_the_budget(store: Store) -> None:
    async def run() -> None:
        b = ChainBuilder()
        engine = ContextEngine(store, COUNTER)
        compactions = 0
        for i in range(60):
            nodes = b.turn(f"Turn {i}: the code is {7000 + i}. " + "detail " * 80, "ok " * 40)
            _append(store, b, nodes)
            prep = await _prepare(engine, b)
            compactions += prep.compacted
            assert prep.estimated_prompt_tokens + prep.max_output_tokens <= WINDOW
        assert 2 <= compactions <= 12  # hysteresis: not every turn
        assert "conversation-summary" in str(prep.messages[1]["content"])
        assert "7000" in str(prep.messages)  # the earliest code survives in a summary

    asyncio.run(run())


def test_calibration_is_applied_to_the_trigger(store: Store) -> None:
    async def run() -> None:
        b = ChainBuilder()
        _fill(store, b, 20, words=80)
        plain = ContextEngine(store, COUNTER)
        prep = await _prepare(plain, b)
        assert not prep.compacted
        drift = MeasuredUsage(head="elsewhere", prompt_tokens=prep.estimated_prompt_tokens * 2,
                              estimated_tokens=prep.estimated_prompt_tokens)
        calibrated = ContextEngine(store, COUNTER)
        prep2 = await _prepare(calibrated, b, measured=drift)
        assert prep2.compacted  # the provider counts twice what we do: compact earlier
        assert prep2.occupancy.basis == "estimated"  # the measurement was for another head

    asyncio.run(run())


def test_manual_compaction_on_request(store: Store) -> None:
    async def run() -> None:
        b = ChainBuilder()
        _fill(store, b, 6)
        engine = ContextEngine(store, COUNTER)
        before = await _prepare(engine, b)
        after = await _prepare(engine, b, force_compact=True)
        assert after.compacted and not before.compacted
        assert after.estimated_prompt_tokens < before.estimated_prompt_tokens
        assert after.commit_id != before.commit_id

    asyncio.run(run())


def test_emergency_compaction_when_the_window_shrinks(store: Store) -> None:
    async def run() -> None:
        b = ChainBuilder()
        _fill(store, b, 30, words=40)
        engine = ContextEngine(store, COUNTER, EngineConfig(rules=RuleConfig()))
        big = await _prepare(engine, b, window=128_000)
        assert not big.compacted
        small = await _prepare(engine, b, window=4_096)
        assert small.compacted
        assert small.estimated_prompt_tokens + small.max_output_tokens <= 4_096

    asyncio.run(run())


def test_system_prompt_larger_than_the_window_is_a_clear_error(store: Store) -> None:
    async def run() -> None:
        b = ChainBuilder()
        _fill(store, b, 1)
        engine = ContextEngine(store, COUNTER)
        with pytest.raises(ContextOverflowError, match="window"):
            await _prepare(engine, b, system_prompt="rule " * 10_000)

    asyncio.run(run())


def test_huge_latest_message_is_cut_to_fit(store: Store) -> None:
    async def run() -> None:
        b = ChainBuilder()
        _fill(store, b, 2)
        b.user("START " + "paste " * 20_000 + " END")
        _append(store, b, b.nodes[-1:])
        engine = ContextEngine(store, COUNTER)
        prep = await _prepare(engine, b)
        assert prep.estimated_prompt_tokens + prep.max_output_tokens <= WINDOW
        last = prep.messages[-1]["content"]
        assert last.startswith("START") and last.endswith("END")

    asyncio.run(run())


def test_pinned_items_never_compact(store: Store) -> None:
    async def run() -> None:
        b = ChainBuilder()
        note = b.user("Pinned: the launch code is BLUE-42.")
        b.assistant("noted")
        _append(store, b, b.nodes[:])
        store.call(lambda r: r.add_annotation(Annotation(note.id, "pin", 1.0)))
        _fill(store, b, 12)
        engine = ContextEngine(store, COUNTER)
        prep = await _prepare(engine, b, force_compact=True)
        assert prep.compacted
        assert {"role": "user", "content": "Pinned: the launch code is BLUE-42."} in prep.messages

    asyncio.run(run())


def test_occupancy_is_measured_only_while_head_has_not_moved(store: Store) -> None:
    async def run() -> None:
        b = ChainBuilder()
        _fill(store, b, 2)
        engine = ContextEngine(store, COUNTER)
        prep = await _prepare(engine, b)
        m = MeasuredUsage(head=prep.head, prompt_tokens=prep.estimated_prompt_tokens + 50,
                          cache_read=100, estimated_tokens=prep.estimated_prompt_tokens)
        occ = await engine.occupancy("s", model="openai/gpt-4o", window=WINDOW, now=b.now,
                                     measured=m)
        assert occ.basis == "measured" and occ.total_used == prep.estimated_prompt_tokens + 50
        assert occ.calibration == pytest.approx(m.prompt_tokens / m.estimated_tokens)
        assert occ.estimated == prep.estimated_prompt_tokens
        assert sum(v for k, v in occ.breakdown if k != "free") == occ.total_used
        b.user("and one more thing")
        _append(store, b, b.nodes[-1:])
        moved = await engine.occupancy("s", model="openai/gpt-4o", window=WINDOW, now=b.now,
                                       measured=m)
        assert moved.basis == "estimated" and moved.head != prep.head
        assert moved.estimated > prep.estimated_prompt_tokens

    asyncio.run(run())


def test_tool_results_written_after_a_commit_are_picked_up(store: Store) -> None:
    async def run() -> None:
        b = ChainBuilder()
        b.user("look it up")
        a = b.assistant("calling")
        _append(store, b, b.nodes[:], head=a.id)
        engine = ContextEngine(store, COUNTER)
        first = await _prepare(engine, b, head=a.id)
        t = b.tool(a, "alpha", "late result")
        _append(store, b, [t], head=a.id)
        second = await _prepare(engine, b, head=a.id)
        assert second.commit_id != first.commit_id
        assert second.messages[-1] == {"role": "tool", "tool_call_id": f"call-{t.id}",
                                       "content": "late result"}

    asyncio.run(run())


def test_a_new_engine_continues_from_stored_commits(store: Store) -> None:
    async def run() -> None:
        b = ChainBuilder()
        _fill(store, b, 15, words=80)
        first = ContextEngine(store, COUNTER)
        prep = await _prepare(first, b)
        await first.flush()
        restarted = ContextEngine(store, COUNTER)
        again = await _prepare(restarted, b)
        assert again.commit_id == prep.commit_id
        assert again.messages == prep.messages
        _fill(store, b, 1)
        nxt = await _prepare(restarted, b)
        await restarted.flush()
        stored = store.call(lambda r: cs.load_commit(r, nxt.commit_id))
        assert stored is not None and stored.parent_ids[0] in {
            prep.commit_id, *store.call(lambda r: cs.commit_parents(r, nxt.commit_id))}

    asyncio.run(run())


def test_edit_branch_and_attach_and_merge_through_the_graph(store: Store) -> None:
    async def run() -> None:
        engine = ContextEngine(store, COUNTER)
        b = ChainBuilder()
        _fill(store, b, 3)
        fork = b.head
        # A side session branched at `fork` finds something.
        store.call(lambda r: r.create_session(Session("side", "side", fork, "m", b.now)))
        side = ChainBuilder(session_id="side", seq=b.seq + 100, head=fork, now=b.now)
        side.turn("Side: the root cause is ticket 5512.", "confirmed")
        _append(store, side, side.nodes[:])
        side_commit = await engine.commit_for("side", side.head or "", now=side.now)
        # Main edits its last user message (a sibling branch), then attaches the side head.
        old_user = next(n for n in reversed(b.nodes) if n.role == "user")
        b.head = old_user.predecessor
        edited = b.user("Edited: summarize the findings so far.")
        ans = b.assistant("sure")
        att = b.runtime("attach", "side branch", {"source_session": "side",
                                                   "source_head": side.head})
        u = b.user("What did the side branch find?")
        _append(store, b, [edited, ans, att, u])
        prep = await _prepare(engine, b)
        text = str(prep.messages)
        assert "ticket 5512" in text
        # The edited-away message is not on this branch; it only comes back quoted, inside
        # the attached side branch whose history still holds it.
        assert {"role": "user", "content": old_user.text} not in prep.messages
        assert {"role": "user", "content": edited.text} in prep.messages
        assert text.count("Side: the root cause is ticket 5512.") == 1  # expanded once
        prep2 = await _prepare(engine, b)
        assert str(prep2.messages).count("ticket 5512.") == 1
        # Merge: pointer + merge node; the commit gets the peer as a second parent.
        att2 = b.runtime("attach", "side again", {"source_session": "side",
                                                   "source_head": side.head,
                                                   "source_commit": side_commit.id})
        m = b.runtime("merge", "Merge the side findings.",
                      {"peers": [side_commit.id], "base_peer": side_commit.id})
        _append(store, b, [att2, m])
        merged = await engine.commit_for("s", m.id, now=b.now)
        assert len(merged.parent_ids) == 2 and merged.parent_ids[1] == side_commit.id
        normal = await engine.commit_for("s", u.id, now=b.now)
        assert len(normal.parent_ids) <= 1  # attaching alone never makes a multi-parent commit

    asyncio.run(run())


def test_a_model_summarizer_follows_the_session_instructions(store: Store) -> None:
    seen: list[SummaryRequest] = []

    class Recording:
        async def summarize(self, request: SummaryRequest) -> str:
            seen.append(request)
            return DeterministicSummarizer(COUNTER).summarize(request)

    async def run() -> None:
        b = ChainBuilder()
        _fill(store, b, 6)
        engine = ContextEngine(store, COUNTER, EngineConfig(summarizer=Recording()))
        prep = await _prepare(engine, b, force_compact=True, system_prompt="Speak like a pirate.",
                              situation="AGENTS.md: keep ticket numbers")
        assert prep.compacted and seen
        assert "Speak like a pirate." in seen[0].instructions
        assert "keep ticket numbers" in seen[0].instructions

    asyncio.run(run())


# --- recall and its fallback ---------------------------------------------------------------


def _long_session(store: Store, b: ChainBuilder) -> None:
    """A session long enough to compact at WINDOW: early turns state facts in plain words
    and one tool result holds a fact in its cut middle."""
    _append(store, b, b.turn("Help me plan meals for the week.", "Gladly."))  # the anchor
    b.user("I never eat mushrooms, leave them out of every recipe.")
    a = b.assistant("Noted.")
    filler = "".join(f"row {i}: nothing to see\n" for i in range(600))
    b.tool(a, "read_file", filler + "the staging server is obsidian\n" + filler)
    _append(store, b, b.nodes[-3:], head=a.id)
    _fill(store, b, 40)


def test_recall_returns_the_original_of_folded_and_cut_content(store: Store) -> None:
    async def run() -> None:
        b = ChainBuilder()
        _long_session(store, b)
        engine = ContextEngine(store, COUNTER)
        prep = await _prepare(engine, b)
        sent = "\n".join(str(m.get("content")) for m in prep.messages)
        # Cut from the request (its finding rides with the cut's marker) ...
        assert "row 300: nothing to see" not in sent and "obsidian" in sent
        found = await engine.recall("s", "which staging server?", now=b.now + 2)
        assert found.hits and "the staging server is obsidian" in found.hits[0].text
        assert found.hits[0].state in ("cut", "aged", "summarized", "cleared")
        assert found.hits[0].role == "tool" and found.hits[0].tool_name == "read_file"
        text = found.text()
        assert f"node {found.hits[0].node_id}" in text and len(text) < 4000
        food = await engine.recall("s", "What food do I never eat?", now=b.now + 2, limit=1)
        assert [h.text for h in food.hits] == [
            "I never eat mushrooms, leave them out of every recipe."]

    asyncio.run(run())


def test_recall_bad_input_and_nothing_folded(store: Store) -> None:
    async def run() -> None:
        b = ChainBuilder()
        _append(store, b, b.turn("a short chat", "with a short reply"))
        engine = ContextEngine(store, COUNTER)
        await _prepare(engine, b)
        nothing = await engine.recall("s", "short", now=b.now + 2)
        assert nothing.searched == 0 and nothing.hits == ()
        assert "still in the request" in nothing.text()
        for bad in ("", "   ", "?!"):
            with pytest.raises(ValueError):
                await engine.recall("s", bad, now=b.now + 2)
        _long_session(store, b)
        await _prepare(engine, b)
        huge = await engine.recall("s", "staging server " + "lorem ipsum " * 900,
                                   now=b.now + 2)
        assert huge.searched > 0
        assert any("obsidian" in h.text for h in huge.hits)
        miss = await engine.recall("s", "zeppelin", now=b.now + 2)
        assert miss.hits == () and "No match" in miss.text()

    asyncio.run(run())


def test_models_without_tools_get_recalled_passages_after_the_cached_prefix(
    store: Store,
) -> None:
    async def run() -> None:
        b = ChainBuilder()
        _long_session(store, b)
        engine = ContextEngine(store, COUNTER)
        await _prepare(engine, b)
        _append(store, b, [b.user("Remind me which staging server we use?")])
        plain = await _prepare(engine, b, tools=[])
        helped = await _prepare(engine, b, tools=[], recall_fallback=True)
        again = await _prepare(engine, b, tools=[], recall_fallback=True)
        assert helped.messages == again.messages  # deterministic
        # the same request, plus one message at the very end
        assert helped.messages[:-1] == plain.messages
        tail = str(helped.messages[-1]["content"])
        assert "staging server is obsidian" in tail and "not instructions" in tail

    asyncio.run(run())


def test_a_rerun_tool_call_sends_the_new_result_and_keeps_the_old_as_text(store: Store) -> None:
    async def run() -> None:
        b = ChainBuilder()
        b.user("look it up")
        a = b.assistant("calling")
        b.tool(a, "alpha", "the first result", call_id="c1")
        b.tool(a, "alpha", "the second result", call_id="c1")
        _append(store, b, b.nodes[:], head=a.id)
        prep = await _prepare(ContextEngine(store, COUNTER), b, head=a.id)
        tool_messages = [m for m in prep.messages if m["role"] == "tool"]
        assert tool_messages == [{"role": "tool", "tool_call_id": "c1",
                                  "content": "the second result"}]
        # The earlier run is not lost: it follows as text (here already cleared as idle).
        earlier = [m for m in prep.messages
                   if m["role"] == "user" and str(m["content"]).startswith("[Tool alpha(")]
        assert len(earlier) == 1 and prep.messages[-1] == earlier[0]

    asyncio.run(run())
