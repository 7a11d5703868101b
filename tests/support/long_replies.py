"""A generator of conversations with long replies of real prose: every reply is 300-800 words of
the Python Language Reference as the running interpreter ships it (`pydoc_data.topics`, prose
paragraphs only, no code), user messages are short asks, pastes and chatter, tool results are
the interpreter's own source files and logs. Facts are planted in plain words, each in one of
several phrasings (sentence case or mid-sentence, first person or about the project), said by
the user, concluded by the assistant or only inside a tool result, and asked about once,
later, in other words than the statement's."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from .context_sim import (
    ProseConversation,
    ProseFact,
    ProseTurn,
    ToolCall,
    schedule_facts,
    stdlib_corpus,
)

# key words (what the request must hold near the value), statements, question, values
USER_FACTS: list[tuple[str, tuple[str, ...], str, tuple[str, ...]]] = [
    ("office", ("Our office is in {v}, so meetings follow that clock.",
                "we work out of the {v} office these days",
                "The whole team moved into the office in {v} last month.",
                "I'm based at the {v} office, if that matters for the examples."),
     "Which city do we work from?",
     ("leeds", "gdansk", "tampere", "aarhus", "cluj", "braga")),
    ("build server", ("the build server is called {v}, by the way",
                      "We named the build server {v} after a long vote.",
                      "Our CI runs on the build server {v} and nothing else."),
     "What is the machine our CI runs on called?",
     ("gannet", "pollux", "kittiwake", "stoat", "nimbus", "wrasse")),
    ("deadline", ("The deadline for the beta is {v}.",
                  "we have to hit the deadline of {v} for the beta",
                  "My manager set the beta deadline to {v}, no slack."),
     "By when does the beta have to ship?",
     ("march 14", "june 2", "october 9", "april 21", "july 30", "november 5")),
    ("database", ("We decided to go with {v} as the database.",
                  "decision made: the database will be {v}",
                  "After the review we settled on {v} for the database."),
     "Which storage engine did we settle on?",
     ("cockroachdb", "scylladb", "mariadb", "firebird", "couchdb", "rethinkdb")),
    ("manager", ("My manager is {v}, she signs off anything over budget.",
                 "{v} is my manager now, after the reorg",
                 "I report to {v}; she is my manager for this project."),
     "Who signs off my spending?",
     ("oyelaran", "vasquez", "lindgren", "okonkwo", "petrenko", "haddad")),
    ("laptop", ("I'm working on a {v} laptop, so keep builds light.",
                "my laptop is an old {v} with 8 GB",
                "Everything here runs on my {v} laptop."),
     "What computer am I using?",
     ("thinkpad", "framework", "zenbook", "latitude", "spectre", "pinebook")),
    ("backend", ("We write the backend in {v}.",
                 "the backend is all {v}, nothing else",
                 "Our backend moved to {v} two years ago."),
     "What language is our server side written in?",
     ("elixir", "kotlin", "haskell", "ocaml", "clojure", "erlang")),
    ("cat", ("My cat is called {v} and she sits on the keyboard.",
             "our cat {v} walked over the keyboard again",
             "The cat, {v}, is why some of my messages have typos."),
     "What is my pet's name?",
     ("biscuit", "pickle", "noodle", "mochi", "pepper", "waffles")),
    ("customer", ("Our biggest customer is {v}.",
                  "the customer who pays for this is {v}",
                  "We built this for one customer, {v}, first."),
     "Who is the client paying for the work?",
     ("fernhill", "oakridge", "bluewater", "stonegate", "redmoor", "ashgrove")),
    ("timezone", ("I'm in the {v} timezone.",
                  "my timezone is {v}, schedule around it",
                  "We all keep {v} as our timezone."),
     "Which clock do I live by?",
     ("utc+2", "utc-5", "utc+9", "utc-3", "utc+5:30", "utc+1")),
]
ASSISTANT_FACTS: list[tuple[str, tuple[str, ...], str, tuple[str, ...]]] = [
    ("bottleneck", ("Having gone through it, the bottleneck is {v}, not the network.",
                    "so the real bottleneck turns out to be {v}"),
     "What did you find was slowing things down?",
     ("serialization", "logging", "compression", "allocation", "locking", "parsing")),
    ("flag", ("The flag you want is {v}; it does exactly this.",
              "Pass the {v} flag and the problem goes away."),
     "Which option did you tell me to pass?",
     ("--no-cache", "--strict", "--frozen", "--offline", "--quiet", "--isolated")),
    ("version", ("Pin the library to version {v}, the later ones broke it.",
                 "the last good version is {v}"),
     "Which release did you say to stay on?",
     ("2.4.1", "3.0.7", "1.9.3", "4.2.0", "0.18.2", "5.1.4")),
]
TOOL_FACTS: list[tuple[str, tuple[str, ...], str, tuple[str, ...]]] = [
    ("staging server", ("# Note for maintainers: the staging server is {v}.",
                        "STAGING_HOST = '{v}'  # the staging server, ask before deploying",
                        "# deploys go to the staging server {v} first"),
     "What host did that file say we deploy to before production?",
     ("heron", "basalt", "obsidian", "marten", "fennel", "tansy")),
    ("on call", ("# On call this month: {v} (page for outages).",
                 "ONCALL = '{v}'  # who is on call this month",
                 "# the engineer on call this month is {v}"),
     "Who does the file say to page for an outage?",
     ("adaeze", "bertil", "carmela", "dorotea", "eskil", "fumiko")),
    ("license key", ("# The license key was rotated to {v} last spring.",
                     "LICENSE_KEY = '{v}'  # rotated license key",
                     "# new license key: {v}"),
     "What is the product key in that file now?",
     ("amber-kite", "blue-otter", "cedar-fox", "dune-moth", "elm-crow", "fig-wren")),
    ("mirror", ("# Packages come from the mirror at {v}, not the public index.",
                "PACKAGE_MIRROR = '{v}'  # internal mirror",
                "# use the internal mirror {v} for installs"),
     "Where should installs fetch packages from, per the file?",
     ("mirror-east", "vault-two", "depot-nine", "shelf-four", "cellar-one", "annex-six")),
]

_ASKS = ("Can you explain how {t} works?", "What should I watch out for with {t}?",
         "How does {t} interact with the rest of the language?", "Go on about {t}.",
         "I still don't get {t}. Again, more slowly?", "Is {t} something we rely on?")
_CHATTER = ("ok, thanks", "go on", "makes sense", "hm, not sure about that", "and then?",
            "can you check that again?", "right", "thanks, that helps", "next?")


@dataclass
class _Prose:
    topics: list[tuple[str, list[str]]]  # (topic, prose paragraphs in order)


_PROSE: _Prose | None = None
_CODEY = re.compile(r"[{}()\[\]=:;<>]")


def reference_prose() -> _Prose:
    """Prose paragraphs of the Language Reference the interpreter ships (read once)."""
    global _PROSE
    if _PROSE is not None:
        return _PROSE
    import pydoc_data.topics as topics

    out: list[tuple[str, list[str]]] = []
    for name, text in sorted(topics.topics.items()):
        paras = []
        for p in re.split(r"\n\s*\n", text):
            lines = p.strip("\n").splitlines()
            flat = " ".join(p.split())
            if len(flat.split()) < 25 or any(
                    ln.lstrip().startswith((">>>", "...")) for ln in lines):
                continue
            if len(_CODEY.findall(flat)) > 0.03 * len(flat):
                continue
            paras.append(flat)
        if paras:
            out.append((name.replace("-", " "), paras))
    _PROSE = _Prose(out)
    return _PROSE


def _long_reply(rng: random.Random, prose: _Prose) -> tuple[str, str]:
    """300-800 words of consecutive paragraphs (from one topic, then the next), and the
    topic it opens with."""
    target = rng.randint(300, 800)
    k = rng.randrange(len(prose.topics))
    topic = prose.topics[k][0]
    out: list[str] = []
    words = 0
    while True:
        _name, paras = prose.topics[k]
        for para in paras[rng.randrange(len(paras)):]:
            p = para
            n = len(p.split())
            if words + n > 800:
                if words >= 300:
                    return "\n\n".join(out), topic
                p = " ".join(p.split()[: 800 - words])
                n = len(p.split())
            out.append(p)
            words += n
            if words >= target:
                return "\n\n".join(out), topic
        k = (k + 1) % len(prose.topics)


def _user(rng: random.Random, prose: _Prose) -> str:
    r = rng.random()
    if r < 0.3:
        return rng.choice(_CHATTER)
    if r < 0.85:
        return rng.choice(_ASKS).format(t=rng.choice(prose.topics)[0])
    name, paras = rng.choice(prose.topics)
    return f"Here is what the manual says about {name}: {rng.choice(paras)} Is that right?"


def _tool(rng: random.Random) -> ToolCall:
    c = stdlib_corpus()
    name, source = rng.choice(c.files)
    size = int(10 ** rng.uniform(2.4, 4.4))
    r = rng.random()
    if r < 0.6:
        start = source.rfind("\n", 0, rng.randrange(0, max(1, len(source) - size))) + 1
        return ToolCall("read_file", {"path": f"Lib/{name}"}, source[start:start + size])
    if r < 0.8:
        word = rng.choice(["return", "raise", "import", "yield", "with", "assert"])
        hits = [f"Lib/{n}:{i + 1}:{ln}" for n, s in rng.sample(c.files, 5)
                for i, ln in enumerate(s.splitlines()) if word in ln]
        return ToolCall("grep", {"pattern": word, "path": "Lib"}, "\n".join(hits)[:size])
    tests = [f"Lib/test/test_{rng.choice(c.files)[0][:-3]}.py::test_{k} "
             f"{'PASSED' if rng.random() < 0.95 else 'FAILED'}" for k in range(size // 50 + 1)]
    return ToolCall("run_tests", {"args": ["-q"]}, "\n".join(tests)[:size])


def _planted(rng: random.Random, line: str) -> ToolCall:
    """A long read whose middle (past what a per-item cap keeps) holds `line`."""
    c = stdlib_corpus()
    name, source = rng.choice([(n, s) for n, s in c.files if len(s) > 24_000])
    size = rng.randint(9_000, 22_000)
    start = source.rfind("\n", 0, rng.randrange(0, len(source) - size)) + 1
    text = source[start:start + size]
    mid = text.find("\n", int(len(text) * rng.uniform(0.35, 0.65))) + 1
    return ToolCall("read_file", {"path": f"Lib/{name}"}, text[:mid] + line + "\n" + text[mid:])


def _state(rng: random.Random, statement: str, message: str) -> str:
    """A user message stating a fact: before, after or inside the rest, in its own case."""
    s = statement.rstrip(".")
    where = rng.random()
    if where < 0.35:
        return f"{s[0].upper()}{s[1:]}. {message}"
    if where < 0.7:
        keep = re.match(r"I\b", s) is not None
        return f"{message} Also, {s if keep else s[0].lower() + s[1:]}."
    return f"{message} ({s})"


def simulate_long_replies(seed: int, turns: int = 210) -> ProseConversation:
    rng = random.Random(seed)
    prose = reference_prose()
    plans: list[ProseFact] = []
    for kind, families, n in (("plain", USER_FACTS, 6), ("assistant", ASSISTANT_FACTS, 3),
                              ("tool", TOOL_FACTS, 4)):
        for key, statements, question, values in rng.sample(families, n):
            v = rng.choice(values)
            plans.append(ProseFact(kind, key, v, rng.choice(statements).format(v=v),
                                   question, 0))
    by_turn, asks = schedule_facts(rng, plans, turns)
    out: list[ProseTurn] = []
    now = 1_700_000_000.0
    for i in range(turns):
        now += rng.uniform(60, 300)
        if i == int(turns * 0.6):
            now += 3 * 3600
        user = _user(rng, prose)
        reply, _ = _long_reply(rng, prose)
        tools = [_tool(rng) for _ in range(rng.choice([0, 0, 0, 1, 1, 2]))]
        fact = by_turn.get(i)
        if fact is not None and fact.kind == "plain":
            user = _state(rng, fact.statement, user)
        elif fact is not None and fact.kind == "assistant":
            paras = reply.split("\n\n")
            s = fact.statement
            paras.insert(rng.randrange(0, len(paras) + 1), f"{s[0].upper()}{s[1:]}.")
            reply = "\n\n".join(paras)
        elif fact is not None and fact.kind == "tool":
            tools.insert(0, _planted(rng, fact.statement))
        asked = asks.get(i)
        if asked is not None:
            user = asked.question
        after = _long_reply(rng, prose)[0] if tools else ""
        out.append(ProseTurn(index=i, time=now, user=user, reply=reply, tools=tools,
                             after_tools=after, asks=asked))
    return ProseConversation(seed=seed, turns=out, facts=plans)
