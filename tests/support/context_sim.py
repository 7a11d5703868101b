"""Seeded, realistic conversations for the context benchmark: short and long user messages,
assistant replies, tool calls whose results run from a few lines to 30k characters, planted
facts that later turns ask about, an edited (branched) message and an attached side branch."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

NAMES = ["Kestrel", "Marigold", "Tamarack", "Osprey", "Juniper", "Halcyon", "Bramble",
         "Corvid", "Lantana", "Pipit", "Sorrel", "Wren"]
PEOPLE = ["Marisol Okafor", "Tobias Lindqvist", "Priya Ramanathan", "Dmitri Halvorsen",
          "Ines Carvalho", "Kofi Mensah", "Yuki Tanabe", "Hannah Brightwater"]
TECH = [("DuckDB", "SQLite"), ("Redis", "Memcached"), ("PostgreSQL", "MySQL"),
        ("NATS", "Kafka"), ("Caddy", "nginx"), ("Polars", "pandas")]
THINGS = ["the cache layer", "the job queue", "the reporting store", "the reverse proxy",
          "the event bus", "the analytics pipeline"]
FILES = ["src/billing/invoice.py", "src/billing/tax.py", "src/api/routes.py", "src/api/auth.py",
         "src/jobs/worker.py", "src/jobs/retry.py", "tests/test_invoice.py", "src/db/models.py",
         "src/db/migrations/0042_ledger.py", "src/util/dates.py", "src/cli/main.py"]
FUNCS = ["compute_total", "apply_discount", "parse_period", "retry_with_backoff", "load_config",
         "render_invoice", "close_ledger", "validate_token", "schedule_job", "rollup_daily"]
FILLER = (
    "the request handler returns early when the payload is empty so the caller never sees "
    "the validation error and the retry loop keeps going until the budget runs out which "
    "explains why the dashboard shows duplicate invoices for the same customer in the "
    "same billing period after a deploy"
)
WORDS = FILLER.split()


@dataclass
class Fact:
    kind: str
    value: str
    statement: str
    question: str
    turn: int


@dataclass
class ToolCall:
    name: str
    args: dict[str, object]
    result: str


@dataclass
class Turn:
    index: int
    time: float
    user: str
    reply: str
    tools: list[ToolCall] = field(default_factory=list)
    after_tools: str = ""
    edit_previous: bool = False  # this user message replaces the previous one (a branch)
    attach_side: bool = False  # an attach pointer to the side branch precedes the message
    fact: Fact | None = None
    asks: Fact | None = None  # the planted fact this turn's message asks about


@dataclass
class SideBranch:
    from_turn: int  # branches off after this main turn
    turns: list[Turn]
    fact: Fact


@dataclass
class Conversation:
    seed: int
    turns: list[Turn]
    facts: list[Fact]
    side: SideBranch | None


def _sentence(rng: random.Random, n: int) -> str:
    start = rng.randrange(0, len(WORDS) - n)
    words = WORDS[start:start + n]
    return " ".join(words).capitalize() + "."


def _code(rng: random.Random, lines: int) -> str:
    fn = rng.choice(FUNCS)
    body = [f"def {fn}(items, period):"]
    for i in range(lines):
        var = rng.choice(["total", "rows", "acc", "result", "value"])
        body.append(f"    {var} = {var} + items[{i % 7}].amount  # step {i}")
    body.append("    return total")
    return "```python\n" + "\n".join(body) + "\n```"


def _file_content(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    line_no = 1
    while size < chars:
        fn = rng.choice(FUNCS)
        line = rng.choice([
            f"def {fn}(self, rows, period=None):",
            f"    total = sum(r.amount for r in rows if r.period == period)  # {line_no}",
            f"    if not rows: raise ValueError('no rows for {fn}')",
            f"    log.debug('%s processed %d rows', '{fn}', len(rows))",
            "    return Decimal(total).quantize(Decimal('0.01'))",
            f"class {fn.title().replace('_', '')}Error(Exception): pass",
            "",
        ])
        out.append(line)
        size += len(line) + 1
        line_no += 1
    return "\n".join(out)[:chars]


def _test_log(rng: random.Random, chars: int) -> str:
    out: list[str] = ["=" * 29 + " test session starts " + "=" * 30]
    size = len(out[0])
    i = 0
    while size < chars:
        mod = rng.choice(FILES)
        status = "PASSED" if rng.random() < 0.93 else "FAILED"
        line = f"{mod}::test_{rng.choice(FUNCS)}_{i} {status} [{min(99, i % 100):3d}%]"
        out.append(line)
        size += len(line) + 1
        i += 1
    out.append(f"==== {i - 3} passed, 3 failed in {rng.uniform(2, 40):.2f}s ====")
    return "\n".join(out)[:chars]


def _result_size(rng: random.Random) -> int:
    # Log-uniform from a few lines to 30k characters.
    return int(10 ** rng.uniform(2.2, 4.48))


def _tool_call(rng: random.Random) -> ToolCall:
    kind = rng.random()
    size = _result_size(rng)
    if kind < 0.45:
        path = rng.choice(FILES)
        return ToolCall("read_file", {"path": path}, _file_content(rng, size))
    if kind < 0.7:
        return ToolCall("run_tests", {"args": ["-q", rng.choice(FILES)]}, _test_log(rng, size))
    if kind < 0.9:
        pattern = rng.choice(FUNCS)
        hits = "\n".join(
            f"{rng.choice(FILES)}:{rng.randint(1, 400)}:    {pattern}(rows, period)"
            for _ in range(max(1, size // 60))
        )
        return ToolCall("grep", {"pattern": pattern, "path": "src"}, hits[:size])
    query = f"{rng.choice(FUNCS)} decimal rounding python"
    return ToolCall("web_search", {"query": query},
                    "\n".join(f"{i + 1}. {_sentence(rng, 12)} https://example.org/{i}"
                              for i in range(max(1, min(size, 3000) // 90))))


def _user_message(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.35:
        return rng.choice(["ok, go on", "thanks", "run the tests again please",
                           "what about the empty case?", "looks good, next step?",
                           "hmm, that did not work", "can you check the logs?"])
    if r < 0.8:
        f = rng.choice(FILES)
        return (f"In {f}, {rng.choice(FUNCS)} still fails for refunds. "
                f"{_sentence(rng, rng.randint(8, 20))} Line {rng.randint(10, 400)} looks "
                f"suspicious. Could you take a look and fix it?")
    return ("Here is the current version, please review it carefully:\n\n"
            + _code(rng, rng.randint(10, 60))
            + f"\n\n{_sentence(rng, 18)} {_sentence(rng, 14)}")


def _reply(rng: random.Random) -> str:
    parts = [_sentence(rng, rng.randint(10, 25)) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.35:
        parts.append(_code(rng, rng.randint(4, 25)))
    parts.append(_sentence(rng, rng.randint(6, 14)))
    return "\n\n".join(parts)


def _facts(rng: random.Random, turns: int, count: int) -> list[Fact]:
    names = rng.sample(NAMES, 4)
    people = rng.sample(PEOPLE, 2)
    techs = rng.sample(TECH, 3)
    things = rng.sample(THINGS, 3)
    port = str(rng.randint(40000, 59999))
    budget = f"{rng.randint(11, 97)},{rng.randint(100, 999)}"
    limit = str(rng.randint(1200, 9800))
    facts = [
        Fact("name", names[0], f"By the way, the new billing service will be called {names[0]}.",
             "What did we say the new billing service is called?", 0),
        Fact("name", names[1],
             f"Also, the internal admin tool is codenamed {names[1]} from now on.",
             "Remind me of the admin tool's codename?", 0),
        Fact("person", people[0], f"Please send the weekly report to {people[0]}; she owns the "
             "deploy pipeline.", "Who should get the weekly report again?", 0),
        Fact("number", port, f"For the record, the staging database listens on port {port}.",
             "Which port does the staging database use?", 0),
        Fact("number", budget,
             f"The monthly infrastructure budget we agreed on is {budget} dollars.",
             "What was the monthly infrastructure budget?", 0),
        Fact("number", limit, f"Our public API rate limit is {limit} requests per minute.",
             "What is our API rate limit?", 0),
        Fact("decision", techs[0][0], f"We decided to use {techs[0][0]} instead of {techs[0][1]} "
             f"for {things[0]}.", f"What did we pick for {things[0]}?", 0),
        Fact("decision", techs[1][0], f"Decision: {things[1]} goes with {techs[1][0]}, not "
             f"{techs[1][1]}.", f"Which tool did we choose for {things[1]}?", 0),
        Fact("name", names[2], f"The customer we are piloting this with is {names[2]} Logistics.",
             "Which customer is the pilot?", 0),
        Fact("person", people[1], f"{people[1]} reviews every migration before it ships.",
             "Who reviews migrations?", 0),
        Fact("decision", techs[2][0], f"Let's settle it: {things[2]} will use {techs[2][0]}.",
             f"What will {things[2]} use?", 0),
        Fact("name", names[3], f"The release after this one is named {names[3]}.",
             "What is the next release called?", 0),
    ][:count]
    slots = sorted(rng.sample(range(2, int(turns * 0.85)), len(facts)))
    for fact, slot in zip(facts, slots, strict=True):
        fact.turn = slot
    return facts


def simulate(seed: int, turns: int = 220) -> Conversation:
    rng = random.Random(seed)
    facts = _facts(rng, turns, 11)
    by_turn = {f.turn: f for f in facts}
    asked = {rng.randint(f.turn + 15, turns - 1): f for f in facts if f.turn + 15 < turns - 1}
    edit_turn = int(turns * 0.3)
    side_from = int(turns * 0.5)
    attach_turn = side_from + 6
    out: list[Turn] = []
    now = 1_700_000_000.0
    for i in range(turns):
        now += rng.uniform(40, 240)
        if i == int(turns * 0.7):
            now += 2 * 3600  # a lunch break: the provider cache expires, idle clearing runs
        user = _user_message(rng)
        if i == edit_turn and out:
            # An edit rewords the message it replaces; what it said still stands.
            user = f"Let me put that differently. {out[-1].user}"
        fact = by_turn.get(i)
        if fact is not None:
            user = f"{fact.statement} {user}"
        if i in asked and i not in by_turn:
            user = f"{asked[i].question} {user}"
        tools = [_tool_call(rng) for _ in range(rng.choice([0, 0, 1, 1, 1, 2, 3]))]
        turn = Turn(
            index=i, time=now, user=user, reply=_reply(rng), tools=tools,
            after_tools=_reply(rng) if tools else "", edit_previous=(i == edit_turn),
            attach_side=(i == attach_turn), fact=fact,
            asks=asked[i] if i in asked and i not in by_turn else None,
        )
        out.append(turn)
    side_fact = Fact("number", str(rng.randint(100000, 999999)),
                     "", "What was the ticket number from the side investigation?", side_from)
    side_fact.statement = f"The root cause is tracked in ticket {side_fact.value}."
    side_turns = []
    t = out[side_from].time
    for k in range(4):
        t += 60
        user = _user_message(rng)
        if k == 1:
            user = f"{side_fact.statement} {user}"
        side_turns.append(Turn(index=k, time=t, user=user, reply=_reply(rng)))
    return Conversation(seed=seed, turns=out, facts=[*facts, side_fact],
                        side=SideBranch(side_from, side_turns, side_fact))


# --- real prose: the running interpreter's standard library ---------------------------------
#
# A second generator whose text is not ours: user messages quote and ask about real
# docstrings, replies are real docstring paragraphs, tool results are real source files and
# grep output of the standard library of the Python running the benchmark. Facts are planted in
# plain words in three places: said by the user, concluded by the assistant, and only inside a
# tool result (in the middle of a long file, where the per-item cap cuts even the first
# request). Each is asked about once, later; what counts is the request at that turn.

PLAIN_FACTS = [
    ("never eat", "I never eat {v}, so leave it out of any example menus.",
     "Which food did I say I never eat?",
     ["mushrooms", "olives", "anchovies", "coriander", "aubergine", "beetroot"]),
    ("codenamed", "the project is codenamed {v}, use that in the docs",
     "What is the project codenamed again?",
     ["bluebird", "sandpiper", "larkspur", "moraine", "quillwort", "thistledown"]),
    ("sister lives", "My sister lives in {v} and she is the one testing the app.",
     "Where does my sister live?",
     ["porto", "tromso", "valparaiso", "ljubljana", "tbilisi", "windhoek"]),
    ("favourite editor", "my favourite editor is {v}, format snippets for it",
     "Which editor is my favourite?", ["kakoune", "helix", "micro", "nano", "joe", "lapce"]),
    ("allergic to", "I am allergic to {v}, which matters for the office party list.",
     "What am I allergic to?", ["peanuts", "sesame", "kiwi", "shellfish", "lupin", "celery"]),
    ("dog is", "our dog is a {v} and she hates the vacuum",
     "What kind of dog did I say we have?",
     ["whippet", "dachshund", "samoyed", "vizsla", "basenji", "schipperke"]),
    ("train home", "I take the {v} train home every evening so I leave at five.",
     "Which train do I take home?",
     ["lakeshore", "riverside", "northbound", "coastal", "valley", "harbour"]),
    ("team meets", "the team meets on {v} mornings, never plan releases then",
     "On which mornings does the team meet?",
     ["tuesday", "wednesday", "thursday", "friday", "monday", "saturday"]),
]
ASSISTANT_FACTS = [
    ("slow part", "Looking at it again, the slow part is the {v} step, not the parser.",
     "Which step did you say was the slow part?",
     ["tokenizing", "hashing", "rendering", "sorting", "copying", "escaping"]),
    ("culprit", "So the culprit is the {v} setting; everything else checks out.",
     "What did you conclude the culprit was?",
     ["buffering", "locale", "umask", "timezone", "encoding", "recursion"]),
    ("safest choice", "The safest choice here is the {v} module rather than rolling our own.",
     "Which module did you say was the safest choice?",
     ["shlex", "secrets", "tempfile", "pathlib", "textwrap", "fnmatch"]),
    ("root of the leak", "I think the root of the leak is the {v} cache holding references.",
     "What did you say was the root of the leak?",
     ["linecache", "weakref", "importlib", "functools", "codecs", "mimetypes"]),
    ("keep the default", "You can keep the default of {v} workers, it is not the bottleneck.",
     "How many workers did you say we can keep as the default?",
     ["three", "five", "seven", "eleven", "thirteen", "seventeen"]),
]
TOOL_FACTS = [
    ("staging server", "# Maintainers' note: the staging server is {v}, ask before using it.",
     "What was the staging server in that file you read?",
     ["heron", "basalt", "juniper", "obsidian", "marten", "fennel"]),
    ("on call", "# Whoever is on call this month is {v}; page them for outages.",
     "Who is on call this month according to the file?",
     ["adaeze", "bertil", "carmela", "dorotea", "eskil", "fumiko"]),
    ("license key", "# The old license key was rotated to {v} last spring.",
     "What was the license key rotated to, per the file?",
     ["amber-kite", "blue-otter", "cedar-fox", "dune-moth", "elm-crow", "fig-wren"]),
    ("mirror lives", "# The package mirror lives at {v}, not the public index.",
     "Where does the package mirror live, according to that file?",
     ["mirror-east", "vault-two", "depot-nine", "shelf-four", "cellar-one", "annex-six"]),
]


@dataclass
class ProseFact:
    kind: str  # plain / assistant / tool
    key: str
    value: str
    statement: str
    question: str
    turn: int
    ask_turn: int = -1


@dataclass
class ProseTurn:
    index: int
    time: float
    user: str
    reply: str
    tools: list[ToolCall] = field(default_factory=list)
    after_tools: str = ""
    asks: ProseFact | None = None


@dataclass
class ProseConversation:
    seed: int
    turns: list[ProseTurn]
    facts: list[ProseFact]


@dataclass
class _Corpus:
    files: list[tuple[str, str]]  # (path relative to the stdlib, source)
    paragraphs: list[str]  # docstring paragraphs of modules, classes and functions
    sentences: list[str]


_CORPUS: _Corpus | None = None


def stdlib_corpus() -> _Corpus:
    """Docstrings and sources of the running interpreter's standard library (read once)."""
    global _CORPUS
    if _CORPUS is not None:
        return _CORPUS
    import ast
    import sysconfig
    from pathlib import Path

    root = Path(sysconfig.get_paths()["stdlib"])
    files: list[tuple[str, str]] = []
    paragraphs: list[str] = []
    for path in sorted(root.glob("*.py")):
        try:
            source = path.read_text(encoding="utf-8")
            tree = ast.parse(source)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        files.append((path.name, source))
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef):
                doc = ast.get_docstring(node)
                if not doc:
                    continue
                for para in doc.split("\n\n"):
                    flat = " ".join(para.split())
                    if 60 <= len(flat) <= 900 and not flat.startswith((">>>", "-", "*", ":")):
                        paragraphs.append(flat)
    sentences = [s for p in paragraphs for s in _SENT.split(p) if 30 <= len(s) <= 300]
    _CORPUS = _Corpus(files, paragraphs, sentences)
    return _CORPUS


