"""Context engine benchmark: Treechat's engine against peers that trim on the same seeded
conversations with the same tokenizer, plus prepare() scaling and commit storage growth.

Four generators, three seeds each: the synthetic one (`context_sim.simulate`: billing-service
chatter, code, tool results up to 30k characters, an edited message, an attached branch, a
two-hour pause), one of real prose (`context_sim.simulate_prose`: the running interpreter's
standard library docstrings and source files) and one of long replies
(`long_replies.simulate_long_replies`: 300-800 words of the Language Reference a reply, facts
in several phrasings), the two prose ones with facts of three kinds planted in plain words:
said by the user, concluded by the assistant, and only inside a tool result; and one of varied
tool output (`tool_outputs.simulate_tool_outputs`: JSON, tables, logs, listings, search hits,
settings, test runs; its tool facts are the one record that differs, the one error, the
setting looked up). Two more seeds of each prose and tool generator, never looked at while
tuning, are reported on their own (`_heldout`).
Each fact is asked about once, later, and is counted at that turn: kept when the request holds
its key and value together, or (for Treechat) when `recall` for the question returns it in its
top three.

Arms: Treechat; `trim` (drop the oldest whole turns, 80%->50% of the same history budget);
`trim + summary` (the same trim, the dropped turns condensed by Treechat's summarizer);
litellm's and langchain's `trim_messages` at the whole prompt allowance; the same-size trims
(langchain's `trim_messages` cut to the size of our request at every request, and trims of
the same history budget on other schedules): the cheapest of those whose requests are on
average as large as ours is the `cost_vs_same_size_trim` baseline.
Cache reuse is simulated under OpenAI's automatic rule (longest common prefix, >= 1,024
tokens, 128-token steps) priced at OpenAI's gpt-4o prices, and under Anthropic's
breakpoint rule priced at Claude Sonnet's (the peers get breakpoints on the system prompt and
on the last message); prices come from litellm's own table. A request over the window is a
failure: counted, never priced."""

from __future__ import annotations

import asyncio
import hashlib
import json
import operator
import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.support.context_sim import (
    Conversation,
    ProseConversation,
    ProseFact,
    Turn,
    simulate,
    simulate_prose,
)
from tests.support.long_replies import simulate_long_replies
from tests.support.tool_outputs import simulate_tool_outputs

from treechat.core.budget import plan_budget
from treechat.core.commit import ContextCommit
from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.core.render import Composition, RenderedMessage, render_parts
from treechat.core.rules import CompactionRequest, RuleConfig, generate_chain
from treechat.core.summarize import DeterministicSummarizer, SummaryEntry, SummaryRequest, fence
from treechat.core.tokens import (
    REPLY_PRIMING_TOKENS,
    message_parts,
    message_tokens,
    tools_tokens,
)
from treechat.providers.tokenizer import CachedTiktokenCounter
from treechat.services.context import ContextEngine, TurnPrep
from treechat.store import commits as commit_store
from treechat.store.database import Store

pytestmark = pytest.mark.bench

WINDOW = 32_768
MODEL = "anthropic/claude-sonnet-4-5"
PEER_MODEL = "gpt-4o"  # litellm counts it with o200k_base, the encoding every arm is measured with
OPENAI_PRICED = "gpt-4o"
ANTHROPIC_PRICED = "claude-sonnet-4-5"
OPENAI_MIN, OPENAI_STEP = 1024, 128
ANTHROPIC_MIN, ANTHROPIC_LOOKBACK = 1024, 20
SEEDS = (11, 23, 37)
# Seeds no feature was ever looked at or tuned on: their figures are reported on their own.
HELDOUT_SEEDS = (101, 131)
TURNS = 210
LONG_TURNS = 520
TRIGGER, TARGET = RuleConfig().summarize_trigger, RuleConfig().summarize_target
# (trim at, down to) as shares of the history budget: the schedules a same-size trim may use.
SCHEDULES = ((0.8, 0.6), (0.9, 0.6), (0.9, 0.75), (1.0, 0.6), (1.0, 0.75), (1.0, 0.9))

SYSTEM = (
    "You are Treechat's coding assistant. You help the user maintain a Python billing service. "
    "Be precise, cite file paths and line numbers, and prefer small reviewed changes. When a "
    "tool result is long, summarize what matters before acting on it. Never invent file "
    "contents: read them first. Keep answers short unless the user asks for detail. "
) * 3
SITUATION = (
    "Workspace instructions (AGENTS.md): run `make test` before proposing a change; the "
    "service targets Python 3.11; money is Decimal, never float; migrations need a review; "
    "style follows ruff defaults with a 100-column limit."
)


def _tool(name: str, desc: str, props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": desc,
        "parameters": {"type": "object", "properties": props, "required": list(props)}}}


TOOLS = [
    _tool("read_file", "Read a file from the workspace.", {"path": {"type": "string"}}),
    _tool("run_tests", "Run the test suite with pytest arguments.",
          {"args": {"type": "array", "items": {"type": "string"}}}),
    _tool("grep", "Search the workspace for a pattern.",
          {"pattern": {"type": "string"}, "path": {"type": "string"}}),
    _tool("web_search", "Search the web.", {"query": {"type": "string"}}),
    _tool("write_file", "Write a file in the workspace.",
          {"path": {"type": "string"}, "content": {"type": "string"}}),
    _tool("recall", "Search the earlier conversation no longer shown in full.",
          {"query": {"type": "string"}}),
]


@dataclass(frozen=True)
class Prices:
    """Per-token prices of one provider, from litellm's table."""

    input: float
    read: float
    write: float

    @classmethod
    def of(cls, model: str) -> Prices:
        import litellm

        c = litellm.model_cost[model]
        base = float(c["input_cost_per_token"])
        return cls(base, float(c.get("cache_read_input_token_cost") or base),
                   float(c.get("cache_creation_input_token_cost") or base))


# --- cache and cost accounting ------------------------------------------------------------


