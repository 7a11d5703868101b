"""The facts of a tool result, read from its structure: a JSON document's leaves under their
keys, a table's rows under their header, `key: value` and `key=value` pairs, log lines that
report a failure, and otherwise the lines that stand out from the rest (`findings`). Each fact
is one line that keeps its label beside its value, so it still says what it is once the
result it came from is folded. General features of data, keyed to no tool's wording; same
input, same output."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .findings import score_lines

MAX_FACT_CHARS = 160
# A result larger than this is read for facts in its first part only (the scan is linear,
# but a fact line past it could not outrank the ones before it by much).
SCAN_CHARS = 200_000

# A value that names or identifies something: it has a digit, an inner separator
# (host-name, file.ext, a/b, user@host, v1:2) or mixed case, and no spaces.
_IDENTIFIER = re.compile(r"^(?=.*[\d\-_./:@#]|.*[a-z][A-Z])[\w\-./:@#+~%]{2,80}$")
_NUMBER = re.compile(r"^[-+]?\d[\d,_]*(\.\d+)?\s*[%a-zA-Z]{0,4}$")
_WORDY = re.compile(r"^[A-Za-z][\w\-' ]{1,60}$")
_PAIR = re.compile(r"^\s*(?:[-*]\s+)?([A-Za-z_][\w .\-/]{0,38}?)\s*(?::\s|=|=>)\s*(\S.{0,200})$")
_URL = re.compile(r"\bhttps?://\S+")
_LOGFMT = re.compile(r"\b([A-Za-z_][\w.\-]{0,30})=(\"[^\"]{1,80}\"|[^\s,;]{1,80})")
_SEVERE = re.compile(
    r"\b(error|errors|fatal|critical|panic|exception|traceback|failed|failure|fail|denied|"
    r"refused|timeout|timed out|unreachable|not found|missing|invalid|conflict|warn|warning)\b",
    re.IGNORECASE,
)
_CODE = re.compile(r"[(){}\[\];]|\b(def|class|return|import|function|var|let|const)\b|^\s*#")
_CELL_SPLIT = re.compile(r"\s*\|\s*|\t+|\s{2,}")
_PARTS = re.compile(r"[a-z]+|\d+")
_STAMP = re.compile(r"^\W*\d{2,4}[-/:.]\d{1,2}[-/:.T ]")
_GREP_HIT = re.compile(r"^[\w./\-]+:\d+:")  # a search hit's file:line: before the line
_WARN_ONLY = re.compile(r"\bwarn(ing)?\b", re.IGNORECASE)
_NORM = re.compile(r"[\s:=|,]+")
_RULE_LINE = re.compile(r"^[\s|:+\-=]+$")


# What a tool result found: two facts, and up to four while the next one scores this share
# of the best (a clear finding is given with one runner-up; among several of the same
# strength, all of them, since which one matters is not knowable from the result alone).
MAX_RESULT_FACTS = 4
NEAR_BEST_FACT = 0.8


def result_facts(text: str) -> tuple[str, ...]:
    """A tool result's findings, strongest first: two to four lines, by how far the
    strongest stands out from the rest."""
    return tool_facts(text, limit=MAX_RESULT_FACTS, ranked=True, at_least=2,
                      near_best=NEAR_BEST_FACT)


@dataclass(frozen=True, slots=True)
class Fact:
    line: str
    score: float
    index: int  # where it occurs: facts are given back in the result's own order


def tool_facts(text: str, *, budget_chars: int = 420, limit: int = 4,
               min_score: float = 3.0, ranked: bool = False,
               at_least: int = 0, near_best: float = 0.0) -> tuple[str, ...]:
    """The strongest facts of a tool result, at most `limit` lines and `budget_chars`
    characters together, in the order the result has them (`ranked`: strongest first);
    none below `min_score`. Past the first `at_least`, a fact is kept only while it scores
    `near_best` of the best one or more: one that stands far out is given alone, a few of
    the same strength are given together (which of them matters is not knowable here)."""
    text = text[:SCAN_CHARS].strip()
    if not text:
        return ()
    lines = [_cut(ln) for ln in text.splitlines() if ln.strip()]
    if (len(lines) <= 3 and sum(map(len, lines)) <= min(budget_chars, 300)
            and _json_document(text) is None):
        return tuple(lines)  # a short result is its own findings
    facts = _candidates(text)
    best: list[Fact] = []
    seen: set[str] = set()
    used = 0
    for f in sorted(facts, key=lambda f: (-f.score, f.index)):
        if f.score < min_score or len(best) >= limit:
            break
        if best and len(best) >= at_least and f.score < near_best * best[0].score:
            break
        key = " ".join(_NORM.split(f.line.lower())).strip()
        if key in seen or any(key in s for s in seen):
            continue
        if used + len(f.line) > budget_chars:
            continue
        seen.add(key)
        best.append(f)
        used += len(f.line) + 1
    return tuple(f.line for f in (best if ranked else sorted(best, key=lambda f: f.index)))


def _candidates(text: str) -> list[Fact]:
    doc = _json_document(text)
    if doc is not None:
        return list(_json_facts(doc))
    lines = text.splitlines()
    out: list[Fact] = []
    filled = [ln for ln in lines if ln.strip()]
    if sum(1 for ln in filled if _CODE.search(ln)) > 0.3 * len(filled):
        # Source code: its assignments and columns are code, not data; what stands out in
        # it is a comment, a docstring line or a setting, which `findings` scores.
        return [Fact(_cut(f.line), f.score - 1.0, f.index) for f in score_lines(text)]
    tables = list(_tables(lines))
    in_table = {i for start, rows in tables for i in range(start, start + len(rows))}
    for start, rows in tables:
        out.extend(_table_facts(start, rows, lines))
    out.extend(_pair_facts(lines, in_table))
    out.extend(_log_facts(lines, in_table))
    out.extend(_link_facts(lines, in_table))
    # What the structure does not cover (prose, code): the lines that stand out.
    for f in score_lines("\n".join("" if i in in_table else ln for i, ln in enumerate(lines))):
        out.append(Fact(_cut(f.line), f.score - 1.2, f.index))
    return out


def _cut(line: str) -> str:
    line = " ".join(line.split())
    return line if len(line) <= MAX_FACT_CHARS else line[: MAX_FACT_CHARS - 1] + "…"


def _value_weight(value: str) -> float:
    """How much a value tells: an identifier, a number or a short name more than prose."""
    v = value.strip().strip("\"'")
    if not v:
        return -2.0
    if v.lower() in ("true", "false", "null", "none", "yes", "no", "-", "n/a", "0"):
        return 0.3
    if _IDENTIFIER.match(v):
        return 2.2
    if _NUMBER.match(v):
        return 1.8
    if _WORDY.match(v) and len(v.split()) <= 4:
        return 1.6
    if len(v) > 120:
        return 0.2
    return 0.9


def _info(value: str, df: Counter[str]) -> float:
    """What a value says that the rest of the result does not: its parts (words, numbers)
    found nowhere else in it."""
    parts = {p for p in _PARTS.findall(value.lower()) if len(p) >= 2}
    return min(1.2, 0.2 * sum(1 for p in parts if df[p] <= 1))


def _part_counts(text: str) -> Counter[str]:
    return Counter(_PARTS.findall(text.lower()))


# --- JSON -------------------------------------------------------------------------------


def _json_document(text: str) -> Any:
    if text[0] not in "[{":
        return None
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict | list) else None


def _leaves(value: Any, path: str, out: list[tuple[str, str, str]]) -> None:
    """(path, last key, value) for each scalar; a list element is named by its first short
    string field (its name or id) when it has one, by its index otherwise."""
    if isinstance(value, dict):
        for k, v in value.items():
            _leaves(v, f"{path}.{k}" if path else str(k), out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            label = str(i)
            if isinstance(v, dict):
                name = next((s for s in v.values() if isinstance(s, str) and 0 < len(s) <= 40),
                            None)
                if name is not None:
                    label = name
            _leaves(v, f"{path}[{label}]", out)
            if label != str(i):
                # The element's name is already in every path below it.
                out[:] = [x for x in out if not (x[0].startswith(f"{path}[{label}].")
                                                 and x[2] == label)]
    else:
        key = path.rsplit(".", 1)[-1].split("[", 1)[0]
        out.append((path, key, "null" if value is None else
                    json.dumps(value) if isinstance(value, bool) else str(value)))


def _json_facts(doc: Any) -> Iterator[Fact]:
    leaves: list[tuple[str, str, str]] = []
    _leaves(doc, "", leaves)
    values = Counter(v for _, _, v in leaves)
    df = _part_counts(" ".join(v for _, _, v in leaves))
    by_key: dict[str, Counter[str]] = {}
    # The fields of each list element (a record), so a fact about one of them is said with
    # its record: the odd status beside the name and the rest of its row.
    records: dict[str, list[str]] = {}
    for path, k, v in leaves:
        by_key.setdefault(k, Counter())[v] += 1
        head, _, last = path.rpartition(".")
        if head.endswith("]"):
            records.setdefault(head, []).append(f"{last}={v}")
    for i, (path, key, value) in enumerate(leaves):
        score = 1.5 + _value_weight(value) + _info(value, df)
        if values[value] == 1:
            score += 0.8  # said once: specific to this place
        seen = by_key[key]
        if len(seen) > 1 and sum(seen.values()) >= 3:
            mode, n = seen.most_common(1)[0]
            if seen[value] == 1 and n >= 2 and value != mode and len(seen) <= sum(
                    seen.values()) // 2:
                score += 2.0  # the one element that differs from its siblings
            elif seen[value] > 1:
                score -= 1.0
        if _SEVERE.search(key) or _SEVERE.search(value[:80]):
            score += 1.0
        score -= 0.25 * path.count(".") + 0.01 * i
        head = path.rpartition(".")[0]
        if head in records:
            yield Fact(_cut(f"{head}: {', '.join(records[head])}"), score, i)
        else:
            yield Fact(_cut(f"{path}: {value}"), score, i)


# --- tables -----------------------------------------------------------------------------


def _cells(line: str) -> list[str]:
    return [c.strip() for c in _CELL_SPLIT.split(line.strip().strip("|")) if c.strip()]


def _words(line: str) -> list[str]:
    """A line's cells when its columns are one space apart; none for a log line (led by a
    date or time: a log's lines are events, not rows)."""
    if "|" in line or "\t" in line or _STAMP.match(line):
        return []
    return line.split()