_SENT = __import__("re").compile(r"(?<=[.!?])\s+(?=[A-Z])")


def _prose_user(rng: random.Random, c: _Corpus) -> str:
    r = rng.random()
    if r < 0.25:
        return rng.choice(["ok, thanks", "go on", "makes sense", "hm, not sure about that",
                           "and then?", "can you check that again?", "right"])
    if r < 0.8:
        name = rng.choice(c.files)[0]
        return (f"I was reading {name} and it says: \"{rng.choice(c.sentences)}\" "
                f"{rng.choice(['Why would that be?', 'Does that apply to us?', 'Explain it?'])}")
    return " ".join(rng.choice(c.paragraphs) for _ in range(rng.randint(2, 4)))


def _prose_reply(rng: random.Random, c: _Corpus) -> str:
    return "\n\n".join(rng.choice(c.paragraphs) for _ in range(rng.randint(1, 4)))


def _prose_tool(rng: random.Random, c: _Corpus) -> ToolCall:
    name, source = rng.choice(c.files)
    size = int(10 ** rng.uniform(2.2, 4.48))
    if rng.random() < 0.65:
        start = rng.randrange(0, max(1, len(source) - size))
        start = source.rfind("\n", 0, start) + 1
        return ToolCall("read_file", {"path": f"Lib/{name}"}, source[start:start + size])
    word = rng.choice(["return", "self", "raise", "import", "def", "None", "yield", "with"])
    hits = [f"Lib/{n}:{i + 1}:{ln}" for n, s in rng.sample(c.files, 6)
            for i, ln in enumerate(s.splitlines()) if word in ln]
    return ToolCall("grep", {"pattern": word, "path": "Lib"}, "\n".join(hits)[:size])