def _strip_marks(message: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(message)
    content = out.get("content")
    if isinstance(content, list):
        blocks = [{k: v for k, v in b.items() if k != "cache_control"} for b in content]
        # A single marked text block is the same prompt as the plain string.
        out["content"] = blocks[0]["text"] if len(blocks) == 1 and "text" in blocks[0] else blocks
    return out


_PRINTS: dict[tuple[Any, ...], str] = {}


def _fingerprint(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        content = json.dumps(content, sort_keys=True)
    calls = tuple((c["id"], c["function"]["name"], c["function"]["arguments"])
                  for c in message.get("tool_calls") or ())
    key = (message.get("role"), content, message.get("tool_call_id"), calls)
    found = _PRINTS.get(key)
    if found is None:
        found = json.dumps(_strip_marks(message), sort_keys=True, ensure_ascii=False)
        if len(_PRINTS) > 200_000:
            _PRINTS.clear()
        _PRINTS[key] = found
    return found


def _marked(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and "cache_control" in b for b in content
    )


def _blocks(message: Mapping[str, Any]) -> int:
    content = message.get("content")
    n = len(content) if isinstance(content, list) else 1
    return n + len(message.get("tool_calls") or ())


def with_peer_breakpoints(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A peer's request as an Anthropic client would send it: a breakpoint on the system
    prompt and one on the last message."""
    out = [dict(m) for m in messages]
    for i in {0, len(out) - 1} if out else set():
        m = out[i]
        content = m.get("content")
        if isinstance(content, str) and content:
            m["content"] = [{"type": "text", "text": content,
                             "cache_control": {"type": "ephemeral"}}]
    return out


@dataclass
class Arm:
    """Per-request figures of one arm over a conversation."""

    name: str
    counter: CachedTiktokenCounter
    tools_tok: int
    prompts: list[int] = field(default_factory=list)
    failed: list[bool] = field(default_factory=list)
    cached: list[int] = field(default_factory=list)
    best: list[float] = field(default_factory=list)
    a_read: list[int] = field(default_factory=list)
    a_write: list[int] = field(default_factory=list)
    compactions: int = 0
    asked: dict[str, list[bool]] = field(default_factory=dict)  # kind -> kept at ask time
    in_request: dict[str, list[bool]] = field(default_factory=dict)
    lost_by_cause: dict[str, int] = field(default_factory=dict)
    breaks_by_cause: dict[str, int] = field(default_factory=dict)
    rollup_loss: list[float] = field(default_factory=list)
    rollup_total_loss: list[float] = field(default_factory=list)
    rollup_whole_openai: list[float] = field(default_factory=list)
    rollup_whole_anthropic: list[float] = field(default_factory=list)
    last_sizes: list[int] = field(default_factory=list)
    last_prev_sizes: list[int] = field(default_factory=list)
    last_lcp: int = 0
    _prev: list[tuple[str, int, str]] = field(default_factory=list)
    _entries: set[str] = field(default_factory=set)

    @property
    def over(self) -> int:
        return sum(self.failed)

    def measure(self, messages: Sequence[Mapping[str, Any]], new_tokens: int,
                max_output: int) -> None:
        count = self.counter.count
        sizes = [message_tokens(m, count) for m in messages]
        prints = [_fingerprint(m) for m in messages]
        texts = ["\n".join(message_parts(_strip_marks(m))) for m in messages]
        prompt = self.tools_tok + sum(sizes) + (REPLY_PRIMING_TOKENS if messages else 0)
        self.failed.append(prompt + max_output > WINDOW)
        # OpenAI: longest common prefix with the previous request, tools first.
        lcp = self.tools_tok
        for i, (fp, size, text) in enumerate(zip(prints, sizes, texts, strict=True)):
            if i >= len(self._prev):
                break
            pfp, _, ptext = self._prev[i]
            if pfp == fp:
                lcp += size
                continue
            a, b = self.counter.encode(text), self.counter.encode(ptext)
            same = 0
            for x, y in zip(a, b, strict=False):
                if x != y:
                    break
                same += 1
            lcp += same
            break
        self.last_lcp = lcp
        cached = (lcp // OPENAI_STEP) * OPENAI_STEP if lcp >= OPENAI_MIN else 0
        self.cached.append(min(cached, prompt))
        self.prompts.append(prompt)
        self.best.append(max(0.0, (prompt - new_tokens) / prompt))
        self._prev = list(zip(prints, sizes, texts, strict=True))
        self.last_sizes = sizes
        self._anthropic(messages, prints, sizes)

    def _anthropic(self, messages: Sequence[Mapping[str, Any]], prints: list[str],
                   sizes: list[int]) -> None:
        """Breakpoint rule: a read at the longest cached prefix found at a breakpoint or up to
        20 blocks before it; everything up to the last breakpoint beyond that is written."""
        h = hashlib.sha256(str(self.tools_tok).encode())
        hashes: list[str] = []
        cum: list[int] = []
        total = self.tools_tok
        for fp, size in zip(prints, sizes, strict=True):
            h.update(fp.encode())
            hashes.append(h.hexdigest())
            total += size
            cum.append(total)
        marks = [i for i, m in enumerate(messages) if _marked(m)]
        read = 0
        for b in marks:
            back = 0
            j = b
            while j >= 0 and back <= ANTHROPIC_LOOKBACK:
                if hashes[j] in self._entries:
                    read = max(read, cum[j])
                    break
                back += _blocks(messages[j])
                j -= 1
        last = cum[marks[-1]] if marks else 0
        write = max(0, last - read)
        self.a_read.append(read)
        self.a_write.append(write)
        for b in marks:
            if cum[b] >= ANTHROPIC_MIN:
                self._entries.add(hashes[b])

    # --- figures --------------------------------------------------------------------

    def ok(self) -> list[int]:
        return [i for i, f in enumerate(self.failed) if not f]

    def openai_cost(self, prices: Prices) -> float:
        return sum(prices.input * (self.prompts[i] - self.cached[i]) + prices.read * self.cached[i]
                   for i in self.ok())

    def anthropic_cost(self, prices: Prices) -> float:
        return sum(prices.read * self.a_read[i] + prices.write * self.a_write[i]
                   + prices.input * (self.prompts[i] - self.a_read[i] - self.a_write[i])
                   for i in self.ok())

    def reuse_mean(self) -> float:
        return statistics.fmean(self.cached[i] / self.prompts[i] for i in self.ok())

    def anthropic_reuse_mean(self) -> float:
        return statistics.fmean(self.a_read[i] / self.prompts[i] for i in self.ok())

    def best_mean(self) -> float:
        return statistics.fmean(self.best[i] for i in self.ok())

    def kept(self, kind: str, *, request_only: bool = False) -> float | None:
        got = (self.in_request if request_only else self.asked).get(kind)
        return sum(got) / len(got) if got else None


def holds(text: str, key: str, value: str) -> bool:
    """Whether `text` states the fact: its value, with its key words near it (a value alone
    may be a common word that turns up elsewhere)."""
    low = text.lower()
    v = value.lower()
    if not key:
        return v in low
    k = key.lower()
    at = low.find(v)
    while at >= 0:
        if k in low[max(0, at - 250): at + len(v) + 250]:
            return True
        at = low.find(v, at + 1)
    return False


def request_text(messages: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join("\n".join(message_parts(_strip_marks(m))) for m in messages)


# --- peers ---------------------------------------------------------------------------------


def _install_fast_litellm_counter() -> None:
    """litellm's trim recounts its kept list once per message (quadratic in a 600-message
    history, minutes per request). Its list count is exactly the sum of per-message counts
    less the per-list reply priming, so memoize per message: same numbers, same trimming."""
    import litellm.utils as lu

    original = lu.token_counter
    if getattr(original, "_bench_memo", False):
        return
    memo: dict[tuple[Any, ...], int] = {}
    # Within one trim the same message objects are recounted over and over; an object
    # whose content string is the very same object has the same count.
    by_object: dict[int, tuple[Any, Any, int]] = {}

    def key(m: Mapping[str, Any]) -> tuple[Any, ...]:
        c = m.get("content")
        calls = tuple(
            (call["id"], call["function"]["name"], call["function"]["arguments"])
            for call in m.get("tool_calls") or ()
        )
        return (m.get("role"), c if isinstance(c, str) else json.dumps(c, sort_keys=True),
                m.get("tool_call_id"), calls)

    # litellm counts [message] + kept again for every candidate message; the kept list was
    # counted just before, so a list's total is its head's count plus its tail's memoized
    # total (keyed by the identities of the messages and of their contents).
    # Values keep the contents alive so their ids cannot be reused while the entry exists.
    by_list: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, tuple[Any, ...]]] = {}
    content_of = operator.methodcaller("get", "content")

    def counter(model: str = "", custom_tokenizer: Any = None, text: Any = None,
                messages: Any = None, **kw: Any) -> int:
        if text is not None or not messages or kw or custom_tokenizer is not None:
            return int(original(model=model, custom_tokenizer=custom_tokenizer, text=text,
                                messages=messages, **kw))
        ids = tuple(map(id, messages))
        contents = tuple(map(content_of, messages))
        cids = tuple(map(id, contents))
        found = by_list.get((ids, cids))
        if found is not None:
            return found[0]
        tail = by_list.get((ids[1:], cids[1:])) if len(ids) > 1 else None
        if tail is not None:
            total = tail[0] + sum_all(model, messages[:1]) - REPLY_PRIMING_TOKENS
        else:
            total = sum_all(model, messages)
        by_list[(ids, cids)] = (total, contents)
        return total

    def reset() -> None:
        # Message objects live only for one trim call; their ids are reused afterwards.
        by_list.clear()
        by_object.clear()

    def sum_all(model: str, messages: Sequence[Mapping[str, Any]]) -> int:
        total = 0
        for m in messages:
            hit = by_object.get(id(m))
            if hit is not None and hit[0] is m and hit[1] is m.get("content"):
                total += hit[2]
                continue
            k = (model, *key(m))
            n = memo.get(k)
            if n is None:
                n = int(original(model=model, messages=[m])) - REPLY_PRIMING_TOKENS
                memo[k] = n
            by_object[id(m)] = (m, m.get("content"), n)
            total += n
        return total + REPLY_PRIMING_TOKENS

    sample = [{"role": "system", "content": SYSTEM},
              {"role": "user", "content": "hello, look at src/api/routes.py"},
              {"role": "assistant", "content": None, "tool_calls": [
                  {"id": "c1", "type": "function",
                   "function": {"name": "read_file", "arguments": "{\"path\": \"x.py\"}"}}]},
              {"role": "tool", "tool_call_id": "c1", "content": "def f():\n    return 1\n"},
              {"role": "assistant", "content": "It returns 1."}]
    for n in range(1, len(sample) + 1):
        assert counter(model=PEER_MODEL, messages=sample[:n]) == original(
            model=PEER_MODEL, messages=sample[:n]
        ), "memoized count must equal litellm's own"
    counter._bench_memo = True  # type: ignore[attr-defined]
    counter.reset = reset  # type: ignore[attr-defined]
    lu.token_counter = counter


def litellm_trim(messages: list[dict[str, Any]], max_tokens: int) -> list[dict[str, Any]]:
    import litellm.utils as lu

    lu.token_counter.reset()  # type: ignore[attr-defined]
    try:
        return list(lu.trim_messages(messages, model=PEER_MODEL, max_tokens=max_tokens))
    finally:
        lu.token_counter.reset()  # type: ignore[attr-defined]


class LangchainTrim:
    def __init__(self, counter: CachedTiktokenCounter) -> None:
        self.counter = counter
        self._lc: dict[str, Any] = {}
        self._tok: dict[int, int] = {}

    def _convert(self, key: str, m: Mapping[str, Any]) -> Any:
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

        lc = self._lc.get(key)
        if lc is None:
            role = m["role"]
            if role == "system":
                lc = SystemMessage(m["content"])
            elif role == "user":
                lc = HumanMessage(m["content"])
            elif role == "tool":
                lc = ToolMessage(m["content"], tool_call_id=m["tool_call_id"])
            else:
                calls = [{"name": c["function"]["name"],
                          "args": json.loads(c["function"]["arguments"]), "id": c["id"]}
                         for c in m.get("tool_calls") or ()]
                lc = AIMessage(m.get("content") or "", tool_calls=calls)
            self._lc[key] = lc
            self._tok[id(lc)] = message_tokens(m, self.counter.count)
        return lc

    def __call__(self, keyed: Sequence[tuple[str, dict[str, Any]]],
                 max_tokens: int) -> list[dict[str, Any]]:
        from langchain_core.messages import convert_to_openai_messages, trim_messages

        msgs = [self._convert(k, m) for k, m in keyed]
        tok = self._tok

        def count(batch: list[Any]) -> int:
            return sum(tok.get(id(x), 0) for x in batch) + REPLY_PRIMING_TOKENS

        out = trim_messages(msgs, max_tokens=max_tokens, token_counter=count, strategy="last",
                            include_system=True, start_on="human")
        return list(convert_to_openai_messages(out))


class Trim:
    """Drop the oldest whole turns once the history passes 80% of the budget, down to 50%
    (Treechat's own schedule, on the same history budget); with `summarize`, the dropped turns
    are condensed by Treechat's summarizer into summaries kept after the system prompt (the
    oldest dropped once they pass Treechat's summary share)."""

    def __init__(self, budget: int, counter: CachedTiktokenCounter, *, summarize: bool,
                 high: float = TRIGGER, low: float = TARGET) -> None:
        self.budget = budget
        self.high, self.low = high, low
        self.counter = counter
        self.summarize = summarize
        self.start = 0
        self.summaries: list[dict[str, Any]] = []
        self.rules = RuleConfig()
        self.summarizer = DeterministicSummarizer(counter)

    def _tok(self, m: Mapping[str, Any]) -> int:
        return message_tokens(m, self.counter.count)

    def __call__(self, entries: Sequence[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
        system, body = entries[0][1], [m for _, m in entries[1:]]
        self.start = min(self.start, len(body))
        sizes = [self._tok(m) for m in body]
        hist = sum(self._tok(s) for s in self.summaries) + sum(sizes[self.start:])
        if hist > self.high * self.budget:
            users = [i for i in range(self.start + 1, len(body)) if body[i]["role"] == "user"]
            new_start = self.start
            for u in users:
                new_start = u
                if hist - sum(sizes[self.start:u]) <= self.low * self.budget:
                    break
            dropped = body[self.start:new_start]
            if self.summarize and dropped:
                tokens = sum(sizes[self.start:new_start])
                r = self.rules
                target = max(r.min_summary_tokens, min(r.max_summary_tokens,
                                                       int(tokens * r.summary_ratio)))
                text = self.summarizer.summarize(SummaryRequest(
                    entries=tuple(SummaryEntry(role=m["role"], text=str(m.get("content") or ""))
                                  for m in dropped),
                    target_tokens=target))
                self.summaries.append({"role": "user",
                                       "content": fence(text, count=len(dropped))})
                while (len(self.summaries) > 1 and sum(map(self._tok, self.summaries))
                       > r.summary_share * self.budget):
                    self.summaries.pop(0)
            self.start = new_start
        return [system, *self.summaries, *body[self.start:]]


@dataclass
class Raw:
    """The untrimmed active path as OpenAI messages, keyed by node id."""

    entries: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def messages(self) -> list[dict[str, Any]]:
        return [m for _, m in self.entries]


def _node(nid: str, role: str, t: float, session: str, **kw: Any) -> Node:
    return Node(id=nid, seq=0, created_at=t, session_id=session, role=role, **kw)  # type: ignore[arg-type]


def _cause(parts: Sequence[RenderedMessage], commit: ContextCommit, prev: ContextCommit | None,
           at: int) -> str:
    """Why our request differs from the previous one from message `at` on."""
    if at >= len(parts):
        return "other"
    part = parts[at]
    if part.position < 0:
        return "other"
    it = commit.items[part.position]
    if it.is_summary:
        return "roll-up" if it.reason.startswith("rolled up") else "summary"
    if it.state == "aged":
        return "aging"
    if it.state == "cleared":
        return "idle clear" if it.reason == "idle_60min" else "other"
    if prev is not None and any(x.state == "summarized" and x.source_node_id not in
                                {y.source_node_id for y in prev.items if y.state == "summarized"}
                                for x in commit.items[:part.position]):
        return "summary"
    return "other"


async def run_conversation(conv: Conversation | ProseConversation, tmp: Path, *,
                           peers: bool = True, tag: str = "") -> dict[str, Any]:
    counter = CachedTiktokenCounter("o200k_base")
    store = Store.open(tmp / f"conv{tag}{conv.seed}.duckdb")
    sid = f"main{tag}{conv.seed}"
    store.call(lambda r: r.create_session(Session(sid, "bench", None, MODEL, 0.0)))
    engine = ContextEngine(store, counter)
    tools_tok = tools_tokens(sorted(TOOLS, key=lambda t: t["function"]["name"]), counter.count)
    comp = Composition(system_prompt=SYSTEM, situation=SITUATION, cache_breakpoints=True)
    sys_msg = render_parts(None, comp)[0].message
    sys_tok = message_tokens(sys_msg, counter.count)
    budget = plan_budget(WINDOW, system_tokens=sys_tok, tools_tokens=tools_tok)
    peer_allowance = budget.prompt_allowance - tools_tok
    ours = Arm("treechat", counter, tools_tok)
    trim = Arm("trim", counter, tools_tok)
    trim_s = Arm("trim + summary", counter, tools_tok)
    lite = Arm("litellm", counter, tools_tok)
    lang = Arm("langchain", counter, tools_tok)
    same = Arm("same-size trim", counter, tools_tok)
    at_limit = Arm("langchain at our size", counter, tools_tok)
    # Trims of the whole history budget with other schedules: the one of them whose requests
    # are as large as ours on average and costs least is the other same-size baseline.
    schedules = [(Arm(f"trim@{hi:.2f}-{lo:.2f}", counter, tools_tok),
                  Trim(budget.history, counter, summarize=False, high=hi, low=lo))
                 for hi, lo in SCHEDULES]
    trimmer = Trim(budget.history, counter, summarize=False)
    trimmer_s = Trim(budget.history, counter, summarize=True)
    lang_trim = LangchainTrim(counter)
    raw = Raw([("system", {"role": "system", "content": f"{SYSTEM}\n\n{SITUATION}"})])
    head: str | None = None
    prev_len = 0  # items in our previous request's commit
    prev_raw = len(raw.entries)
    prev_commit: ContextCommit | None = None
    prev_parts: tuple[RenderedMessage, ...] = ()
    side_head: str | None = None
    side_raw: list[dict[str, Any]] = []
    prepare_seconds: list[float] = []

    def append(nodes: Sequence[Node], new_head: str, now: float) -> None:
        store.call(lambda r: r.apply_change(sid, Change(tuple(nodes), new_head), now))

    def record_break(commit: ContextCommit, parts: tuple[RenderedMessage, ...]) -> None:
        """Cache breaks by cause: tokens of the previous request that this one rewrote."""
        prev_total = sum(ours.last_prev_sizes) + tools_tok
        if not prev_parts:
            return
        new_summaries = [it for it in commit.live_items() if it.is_summary and (
            prev_commit is None or it.source_node_id not in
            {x.source_node_id for x in prev_commit.items})]
        if any(s.reason.startswith("rolled up") for s in new_summaries):
            # The whole loss at a roll-up, fold included, under both cache rules.
            ours.rollup_whole_openai.append(max(0, prev_total - ours.last_lcp) / prev_total)
            ours.rollup_whole_anthropic.append(
                max(0, prev_total - ours.a_read[-1]) / prev_total)
        if ours.last_lcp >= prev_total:
            return
        at = 0
        while at < min(len(parts), len(prev_parts)) and _fingerprint(
                parts[at].message) == _fingerprint(prev_parts[at].message):
            at += 1
        cause = _cause(parts, commit, prev_commit, at)
        lost = prev_total - ours.last_lcp
        ours.lost_by_cause[cause] = ours.lost_by_cause.get(cause, 0) + lost
        ours.breaks_by_cause[cause] = ours.breaks_by_cause.get(cause, 0) + 1
        if any(s.reason.startswith("rolled up") for s in new_summaries):
            folded = any(s.reason.startswith("summarized") for s in new_summaries) or any(
                commit.items[p].state == "summarized" and not commit.items[p].is_summary
                and prev_commit is not None and p < len(prev_commit.items)
                and prev_commit.items[p].state != "summarized"
                for p in range(len(commit.items)))
            # Where a fold alone would have rewritten the previous request: its first
            # message after the system prompt and the summaries.
            fold_at = next((k for k, p in enumerate(prev_parts)
                            if p.category not in ("system", "summaries")), len(prev_parts))
            sizes = ours.last_prev_sizes
            own = sum(sizes[at:fold_at]) if folded else lost
            ours.rollup_loss.append(own / prev_total)
            ours.rollup_total_loss.append(lost / prev_total)

    async def request(now: float, asks: Any) -> TurnPrep:
        nonlocal prev_len, prev_raw, prev_commit, prev_parts
        t0 = time.perf_counter()
        prep = await engine.prepare(sid, model=MODEL, window=WINDOW, head=head, tools=TOOLS,
                                    system_prompt=SYSTEM, situation=SITUATION, now=now)
        prepare_seconds.append(time.perf_counter() - t0)
        commit = engine.cached(prep.commit_id)
        assert commit is not None
        parts = render_parts(commit, comp)
        assert tuple(p.message for p in parts) == prep.messages, "prepare sent what render gave"
        new_ours = sum(message_tokens(p.message, counter.count) for p in parts
                       if p.position >= prev_len and p.category != "summaries")
        prev_len = len(commit.items)
        ours.last_prev_sizes = ours.last_sizes
        ours.measure(prep.messages, new_ours, prep.max_output_tokens)
        record_break(commit, parts)
        prev_commit, prev_parts = commit, parts
        ours.compactions += int(prep.compacted)
        new_entries = raw.entries[prev_raw:]
        k = len(new_entries)
        # The strongest fair trim: langchain's at every request, to the size of ours (same
        # tokenizer, same window), so it follows our schedule and keeps raw turns instead.
        # Trimming whole messages leaves it short of its limit, so its limit also carries
        # what it has fallen short of ours so far: the same size on average, never over the
        # window. `at_limit` is the plain per-request limit, reported beside it.
        limit = ours.prompts[-1] - tools_tok
        gap = sum(ours.prompts[:-1]) - sum(same.prompts)
        arms: list[tuple[Arm, list[dict[str, Any]]]] = [
            (trim, trimmer(raw.entries)), (trim_s, trimmer_s(raw.entries)),
            (same, lang_trim(raw.entries, min(peer_allowance, limit + max(0, int(gap))))),
            (at_limit, lang_trim(raw.entries, limit)),
            *((arm, t(raw.entries)) for arm, t in schedules)]
        if peers:
            arms += [(lite, litellm_trim(raw.messages(), peer_allowance)),
                     (lang, lang_trim(raw.entries, peer_allowance))]
        for arm, msgs in arms:
            tail = msgs[-k:] if k else []
            arm.measure(with_peer_breakpoints(msgs),
                        sum(message_tokens(m, counter.count) for m in tail),
                        budget.output_reserve)
        prev_raw = len(raw.entries)
        if asks is not None:
            prose_fact = isinstance(asks, ProseFact)
            kind = asks.kind if prose_fact else "synthetic"
            key = asks.key if prose_fact else ""
            for arm, msgs in [(ours, list(prep.messages)), *arms]:
                present = holds(request_text(msgs), key, asks.value)
                arm.in_request.setdefault(kind, []).append(present)
                kept = present
                if arm is ours and not present:
                    found = await engine.recall(sid, asks.question, head=head, now=now,
                                                limit=3)
                    kept = any(holds(h.text, key, asks.value) for h in found.hits)
                arm.asked.setdefault(kind, []).append(kept)
        return prep

    turn_nodes: dict[int, tuple[str, str]] = {}  # turn -> (user id, its parent)
    side = getattr(conv, "side", None)
    for turn in conv.turns:
        t = turn.time
        i = turn.index
        nodes: list[Node] = []
        parent = head
        if getattr(turn, "edit_previous", False) and i - 1 in turn_nodes:
            # Edit the previous user message: a sibling under the same parent; the old
            # reply stays in the graph on the abandoned branch.
            old_user, old_parent = turn_nodes[i - 1]
            parent = old_parent
            cut = next(k for k, (nid, _) in enumerate(raw.entries) if nid == old_user)
            del raw.entries[cut:]
            prev_raw = len(raw.entries)
        if getattr(turn, "attach_side", False) and side_head is not None:
            aid = f"{sid}-att{i}"
            nodes.append(_node(aid, "runtime", t, sid, name="attach", output="side branch",
                               predecessor=parent, metadata={"source_session": f"side{conv.seed}",
                                                             "source_head": side_head}))
            parent = aid
            raw.entries.append((aid, {"role": "user", "content":
                                      "Attached from another branch:\n\n" + "\n\n".join(
                                          f"{m['role']}: {m['content']}" for m in side_raw)}))
        uid = f"{sid}-u{i}"
        nodes.append(_node(uid, "user", t, sid, output=turn.user, predecessor=parent))
        turn_nodes[i] = (uid, parent or "")
        raw.entries.append((uid, {"role": "user", "content": turn.user}))
        head = uid
        append(nodes, uid, t)
        await request(t + 1, getattr(turn, "asks", None))
        if turn.tools:
            aid = f"{sid}-a{i}"
            calls = [{"id": f"call-{i}-{k}", "type": "function",
                      "function": {"name": tc.name, "arguments": json.dumps(tc.args)}}
                     for k, tc in enumerate(turn.tools)]
            nodes = [_node(aid, "assistant", t + 5, sid, output=turn.reply, predecessor=head,
                           metadata={"tool_calls": calls})]
            raw.entries.append((aid, {"role": "assistant", "content": turn.reply,
                                      "tool_calls": calls}))
            for k, tc in enumerate(turn.tools):
                tid = f"{aid}-t{k}"
                nodes.append(_node(tid, "tool", t + 6, sid, name=tc.name, input=tc.args,
                                   output=tc.result, caller=aid,
                                   metadata={"tool_call_id": f"call-{i}-{k}"}))
                raw.entries.append((tid, {"role": "tool", "tool_call_id": f"call-{i}-{k}",
                                          "content": tc.result}))
            head = aid
            append(nodes, aid, t + 6)
            await request(t + 7, None)
            fid = f"{sid}-f{i}"
            append([_node(fid, "assistant", t + 9, sid, output=turn.after_tools,
                          predecessor=aid)], fid, t + 9)
            raw.entries.append((fid, {"role": "assistant", "content": turn.after_tools}))
            head = fid
        else:
            rid = f"{sid}-r{i}"
            append([_node(rid, "assistant", t + 5, sid, output=turn.reply, predecessor=head)],
                   rid, t + 5)
            raw.entries.append((rid, {"role": "assistant", "content": turn.reply}))
            head = rid
        if side is not None and i == side.from_turn:
            side_head, side_raw = _side_branch(store, conv, head, t)  # type: ignore[arg-type]
    store.close()
    arms_out = (ours, trim, trim_s, same, at_limit, *(a for a, _ in schedules),
                *((lite, lang) if peers else ()))
    return {"arms": arms_out, "requests": len(ours.prompts), "prepare_seconds": prepare_seconds,
            "budget": budget.history}


def _side_branch(store: Store, conv: Conversation, fork: str,
                 t: float) -> tuple[str, list[dict[str, Any]]]:
    """A side session branched at `fork` with a few turns (one plants a fact)."""

    assert conv.side is not None
    sid = f"side{conv.seed}"
    store.call(lambda r: r.create_session(Session(sid, "side", fork, MODEL, t)))
    head = fork
    raw: list[dict[str, Any]] = []
    nodes: list[Node] = []
    for k, turn in enumerate(conv.side.turns):
        u = _node(f"{sid}-u{k}", "user", turn.time, sid, output=turn.user, predecessor=head)
        a = _node(f"{sid}-r{k}", "assistant", turn.time + 5, sid, output=turn.reply,
                  predecessor=u.id)
        nodes += [u, a]
        raw += [{"role": "user", "content": turn.user},
                {"role": "assistant", "content": turn.reply}]
        head = a.id
    store.call(lambda r: r.apply_change(sid, Change(tuple(nodes), head), t))
    return head, raw


# --- scaling and storage -------------------------------------------------------------------


def _turn_nodes(turn: Turn, session: str, head: str | None, tag: str) -> list[Node]:
    uid = f"{session}-{tag}u{turn.index}"
    out = [_node(uid, "user", turn.time, session, output=turn.user, predecessor=head)]
    aid = f"{session}-{tag}a{turn.index}"
    out.append(_node(aid, "assistant", turn.time + 5, session, output=turn.reply,
                     predecessor=uid))
    for k, tc in enumerate(turn.tools[:1]):
        out.append(_node(f"{aid}-t{k}", "tool", turn.time + 6, session, name=tc.name,
                         input=tc.args, output=tc.result, caller=aid,
                         metadata={"tool_call_id": f"c{turn.index}-{k}"}))
    return out


class ScaleSession:
    """A session holding `nodes_target` nodes, opened once, then extended a turn at a time."""

    def __init__(self, tmp: Path, nodes_target: int) -> None:
        self.sid = f"scale{nodes_target}"
        self.store = Store.open(tmp / f"{self.sid}.duckdb")
        self.store.call(lambda r: r.create_session(Session(self.sid, "scale", None, MODEL, 0.0)))
        conv = simulate(7, turns=max(10, nodes_target // 2) + 60)
        history: list[Node] = []
        self.head: str | None = None
        self.turns = iter(conv.turns)
        for turn in self.turns:
            batch = _turn_nodes(turn, self.sid, self.head, "h")
            if len(history) + len(batch) > nodes_target:
                break
            history += batch
            self.head = next(n.id for n in reversed(batch) if n.role == "assistant")
        self.store.call(lambda r: r.apply_change(self.sid, Change(tuple(history), self.head), 1.0))
        self.engine = ContextEngine(self.store, CachedTiktokenCounter("o200k_base"))
        self.now = conv.turns[0].time

    async def open(self) -> None:
        await self.engine.prepare(self.sid, now=self.now, **_SCALE_ARGS)

    async def turn(self) -> float:
        """Append one turn and time the prepare() for it."""
        turn = next(self.turns)
        batch = _turn_nodes(turn, self.sid, self.head, "m")
        self.head = batch[1].id
        self.store.call(lambda r: r.apply_change(self.sid, Change(tuple(batch), self.head), 2.0))
        await self.engine.flush()
        t0 = time.perf_counter()
        await self.engine.prepare(self.sid, now=turn.time + 10, **_SCALE_ARGS)
        return time.perf_counter() - t0


_SCALE_ARGS: dict[str, Any] = dict(model=MODEL, window=WINDOW, tools=TOOLS,
                                   system_prompt=SYSTEM, situation=SITUATION)


async def prepare_times(tmp: Path, turns: int = 40) -> tuple[float, float]:
    """Median prepare() per turn at 100 and at 10,000 nodes, measured turn by turn
    alternately so both see the same machine load."""
    small, big = ScaleSession(tmp, 100), ScaleSession(tmp, 10_000)
    await small.open()  # the first open of a session loads its branch once
    await big.open()
    t_small: list[float] = []
    t_big: list[float] = []
    for _ in range(turns):
        t_small.append(await small.turn())
        t_big.append(await big.turn())
    small.store.close()
    big.store.close()
    return statistics.median(t_small), statistics.median(t_big)


def storage_growth(tmp: Path) -> tuple[int, int]:
    """Commit bytes after 100 and after 1,000 turns of one conversation: the engine's own
    generation (same rules and compaction requests as prepare() at this window) saved
    through the store as prepare() saves it, without the per-turn graph reads."""
    counter = CachedTiktokenCounter("o200k_base")
    store = Store.open(tmp / "storage.duckdb")
    sid = "storage"
    store.call(lambda r: r.create_session(Session(sid, "storage", None, MODEL, 0.0)))
    comp = Composition(system_prompt=SYSTEM, situation=SITUATION, cache_breakpoints=True)
    sys_tok = message_tokens(render_parts(None, comp)[0].message, counter.count)
    tools_tok = tools_tokens(sorted(TOOLS, key=lambda t: t["function"]["name"]), counter.count)
    budget = plan_budget(WINDOW, system_tokens=sys_tok, tools_tokens=tools_tok)
    rules = RuleConfig()
    conv = simulate(5, turns=1000)
    head: str | None = None
    commit: ContextCommit | None = None
    pending: list[ContextCommit] = []
    nodes: list[Node] = []
    at_100 = 0
    for turn in conv.turns:
        batch = _turn_nodes(turn, sid, head, "")
        head = batch[1].id
        nodes += batch
        mode = "auto" if commit is None or commit.total_tokens > (
            rules.summarize_trigger * budget.history) else None
        chain = generate_chain(commit, batch, session_id=sid, head_node_id=head,
                               now=turn.time + 10, counter=counter, config=rules,
                               compaction=CompactionRequest(budget.history) if mode else None)
        pending += chain
        commit = chain[-1] if chain else commit
        if turn.index % 50 == 49:
            store.call(lambda r, n=tuple(nodes), h=head: r.apply_change(sid, Change(n, h), 1.0))
            store.call(lambda r, c=tuple(pending): commit_store.save_commits(r, c))
            nodes, pending = [], []
        if turn.index == 99:
            at_100 = store.call(commit_store.storage_bytes)
    at_1000 = store.call(commit_store.storage_bytes)
    store.close()
    return at_100, at_1000


# --- the benchmark -------------------------------------------------------------------------


def _merge_report(report: Callable[..., Path], figures: dict[str, float],
                  rows: list[list[object]], header: list[str]) -> None:
    path = Path(__file__).resolve().parents[2] / "build" / "bench" / "context.json"
    existing: dict[str, float] = {}
    if path.exists():
        try:
            existing = json.loads(path.read_text())
        except ValueError:
            existing = {}
    report("context", {**existing, **figures}, rows, header)


def _spread(values: Sequence[float], fmt: str = "{:.3f}") -> str:
    """Median and range over seeds."""
    if not values:
        return "-"
    med = statistics.median(values)
    if len(values) == 1:
        return fmt.format(med)
    return f"{fmt.format(med)} [{fmt.format(min(values))}-{fmt.format(max(values))}]"


def _pooled(arms: Sequence[Arm], kind: str, *, request_only: bool = False) -> float | None:
    got = [x for a in arms for x in (a.in_request if request_only else a.asked).get(kind, [])]
    return sum(got) / len(got) if got else None


_GEN_SLUG = {"prose": "stdlib", "long replies": "long_replies", "synthetic": "synthetic",
             "tool outputs": "tool_outputs"}
# The generators the compaction figures are taken over (each headline the worst of them).
_FIGURE_GENS = ("prose", "long replies", "tool outputs")


def same_size_cost(ours: Arm, arms: Sequence[Arm], cost: Callable[[Arm, Prices], float],
                   prices: Prices) -> float:
    """The cheapest trim whose requests are on average as large as ours (within 5%):
    langchain's trimmed to our size at every request, or a trim of the same history budget
    on whichever schedule costs least. A trim sending less would win on price by keeping
    less."""
    size = statistics.fmean(ours.prompts)
    fits = [a for a in arms if a.name in ("same-size trim", "langchain at our size")
            or a.name.startswith("trim@")]
    fits = [a for a in fits if statistics.fmean(a.prompts) >= 0.95 * size]
    if not fits:
        raise AssertionError("no trim as large as ours to compare with")
    return min(cost(a, prices) for a in fits)


def _issue_figures(per: Mapping[tuple[str, str], list[Arm]],
                   held: Mapping[tuple[str, str], list[Arm]],
                   every: Mapping[tuple[str, str], list[Sequence[Arm]]], long_ours: Arm,
                   openai: Prices, anthropic: Prices) -> dict[str, float]:
    """The compaction figures, per generator and per seed split (`_heldout`: seeds nothing
    was tuned on), each headline the worst over both prose generators and both splits."""
    out: dict[str, float] = {}
    loss: dict[str, list[float]] = {"openai": [], "anthropic": []}
    cost: dict[str, list[float]] = {"openai": [], "anthropic": []}
    plain: list[float] = []
    tool: list[float] = []
    for split, table in (("", per), ("_heldout", held)):
        for gen in _FIGURE_GENS:
            ours, same = table[(gen, "treechat")], table[(gen, "same-size trim")]
            tag = f"_{_GEN_SLUG[gen]}{split}"
            extra = [long_ours] if gen == "prose" and not split else []
            for rule, prices, f in (("openai", openai, Arm.openai_cost),
                                    ("anthropic", anthropic, Arm.anthropic_cost)):
                whole = [x for a in [*ours, *extra] for x in getattr(a, f"rollup_whole_{rule}")]
                value = statistics.fmean(whole) if whole else 0.0
                out[f"rollup_prefix_loss_whole_{rule}{tag}"] = value
                loss[rule].append(value)
                ratio = statistics.median(
                    f(o, prices) / same_size_cost(o, arms, f, prices)
                    for o, arms in zip(ours, every[(split, gen)], strict=True))
                out[f"cost_vs_same_size_trim_{rule}{tag}"] = ratio
                cost[rule].append(ratio)
                out[f"cost_vs_langchain_at_our_limit_{rule}{tag}"] = statistics.median(
                    f(o, prices) / f(next(a for a in arms if a.name == "langchain at our size"),
                                     prices)
                    for o, arms in zip(ours, every[(split, gen)], strict=True))
            for kind in ("plain", "assistant", "tool"):
                out[f"in_request_at_ask_{kind}{tag}"] = _pooled(ours, kind,
                                                                request_only=True) or 0.0
                out[f"same_size_trim_in_request_{kind}{tag}"] = _pooled(
                    same, kind, request_only=True) or 0.0
            out[f"mean_prompt_vs_same_size_trim{tag}"] = statistics.median(
                statistics.fmean(o.prompts) / statistics.fmean(t.prompts)
                for o, t in zip(ours, same, strict=True))
            if gen == "long replies":
                plain.append(out[f"in_request_at_ask_plain{tag}"])
            tool.append(out[f"in_request_at_ask_tool{tag}"])
    out["rollup_prefix_loss_whole"] = max(*loss["openai"], *loss["anthropic"])
    out["cost_vs_same_size_trim_openai"] = max(cost["openai"])
    out["cost_vs_same_size_trim_anthropic"] = max(cost["anthropic"])
    out["in_request_at_ask_long_replies"] = min(plain)
    out["tool_facts_in_request"] = min(tool)
    return out


@pytest.mark.timeout(5400)
def test_context_arms(tmp_path: Path, bench_report: Callable[..., Path]) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    _install_fast_litellm_counter()
    openai, anthropic = Prices.of(OPENAI_PRICED), Prices.of(ANTHROPIC_PRICED)
    gens: dict[str, list[dict[str, Any]]] = {
        "synthetic": [asyncio.run(run_conversation(simulate(s, TURNS), tmp_path, tag="s"))
                      for s in SEEDS],
        "prose": [asyncio.run(run_conversation(simulate_prose(s, TURNS), tmp_path, tag="p"))
                  for s in SEEDS],
        "long replies": [asyncio.run(run_conversation(simulate_long_replies(s, TURNS), tmp_path,
                                                      tag="l")) for s in SEEDS],
        "tool outputs": [asyncio.run(run_conversation(simulate_tool_outputs(s, TURNS), tmp_path,
                                                      tag="t")) for s in SEEDS],
    }
    heldout: dict[str, list[dict[str, Any]]] = {
        "prose": [asyncio.run(run_conversation(simulate_prose(s, TURNS), tmp_path, peers=False,
                                               tag="hp")) for s in HELDOUT_SEEDS],
        "long replies": [asyncio.run(run_conversation(simulate_long_replies(s, TURNS), tmp_path,
                                                      peers=False, tag="hl"))
                         for s in HELDOUT_SEEDS],
        "tool outputs": [asyncio.run(run_conversation(simulate_tool_outputs(s, TURNS), tmp_path,
                                                      peers=False, tag="ht"))
                         for s in HELDOUT_SEEDS],
    }
    long_run = asyncio.run(run_conversation(simulate_prose(SEEDS[0], LONG_TURNS), tmp_path,
                                            peers=False, tag="long"))
    names = ["treechat", "trim", "trim + summary", "same-size trim", "litellm", "langchain"]
    kinds = {"synthetic": ["synthetic"], "prose": ["plain", "assistant", "tool"],
             "long replies": ["plain", "assistant", "tool"], "tool outputs": ["plain", "tool"]}
    figures: dict[str, float] = {}
    rows: list[list[object]] = []
    per: dict[tuple[str, str], list[Arm]] = {}
    for gen, runs in gens.items():
        for name in names:
            arms = [next(a for a in r["arms"] if a.name == name) for r in runs]
            per[(gen, name)] = arms
            kept = []
            for kind in kinds[gen]:
                k = _pooled(arms, kind)
                kept.append(f"{kind} {k:.0%}" if k is not None else f"{kind} -")
            rows.append([
                gen, name, sum(a.over for a in arms),
                _spread([a.reuse_mean() / a.best_mean() for a in arms]),
                _spread([a.openai_cost(openai) for a in arms], "${:.2f}"),
                _spread([a.anthropic_reuse_mean() / a.best_mean() for a in arms]),
                _spread([a.anthropic_cost(anthropic) for a in arms], "${:.2f}"),
                _spread([statistics.fmean(a.prompts) for a in arms], "{:.0f}"),
                ", ".join(kept),
            ])
    ours_all = [a for gen in gens for a in per[(gen, "treechat")]]
    held: dict[tuple[str, str], list[Arm]] = {
        (gen, name): [next(a for a in r["arms"] if a.name == name) for r in runs]
        for gen, runs in heldout.items() for name in ("treechat", "same-size trim")}
    for gen in heldout:
        for name in ("treechat", "same-size trim"):
            arms = held[(gen, name)]
            rows.append([f"{gen} (held out)", name, sum(a.over for a in arms),
                         _spread([a.reuse_mean() / a.best_mean() for a in arms]),
                         _spread([a.openai_cost(openai) for a in arms], "${:.2f}"),
                         _spread([a.anthropic_reuse_mean() / a.best_mean() for a in arms]),
                         _spread([a.anthropic_cost(anthropic) for a in arms], "${:.2f}"),
                         _spread([statistics.fmean(a.prompts) for a in arms], "{:.0f}"),
                         ", ".join(f"{k} {_pooled(arms, k):.0%}" for k in kinds[gen]
                                   if _pooled(arms, k) is not None)])
    long_ours = next(a for a in long_run["arms"] if a.name == "treechat")
    long_trim = next(a for a in long_run["arms"] if a.name == "trim")
    rows.append(["prose, 520 turns", "treechat", long_ours.over,
                 f"{long_ours.reuse_mean() / long_ours.best_mean():.3f}",
                 f"${long_ours.openai_cost(openai):.2f}",
                 f"{long_ours.anthropic_reuse_mean() / long_ours.best_mean():.3f}",
                 f"${long_ours.anthropic_cost(anthropic):.2f}",
                 f"{statistics.fmean(long_ours.prompts):.0f}",
                 ", ".join(f"{k} {_pooled([long_ours], k):.0%}" for k in kinds["prose"]
                           if _pooled([long_ours], k) is not None)])
    rows.append(["prose, 520 turns", "trim", long_trim.over,
                 f"{long_trim.reuse_mean() / long_trim.best_mean():.3f}",
                 f"${long_trim.openai_cost(openai):.2f}",
                 f"{long_trim.anthropic_reuse_mean() / long_trim.best_mean():.3f}",
                 f"${long_trim.anthropic_cost(anthropic):.2f}",
                 f"{statistics.fmean(long_trim.prompts):.0f}", ""])

    def med(gen: str, name: str, f: Callable[[Arm], float]) -> float:
        return statistics.median(f(a) for a in per[(gen, name)])

    figures["reuse_vs_best"] = min(
        med(g, "treechat", lambda a: a.reuse_mean() / a.best_mean()) for g in gens)
    figures["reuse_vs_best_anthropic"] = min(
        med(g, "treechat", lambda a: a.anthropic_reuse_mean() / a.best_mean()) for g in gens)
    prose = per[("prose", "treechat")]
    for kind in ("plain", "assistant", "tool"):
        figures[f"recall_{kind}"] = _pooled(prose, kind) or 0.0
        figures[f"in_request_{kind}"] = _pooled(prose, kind, request_only=True) or 0.0
        for name in names[1:]:
            slug = name.replace(" + ", "_").replace(" ", "_")
            figures[f"{slug}_kept_{kind}"] = _pooled(per[("prose", name)], kind) or 0.0
    figures["recall_synthetic"] = _pooled(per[("synthetic", "treechat")], "synthetic") or 0.0
    figures["in_request_synthetic"] = _pooled(per[("synthetic", "treechat")], "synthetic",
                                              request_only=True) or 0.0
    rollups = [x for a in [*ours_all, long_ours] for x in a.rollup_loss]
    figures["rollup_prefix_loss"] = statistics.fmean(rollups) if rollups else 0.0
    totals = [x for a in [*ours_all, long_ours] for x in a.rollup_total_loss]
    figures["rollup_compaction_loss"] = statistics.fmean(totals) if totals else 0.0
    figures["rollups"] = len(rollups)
    figures["long_rollups"] = len(long_ours.rollup_loss)
    figures["long_reuse_vs_best"] = long_ours.reuse_mean() / long_ours.best_mean()
    # The conversation runs on Claude Sonnet (MODEL), so the headline prices it as Anthropic
    # bills it; the OpenAI rule at OpenAI's prices is the second view.
    for peer in ("trim", "trim + summary"):
        slug = "cost_vs_trim_hysteresis" if peer == "trim" else "cost_vs_trim_summary"
        figures[slug] = statistics.median(
            o.anthropic_cost(anthropic) / t.anthropic_cost(anthropic)
            for o, t in zip(prose, per[("prose", peer)], strict=True))
        figures[f"{slug}_openai"] = statistics.median(
            o.openai_cost(openai) / t.openai_cost(openai)
            for o, t in zip(prose, per[("prose", peer)], strict=True))
    figures["over_window"] = sum(a.over for a in [*ours_all, long_ours])
    for name in names[1:]:
        slug = name.replace(" + ", "_").replace(" ", "_")
        figures[f"{slug}_over_window"] = sum(a.over for g in gens for a in per[(g, name)])
    figures["compactions"] = statistics.median(a.compactions for a in ours_all)
    figures["mean_prompt_tokens"] = statistics.fmean(p for a in ours_all for p in a.prompts)
    causes: dict[str, int] = {}
    breaks: dict[str, int] = {}
    for a in [*ours_all, long_ours]:
        for c, n in a.lost_by_cause.items():
            causes[c] = causes.get(c, 0) + n
        for c, n in a.breaks_by_cause.items():
            breaks[c] = breaks.get(c, 0) + n
    for c in ("summary", "roll-up", "aging", "idle clear", "other"):
        slug = c.replace(" ", "_").replace("-", "")
        figures[f"cache_lost_tokens_{slug}"] = causes.get(c, 0)
        figures[f"cache_breaks_{slug}"] = breaks.get(c, 0)
    every = {(split, gen): [r["arms"] for r in runs]
             for split, table in (("", gens), ("_heldout", heldout))
             for gen, runs in table.items()}
    figures.update(_issue_figures(per, held, every, long_ours, openai, anthropic))
    figures["over_window"] += sum(a.over for arms in held.values() for a in arms
                                  if a.name == "treechat")
    header = ["generator", "arm", "over window", "reuse/best (OpenAI)", "cost at gpt-4o",
              "reuse/best (Anthropic)", "cost at Sonnet", "mean prompt", "kept at ask time"]
    _merge_report(bench_report, figures, rows, header)
    print("\ncache breaks by cause (Treechat, all runs): " + ", ".join(
        f"{c}: {breaks[c]} breaks, {causes[c]:,} tokens" for c in sorted(causes)))
    print("roll-ups:", len(rollups), "mean prefix rewritten by the roll-up itself",
          f"{figures['rollup_prefix_loss']:.3f}, by its whole compaction",
          f"{figures['rollup_compaction_loss']:.3f}")
    assert figures["over_window"] == 0
    assert figures["rollup_prefix_loss_whole"] <= 0.25
    assert figures["cost_vs_same_size_trim_openai"] <= 1.0
    assert figures["cost_vs_same_size_trim_anthropic"] <= 0.8
    assert figures["in_request_at_ask_long_replies"] >= 0.6
    assert figures["tool_facts_in_request"] >= 0.5
    assert figures["reuse_vs_best"] >= 0.85
    assert figures["recall_tool"] >= 0.5


@pytest.mark.timeout(1200)
def test_context_scaling_and_storage(tmp_path: Path, bench_report: Callable[..., Path]) -> None:
    t100, t10k = asyncio.run(prepare_times(tmp_path))
    b100, b1000 = storage_growth(tmp_path)
    figures = {
        "prepare_100_ms": t100 * 1000,
        "prepare_10k_ms": t10k * 1000,
        "prepare_10k_vs_100": t10k / t100,
        "storage_bytes_100": b100,
        "storage_bytes_1000": b1000,
        "storage_growth_1000_vs_100": b1000 / b100,
    }
    _merge_report(bench_report, figures, [
        ["prepare() per turn at 100 nodes", f"{t100 * 1000:.2f} ms"],
        ["prepare() per turn at 10,000 nodes", f"{t10k * 1000:.2f} ms"],
        ["ratio 10,000 / 100", f"{t10k / t100:.2f}"],
        ["commit storage after 100 turns", f"{b100:,} B"],
        ["commit storage after 1,000 turns", f"{b1000:,} B"],
        ["ratio 1,000 / 100", f"{b1000 / b100:.2f}"],
    ], ["figure", "value"])
    assert t10k / t100 <= 2.0
    assert 5.0 <= b1000 / b100 <= 15.0