def _tables(lines: list[str]) -> Iterator[tuple[int, list[list[str]]]]:
    """Runs of three or more lines split into the same number (2+) of cells: (first line,
    rows), the header first when the run has one; rule lines (---, +--+) left out."""
    taken: set[int] = set()
    # Columns a single space apart (a long listing, `ps`) where whole lines agree, then
    # columns two spaces, a tab or a bar apart.
    for start, rows in _runs(lines, _words):
        if len(rows[0]) >= 3 and len(rows) >= 5:
            taken.update(range(start, start + len(rows)))
            yield start, rows
    for start, rows in _runs(lines, _cells):
        if not taken & set(range(start, start + len(rows))):
            yield start, rows


def _runs(lines: list[str], split: Any) -> Iterator[tuple[int, list[list[str]]]]:
    i = 0
    n = len(lines)
    while i < n:
        cells = split(lines[i])
        if len(cells) < 2 or _CODE.search(lines[i]):
            i += 1
            continue
        rows = [cells]
        j = i + 1
        while j < n:
            if _RULE_LINE.match(lines[j]) and lines[j].strip():
                rows.append([])
                j += 1
                continue
            c = split(lines[j])
            if len(c) != len(cells) or _CODE.search(lines[j]):
                break
            rows.append(c)
            j += 1
        if sum(1 for r in rows if r) >= 3:
            yield i, rows
        i = max(j, i + 1)