def _plant_in_tool(rng: random.Random, c: _Corpus, line: str) -> ToolCall:
    """A long read whose middle (past the cap's head, before its tail) holds `line`."""
    big = [(n, s) for n, s in c.files if len(s) > 20_000]
    name, source = rng.choice(big)
    size = rng.randint(9_000, 20_000)
    start = source.rfind("\n", 0, rng.randrange(0, len(source) - size)) + 1
    text = source[start:start + size]
    mid = text.find("\n", int(len(text) * rng.uniform(0.4, 0.6))) + 1
    return ToolCall("read_file", {"path": f"Lib/{name}"}, text[:mid] + line + "\n" + text[mid:])


def schedule_facts(rng: random.Random, plans: list[ProseFact],
                   turns: int) -> tuple[dict[int, ProseFact], dict[int, ProseFact]]:
    """Each fact gets its own turn in the first three quarters and a later turn, 15 or more
    turns on, where it is asked about: (facts by turn stated, facts by turn asked)."""
    slots = rng.sample(range(2, int(turns * 0.75)), len(plans))
    for fact, slot in zip(plans, slots, strict=True):
        fact.turn = slot
    by_turn = {f.turn: f for f in plans}
    free = [t for t in range(turns) if t not in by_turn]
    for fact in plans:
        later = [t for t in free if fact.turn + 15 <= t < turns]
        fact.ask_turn = rng.choice(later)
        free.remove(fact.ask_turn)
    return by_turn, {f.ask_turn: f for f in plans}


