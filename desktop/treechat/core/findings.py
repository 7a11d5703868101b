"""What a condensed record must keep: the findings of a tool result (the lines that say
something its other lines do not: a name, a number, a path, a decision, an error) and what the
user stated about themselves, their project and their decisions. General features of text,
case-insensitive, keyed to no conversation's wording; same input, same output."""

from __future__ import annotations

import re
from dataclasses import dataclass

# A plain word: letters (an apostrophe or hyphen inside), maybe closing punctuation.
_PLAIN = re.compile(r"[a-z][a-z'-]*[a-z]?[,.;:!?)]?|\(?[a-z]+")
_PART = re.compile(r"[a-z]+|\d+")
_DIGIT = re.compile(r"\d")
_PATH = re.compile(r"(?:\b[\w.-]+/)+[\w.-]+|\b\w+\.(?:py|js|ts|rs|go|md|json|toml|ya?ml|txt|c|h)\b")
_SYMBOL = re.compile(r"[{}()\[\];=<>`$|\\]")
_ASSIGN = re.compile(r"^\s*[\w.\"'-]{2,40}\s*(?:=|:)\s*\S")
# Words that mark an outcome in any tool's output (tests, builds, searches, servers).
_SIGNAL = re.compile(
    r"\b(error|errors|fail|failed|failure|failures|exception|traceback|warning|denied|"
    r"refused|not found|missing|timeout|timed out|passed|succeeded|total|note|todo|fixme|"
    r"deprecated|conflict|invalid)\b",
    re.IGNORECASE,
)
_COPULA = re.compile(r"\b(is|are|was|were|will be|lives|goes|runs|uses|means)\b", re.IGNORECASE)
_CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]{2,}\s*[:=]\s*['\"\d\w]")
_VALUE_END = re.compile(
    r"\b(is|are|was|were|to|at|from|:)\s+['\"]?[\w.:+-]+['\"]?[.!]?\s*(\(.*\))?$", re.IGNORECASE)
_LITERAL = re.compile(r"['\"][^'\"\s]{2,40}['\"]|\b[a-z]+-[a-z]+\b")
_SHAPE = re.compile(r"[a-z]+|\d+", re.IGNORECASE)

MAX_FINDING_CHARS = 160


@dataclass(frozen=True, slots=True)
class Finding:
    line: str
    score: float
    index: int


def _shape(line: str) -> str:
    """A line's form with its words and numbers blanked: lines of one form (a test log's
    PASSED rows, a grep's hits) say the same thing many times."""
    return _SHAPE.sub(lambda m: "9" if m.group(0)[0].isdigit() else "w", line)[:40]


def score_lines(text: str) -> list[Finding]:
    """Every candidate line of a tool result, scored for how much it tells that the rest
    does not."""
    lines = [ln.strip() for ln in text.splitlines()]
    cands = [(i, ln) for i, ln in enumerate(lines) if 8 <= len(ln) <= 400]
    if not cands:
        return []
    terms = [frozenset(_PART.findall(ln.lower())) for _, ln in cands]
    # How often each word occurs anywhere in the text, identifiers split into their parts:
    # a line whose words occur nowhere else is about something the rest is not.
    df: dict[str, int] = {}
    for t in _PART.findall(text.lower()):
        df[t] = df.get(t, 0) + 1
    shapes: dict[str, int] = {}
    for _, ln in cands:
        s = _shape(ln)
        shapes[s] = shapes.get(s, 0) + 1
    n = len(cands)
    seen: set[str] = set()
    out: list[Finding] = []
    for (i, ln), ts in zip(cands, terms, strict=True):
        low = ln.lower()
        if low in seen:
            continue
        seen.add(low)
        tokens = low.split()
        words = [w for w in tokens if _PLAIN.fullmatch(w)]
        long_terms = [t for t in ts if len(t) >= 4]
        # Surprise: the share of its terms found on no other line.
        # (a line of one or two words has too little to say to be surprising)
        novel = (sum(1 for t in long_terms if df[t] == 1) / len(long_terms)
                 * min(1.0, len(long_terms) / 3)) if long_terms else 0.0
        prose = len(words) / max(1, len(tokens))
        score = 3.0 * novel + 1.0 * prose
        if len(words) >= 5 and prose >= 0.7:
            score += 0.5  # a sentence among code or data
        if _COPULA.search(ln):
            score += 0.6
        if _ASSIGN.match(ln):
            score += 0.4
        if _CONSTANT.match(ln):
            score += 1.2  # a setting: NAME = 'value'
        if _VALUE_END.search(ln):
            score += 0.8  # a statement that ends on its value: "... is X."
        if _SIGNAL.search(ln):
            score += 1.0
        if _DIGIT.search(ln):
            score += 0.3
        if _LITERAL.search(ln):
            score += 1.0  # a specific value: a quoted literal or a compound name
        if _PATH.search(ln):
            score += 0.2
        symbols = len(_SYMBOL.findall(ln))
        if symbols > max(2, len(ln) // 20):
            score -= 1.0
        common = shapes[_shape(ln)]
        if n >= 8 and common > max(3, n // 10):
            score -= 1.5
        out.append(Finding(ln, score, i))
    return out


def tool_findings(text: str, *, limit: int = 3, min_score: float = 2.2) -> tuple[str, ...]:
    """The best `limit` finding lines of a tool result, in their order, each cut to
    `MAX_FINDING_CHARS`; none that score below `min_score` (nothing stands out)."""
    found = [f for f in score_lines(text) if f.score >= min_score]
    best = sorted(found, key=lambda f: (-f.score, f.index))[:limit]
    return tuple(_cut(f.line) for f in sorted(best, key=lambda f: f.index))


def _cut(line: str) -> str:
    return line if len(line) <= MAX_FINDING_CHARS else line[: MAX_FINDING_CHARS - 1] + "…"


# --- what the user states -------------------------------------------------------------------

_SELF = re.compile(r"\b(i|i'm|i've|i'd|i'll|my|mine|me|we|we're|we've|we'll|our|ours|us)\b",
                   re.IGNORECASE)
_DECIDE = re.compile(
    r"\b(decided|decision|decide|chose|choose|chosen|picked|settled|settle|agreed|going with|"
    r"go with|goes with|will use|we use|switched|moved|named|called|codenamed|from now on|"
    r"instead of|rather than|prefer|favourite|favorite|never|always|must|deadline|budget)\b",
    re.IGNORECASE,
)
_DEFINITE = re.compile(r"^(?:\W*)(the|our|my|this|that|its|their)\b", re.IGNORECASE)
_QUOTED = re.compile(r"\"[^\"]{12,}\"|“[^”]{12,}”")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\s+(?=\()|(?<=\))\s+")
_CODE_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)


def stated_facts(text: str, *, limit: int = 3) -> tuple[str, ...]:
    """Sentences of a user message that state something about the user, their project or a
    decision (first person, naming, choosing, a rule), not questions and not quoted text."""
    prose = _QUOTED.sub(" ", _CODE_FENCE.sub(" ", text))
    found: list[tuple[float, int, str]] = []
    for k, raw in enumerate(_SENTENCE.split(" ".join(prose.split()))):
        s = raw.strip().strip("()").strip()
        words = s.split()
        if not 4 <= len(words) <= 45 or s.endswith(("?", ":")):
            continue
        score = 0.0
        if _SELF.search(s):
            score += 2.0
        if _DECIDE.search(s):
            score += 1.5
        if _COPULA.search(s):
            score += 0.75
            if _DEFINITE.match(s):
                score += 0.75  # "the X is Y", "our X was Y": a statement of how things are
        if _DIGIT.search(s):
            score += 0.5
        if len(words) <= 20:
            score += 0.5
        if len(_SYMBOL.findall(s)) > 2:
            score -= 1.5
        if score >= 2.0:
            found.append((score, k, _cut(s)))
    best = sorted(found, key=lambda f: (-f[0], f[1]))[:limit]
    return tuple(s for _, _, s in sorted(best, key=lambda f: f[1]))