def _is_header(cells: list[str]) -> bool:
    return all(not any(ch.isdigit() for ch in c) and len(c) <= 30 for c in cells)


def _table_facts(start: int, rows: list[list[str]], lines: list[str]) -> Iterator[Fact]:
    header = rows[0] if _is_header(rows[0]) else None
    body = [(k, r) for k, r in enumerate(rows) if r and (header is None or k > 0)]
    if not body:
        return
    width = len(body[0][1])
    columns = [Counter(r[c] for _, r in body) for c in range(width)]
    numeric = [all(_NUMBER.match(r[c]) for _, r in body) for c in range(width)]
    peak = [max((_num(r[c]) for _, r in body), default=0.0) if numeric[c] else 0.0
            for c in range(width)]
    middle = [sorted(_num(r[c]) for _, r in body)[len(body) // 2] if numeric[c] else 0.0
              for c in range(width)]
    for rank, (k, row) in enumerate(body):
        score = 1.6 + 0.4 * max(_value_weight(c) for c in row)
        for c, cell in enumerate(row):
            col = columns[c]
            total = sum(col.values())
            mode, n = col.most_common(1)[0]
            if col[cell] == 1 and n >= 3 and cell != mode and n >= 0.6 * total:
                score += 2.2  # the row that differs where the others agree
            if numeric[c] and len(body) >= 3 and _num(cell) == peak[c] and col[cell] == 1:
                score += 0.6
                if peak[c] >= 10 * max(1.0, middle[c]):
                    score += 2.0  # far above the rest: the big one
            if _SEVERE.search(cell):
                score += 1.0 if col[cell] <= max(1, total // 4) else 0.0
        if rank == 0:
            score += 0.8  # the first row: a search's best hit, a listing's head
        score -= min(1.5, 0.05 * rank)
        if header is not None:
            line = ", ".join(f"{h}: {v}" for h, v in zip(header, row, strict=False))
        else:
            line = lines[start + k]
        yield Fact(_cut(line), score, start + k)


def _num(cell: str) -> float:
    m = re.match(r"[-+]?\d[\d,_]*(\.\d+)?", cell.strip())
    if m is None:
        return 0.0
    try:
        return float(m.group(0).replace(",", "").replace("_", ""))
    except ValueError:
        return 0.0


# --- pairs and logs ---------------------------------------------------------------------


def _pair_facts(lines: list[str], skip: set[int]) -> Iterator[Fact]:
    pairs: list[tuple[int, str, str, bool]] = []
    for i, ln in enumerate(lines):
        if i in skip or len(ln) > 240:
            continue
        m = _PAIR.match(_GREP_HIT.sub("", ln))
        if m is None:
            continue
        key, value = m.group(1).strip(), m.group(2).strip()
        if len(key.split()) > 4 or _CODE.search(value) or value.endswith((",", "{", "[")):
            continue
        pairs.append((i, key, value, _GREP_HIT.match(ln) is not None))
    if not pairs:
        return
    counts = Counter(v for _, _, v, _ in pairs)
    df = _part_counts(" ".join(v for _, _, v, _ in pairs))
    for i, key, value, hit in pairs:
        score = 1.6 + _value_weight(value) + _info(value, df)
        if counts[value] == 1:
            score += 0.6
        if key.isupper() or "_" in key or "-" in key or "." in key:
            score += 0.3  # a setting's name
        if _SEVERE.search(key) or _SEVERE.search(value):
            score += 0.8
        yield Fact(_cut(lines[i] if hit else f"{key}: {value}"), score, i)


def _log_facts(lines: list[str], skip: set[int]) -> Iterator[Fact]:
    """Log lines that report a failure, rarer ones first (one error among hundreds of info
    lines says more than the hundredth), with their key=value fields."""
    severe = [i for i, ln in enumerate(lines) if i not in skip and _SEVERE.search(ln)]
    if not severe:
        return
    share = len(severe) / max(1, sum(1 for ln in lines if ln.strip()))
    for i in severe:
        ln = lines[i]
        score = 3.2 - 2.0 * share
        if _WARN_ONLY.search(ln) and len(_SEVERE.findall(ln)) == 1:
            score -= 0.8  # a warning says less than a failure
        fields = _LOGFMT.findall(ln)
        score += min(1.0, 0.35 * len(fields))
        if re.search(r"\d", ln):
            score += 0.3
        yield Fact(_cut(ln), score, i)


def _link_facts(lines: list[str], skip: set[int]) -> Iterator[Fact]:
    """Lines that give an address (a search's hits, a listing of pages): the first ones
    first, as a search ranks them."""
    rank = 0
    for i, ln in enumerate(lines):
        if i in skip or _URL.search(ln) is None:
            continue
        yield Fact(_cut(ln), 3.6 - 0.4 * rank, i)
        rank += 1