def simulate_prose(seed: int, turns: int = 210) -> ProseConversation:
    rng = random.Random(seed)
    c = stdlib_corpus()
    plans: list[ProseFact] = []
    for kind, templates, n in (("plain", PLAIN_FACTS, 5), ("assistant", ASSISTANT_FACTS, 4),
                               ("tool", TOOL_FACTS, 4)):
        for key, statement, question, values in rng.sample(templates, n):
            v = rng.choice(values)
            plans.append(ProseFact(kind, key, v, statement.format(v=v), question, 0))
    by_turn, asks = schedule_facts(rng, plans, turns)
    out: list[ProseTurn] = []
    now = 1_700_000_000.0
    for i in range(turns):
        now += rng.uniform(40, 240)
        if i == int(turns * 0.7):
            now += 2 * 3600
        user = _prose_user(rng, c)
        reply = _prose_reply(rng, c)
        tools = [_prose_tool(rng, c) for _ in range(rng.choice([0, 0, 1, 1, 1, 2, 3]))]
        fact = by_turn.get(i)
        if fact is not None and fact.kind == "plain":
            user = f"{user} By the way, {fact.statement}" if rng.random() < 0.5 else (
                f"{fact.statement[0].upper()}{fact.statement[1:]}. {user}")
        elif fact is not None and fact.kind == "assistant":
            paras = reply.split("\n\n")
            paras.insert(rng.randrange(0, len(paras) + 1), fact.statement)
            reply = "\n\n".join(paras)
        elif fact is not None and fact.kind == "tool":
            tools.insert(0, _plant_in_tool(rng, c, fact.statement))
        asked = asks.get(i)
        if asked is not None:
            user = asked.question
        out.append(ProseTurn(index=i, time=now, user=user, reply=reply, tools=tools,
                             after_tools=_prose_reply(rng, c) if tools else "", asks=asked))
    return ProseConversation(seed=seed, turns=out, facts=plans)
