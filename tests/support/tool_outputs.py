"""A generator of tool-heavy conversations whose tool results are of many kinds: JSON API
responses, tables (pods, query results, processes), service logs, file listings, search
results, configuration files, environment dumps, commit logs, test runs and source reads.
Every name, number and address is drawn from the seed (made-up words, hosts, ids), so no
value repeats across seeds. Tool facts are planted the way real ones occur: the one record
that differs from its siblings, the one error among info lines, one setting among many, the
biggest file, the first hit, the failing test; each asked about once, later, in other words
than the output's. Ordinary results carry their own noise (warnings, other errors, other
outliers), so a fact never stands out merely by being structured. Replies are 300-800 words
of the Language Reference (`long_replies`), user messages short asks and chatter."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from .context_sim import (
    ProseConversation,
    ProseFact,
    ProseTurn,
    ToolCall,
    schedule_facts,
    stdlib_corpus,
)
from .long_replies import USER_FACTS, _long_reply, _state, _user, reference_prose

_ONSET = ("b", "br", "c", "d", "dr", "f", "g", "gl", "h", "k", "l", "m", "n", "p", "pr", "r",
          "s", "st", "t", "tr", "v", "w", "z")
_VOWEL = ("a", "e", "i", "o", "u", "ai", "ou", "ea")
_CODA = ("", "n", "r", "l", "s", "x", "k", "m", "nd", "st")


def _word(rng: random.Random, syllables: int = 2) -> str:
    return "".join(rng.choice(_ONSET) + rng.choice(_VOWEL) + rng.choice(_CODA)
                   for _ in range(syllables))


def _name(rng: random.Random) -> str:
    return f"{_word(rng)}-{rng.choice(('api', 'worker', 'sync', 'gateway', 'cron', 'proxy'))}"


def _host(rng: random.Random) -> str:
    return f"{_word(rng)}-{rng.randint(1, 40)}.{_word(rng, 1)}.internal"


def _person(rng: random.Random) -> str:
    return f"{_word(rng).capitalize()} {_word(rng, 3).capitalize()}"


def _ident(rng: random.Random, prefix: str) -> str:
    return f"{prefix}-{rng.randint(10_000, 99_999)}"


# Each kind makes (result text, fact value, fact key or "") for a result with a planted fact,
# or an ordinary result (value and key empty) when `plant` is false.
Kind = Callable[[random.Random, bool], tuple[str, str, str]]


def _status_json(rng: random.Random, plant: bool) -> tuple[str, str, str]:
    n = rng.randint(6, 18)
    services = [{"name": _name(rng), "status": "healthy", "latency_ms": rng.randint(3, 90),
                 "version": f"{rng.randint(1, 4)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"}
                for _ in range(n)]
    value = key = ""
    if plant:
        k = rng.randrange(n)
        key = rng.choice(("degraded", "unhealthy", "failing"))
        services[k]["status"] = key
        services[k]["latency_ms"] = rng.randint(900, 4000)
        value = services[k]["name"]
    doc = {"checked_at": f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T0{rng.randint(0, 9)}"
           f":{rng.randint(10, 59)}:00Z", "region": _word(rng), "services": services}
    return json.dumps(doc, indent=rng.choice((None, 2))), value, key


def _account_json(rng: random.Random, plant: bool) -> tuple[str, str, str]:
    doc = {"account": {"id": _ident(rng, "acct"), "plan": rng.choice(("team", "pro", "free")),
                       "seats": rng.randint(2, 400), "owner": _person(rng),
                       "billing_email": f"{_word(rng)}@{_word(rng)}.com"},
           "usage": {"requests_30d": rng.randint(10_000, 9_000_000),
                     "storage_gb": round(rng.uniform(0.5, 900), 1)},
           "features": [_word(rng) for _ in range(rng.randint(2, 6))]}
    if plant:
        return json.dumps(doc, indent=2), str(doc["account"]["id"]), "id"  # type: ignore[index]
    return json.dumps(doc, indent=2), "", ""


def _pods_table(rng: random.Random, plant: bool) -> tuple[str, str, str]:
    rows = [("NAME", "READY", "STATUS", "RESTARTS", "AGE")]
    n = rng.randint(8, 30)
    for _ in range(n):
        rows.append((f"{_name(rng)}-{rng.randrange(16**5):05x}", "1/1", "Running",
                     str(rng.choice((0, 0, 0, 1))), f"{rng.randint(1, 30)}d"))
    value = key = ""
    if plant:
        k = rng.randint(1, n)
        key = rng.choice(("CrashLoopBackOff", "OOMKilled", "Error"))
        r = rows[k]
        rows[k] = (r[0], "0/1", key, str(rng.randint(9, 80)), r[4])
        value = r[0]
    elif rng.random() < 0.3:
        k = rng.randint(1, n)
        rows[k] = (rows[k][0], "0/1", "Pending", "0", rows[k][4])
    widths = [max(len(r[c]) for r in rows) + 3 for c in range(5)]
    return "\n".join("".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows), value, key


def _log(rng: random.Random, plant: bool) -> tuple[str, str, str]:
    svc = _name(rng)
    lines = []
    n = rng.randint(30, 160)
    for i in range(n):
        lvl = "WARN" if rng.random() < 0.04 else "INFO"
        msg = rng.choice(("request served", "cache refreshed", "job finished", "heartbeat"))
        lines.append(f"2024-05-{rng.randint(10, 28)}T{i % 24:02d}:{rng.randint(10, 59)}:"
                     f"{rng.randint(10, 59)}Z {lvl} {svc} {msg} path=/{_word(rng, 1)} "
                     f"ms={rng.randint(1, 400)}")
    value = key = ""
    if plant:
        value = _ident(rng, rng.choice(("ORD", "INV", "TX")))
        key = "ERROR"
        reason = rng.choice(("card_declined", "upstream_timeout", "duplicate_key"))
        lines.insert(rng.randrange(n), f"2024-05-{rng.randint(10, 28)}T11:{rng.randint(10, 59)}"
                     f":07Z ERROR {svc} payment failed id={value} reason={reason}")
    elif rng.random() < 0.3:
        lines.insert(rng.randrange(n), f"2024-05-11T03:00:00Z ERROR {svc} retry exhausted "
                     f"id={_ident(rng, 'JOB')}")
    return "\n".join(lines), value, key


def _listing(rng: random.Random, plant: bool) -> tuple[str, str, str]:
    n = rng.randint(6, 25)
    rows = []
    for _ in range(n):
        ext = rng.choice(("py", "md", "json", "csv", "log", "txt", "toml"))
        rows.append([rng.randint(120, 90_000), f"{_word(rng)}.{ext}"])
    value = key = ""
    if plant:
        k = rng.randrange(n)
        ext = rng.choice(("sql.gz", "tar", "parquet"))
        rows[k] = [rng.randint(3_000_000_000, 9_000_000_000), f"{_word(rng)}.{ext}"]
        value, key = rows[k][1], f"{rows[k][0]}"
    total = sum(r[0] for r in rows) // 1024
    out = [f"total {total}"]
    owner = _word(rng, 1)
    for size, name in rows:
        out.append(f"-rw-r--r--  1 {owner}  staff  {size:>10}  May {rng.randint(1, 28):>2}"
                   f" {rng.randint(10, 23)}:{rng.randint(10, 59)} {name}")
    return "\n".join(out), value, key


def _search(rng: random.Random, plant: bool) -> tuple[str, str, str]:
    topic = _word(rng)
    hits = []
    for k in range(rng.randint(4, 9)):
        site = f"{_word(rng)}.{rng.choice(('org', 'io', 'dev', 'com'))}"
        url = f"https://{site}/{_word(rng)}/{_word(rng, 1)}-{rng.randint(10, 999)}"
        title = f"{_word(rng).capitalize()} {topic} {rng.choice(('guide', 'notes', 'FAQ'))}"
        hits.append(f"{k + 1}. {title}\n   {url}\n   {_word(rng).capitalize()} "
                    f"{' '.join(_word(rng, 1) for _ in range(rng.randint(6, 14)))}.")
    value = ""
    if plant:
        value = hits[0].splitlines()[1].strip()
    return "\n".join(hits), value, ""


def _config(rng: random.Random, plant: bool) -> tuple[str, str, str]:
    sections = {}
    for _ in range(rng.randint(3, 6)):
        sec = _word(rng)
        sections[sec] = {f"{_word(rng, 1)}_{_word(rng, 1)}": rng.choice(
            (str(rng.randint(1, 5000)), _word(rng), "true", "false", _host(rng)))
            for _ in range(rng.randint(3, 8))}
    value = key = ""
    if plant:
        sec = rng.choice(list(sections))
        key = f"{rng.choice(('admin', 'metrics', 'replica', 'backup'))}_" \
              f"{rng.choice(('host', 'port', 'bucket'))}"
        value = (_host(rng) if key.endswith("host") else str(rng.randint(1025, 65000))
                 if key.endswith("port") else f"{_word(rng)}-{rng.randint(100, 999)}")
        sections[sec][key] = value
    style = rng.choice(("yaml", "ini"))
    if plant:
        # Looked up: the setting's lines across the deployment's files.
        hits = [f"deploy/{_word(rng)}.conf:{rng.randint(2, 90)}:{key} = {value}"]
        hits += [f"deploy/{_word(rng)}.conf:{rng.randint(2, 90)}:# {key} = {_word(rng)}"
                 for _ in range(rng.randint(0, 2))]
        return "\n".join(hits), value, key
    out = []
    for sec, pairs in sections.items():
        out.append(f"{sec}:" if style == "yaml" else f"[{sec}]")
        for k, v in pairs.items():
            out.append(f"  {k}: {v}" if style == "yaml" else f"{k} = {v}")
    return "\n".join(out), value, key


def _env(rng: random.Random, plant: bool) -> tuple[str, str, str]:
    pairs = [("PATH", "/usr/local/bin:/usr/bin:/bin"), ("HOME", f"/home/{_word(rng)}"),
             ("LANG", "en_US.UTF-8"), ("SHELL", "/bin/zsh")]
    pairs += [(f"{_word(rng, 1).upper()}_{_word(rng, 1).upper()}", _word(rng))
              for _ in range(rng.randint(4, 14))]
    value = key = ""
    if plant:
        value = _host(rng)
        key = "DATABASE_URL"
        pairs.insert(rng.randrange(len(pairs)), (key, f"postgres://app@{value}:5432/main"))
    rng.shuffle(pairs)
    return "\n".join(f"{k}={v}" for k, v in pairs), value, key


def _git_log(rng: random.Random, plant: bool) -> tuple[str, str, str]:
    out = []
    value = key = ""
    n = rng.randint(3, 10)
    at = rng.randrange(n) if plant else -1
    for k in range(n):
        who = _person(rng)
        subject = f"{rng.choice(('Fix', 'Tidy', 'Bump', 'Document'))} {_word(rng)}"
        if k == at:
            key = _word(rng)
            subject = f"Move the session store to {key}"
            value = who
        out.append(f"commit {rng.randrange(16**12):012x}\nAuthor: {who} <{who.split()[0].lower()}"
                   f"@example.com>\nDate:   Mon May {rng.randint(1, 28)} 10:{rng.randint(10, 59)}"
                   f" 2024\n\n    {subject}\n")
    return "\n".join(out), value, key


def _tests(rng: random.Random, plant: bool) -> tuple[str, str, str]:
    n = rng.randint(20, 120)
    rows = [f"tests/test_{_word(rng)}.py::test_{_word(rng)} PASSED" for _ in range(n)]
    value = key = ""
    failed = 0
    if plant:
        value = f"test_{_word(rng)}_{_word(rng, 1)}"
        key = "FAILED"
        rows.insert(rng.randrange(n), f"tests/test_{_word(rng)}.py::{value} FAILED")
        failed = 1
    rows.append(f"==== {failed} failed, {n} passed in {rng.uniform(1, 90):.2f}s ====")
    return "\n".join(rows), value, key


def _source(rng: random.Random, plant: bool) -> tuple[str, str, str]:
    _, source = rng.choice(stdlib_corpus().files)
    size = int(10 ** rng.uniform(2.4, 4.0))
    start = source.rfind("\n", 0, rng.randrange(0, max(1, len(source) - size))) + 1
    return source[start:start + size], "", ""


# kind -> (tool name, args, maker, question about its planted fact)
KINDS: dict[str, tuple[str, Callable[[random.Random], dict[str, object]], Kind, str]] = {
    "status": ("http_get", lambda r: {"url": f"https://{_host(r)}/status"}, _status_json,
               "Which of the services was in trouble in that status check?"),
    "account": ("http_get", lambda r: {"url": f"https://api.{_word(r)}.com/v2/account"},
                _account_json, "What was the account's identifier in the API response?"),
    "pods": ("shell", lambda r: {"cmd": "kubectl get pods"}, _pods_table,
             "Which pod was the broken one?"),
    "log": ("read_log", lambda r: {"path": f"/var/log/{_word(r)}.log"}, _log,
            "Which transaction did the log show going wrong?"),
    "listing": ("shell", lambda r: {"cmd": f"ls -l {_word(r)}/"}, _listing,
                "What was the huge file in that directory?"),
    "search": ("web_search", lambda r: {"query": f"{_word(r)} retries"}, _search,
               "What was the link of the top search hit?"),
    "config": ("grep", lambda r: {"pattern": "_host|_port|_bucket", "path": "deploy"},
               _config, "What value did the deploy files give for the setting we grepped?"),
    "env": ("shell", lambda r: {"cmd": "env"}, _env,
            "Which database machine is the app configured to talk to?"),
    "git": ("shell", lambda r: {"cmd": "git log"}, _git_log,
            "Who wrote the change that moved where sessions are stored?"),
    "tests": ("run_tests", lambda r: {"args": ["-q"]}, _tests,
              "Which test broke in that run?"),
    "source": ("read_file", lambda r: {"path": f"Lib/{_word(r)}.py"}, _source, ""),
}
PLANTED = [k for k, v in KINDS.items() if v[3]]


def _result(rng: random.Random, kind: str, plant: bool) -> tuple[ToolCall, str, str]:
    tool, args, make, _ = KINDS[kind]
    text, value, key = make(rng, plant)
    return ToolCall(tool, args(rng), text), value, key


def simulate_tool_outputs(seed: int, turns: int = 210) -> ProseConversation:
    """A conversation of `turns` turns, most with one to three tool runs of varied kinds;
    six tool facts and four user facts, each asked once, later."""
    rng = random.Random(seed)
    prose = reference_prose()
    plans: list[ProseFact] = []
    for key, statements, question, values in rng.sample(USER_FACTS, 4):
        v = rng.choice(values)
        plans.append(ProseFact("plain", key, v, rng.choice(statements).format(v=v), question, 0))
    tool_kinds = rng.sample(PLANTED, 6)
    for kind in tool_kinds:
        plans.append(ProseFact("tool", kind, "", "", KINDS[kind][3], 0))
    by_turn, asks = schedule_facts(rng, plans, turns)
    out: list[ProseTurn] = []
    now = 1_700_000_000.0
    kinds = list(KINDS)
    for i in range(turns):
        now += rng.uniform(60, 300)
        if i == int(turns * 0.6):
            now += 3 * 3600
        user = _user(rng, prose)
        reply, _ = _long_reply(rng, prose)
        reply = " ".join(reply.split()[: rng.randint(120, 400)])
        tools = [_result(rng, rng.choice(kinds), False)[0]
                 for _ in range(rng.choice((0, 1, 1, 2, 2, 3)))]
        fact = by_turn.get(i)
        if fact is not None and fact.kind == "plain":
            user = _state(rng, fact.statement, user)
        elif fact is not None and fact.kind == "tool":
            call, value, key = _result(rng, fact.key, True)
            fact.value, fact.key = value, key
            fact.statement = f"{fact.key} {value}"
            tools.insert(rng.randint(0, len(tools)), call)
        asked = asks.get(i)
        if asked is not None:
            user = asked.question
        after = " ".join(_long_reply(rng, prose)[0].split()[:200]) if tools else ""
        out.append(ProseTurn(index=i, time=now, user=user, reply=reply, tools=tools,
                             after_tools=after, asks=asked))
    return ProseConversation(seed=seed, turns=out, facts=plans)
