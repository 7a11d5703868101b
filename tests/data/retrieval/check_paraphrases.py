"""Checks the paraphrase set: every question shares no content word with its fact (words
compared by their first five letters, so "moored" and "moor" are one word; function words
left out), and every exact question shares at least two. Run: python check_paraphrases.py"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_FUNCTION_WORDS_TEXT = """a an and are as at be been but by can could did do does for from
had has have he her his how i if in into is it its me my no not of on or our she so than that
the their them then there these they this to up us was we were what when where which who whom
why will with would you your again also about please tell remind say said now each every
whenever whose after before until since while last next new old get got go goes going make
one two three any some all many much most more less other another same such own right
"""
FUNCTION_WORDS = frozenset(_FUNCTION_WORDS_TEXT.split())


def content(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {w[:5] for w in words if w not in FUNCTION_WORDS and len(w) > 1}


def problems(entries: list[dict[str, str]]) -> list[str]:
    out = []
    for n, e in enumerate(entries):
        shared = content(e["fact"]) & content(e["question"])
        if shared:
            out.append(f"{n}: question shares {sorted(shared)} with its fact")
        if len(content(e["fact"]) & content(e["exact"])) < 2:
            out.append(f"{n}: exact question shares fewer than two words with its fact")
    return out


SETS = ("paraphrases.json", "heldout.json")


def load(name: str = "paraphrases.json") -> list[dict[str, str]]:
    return list(json.loads((Path(__file__).parent / name).read_text()))


if __name__ == "__main__":
    bad = 0
    for name in SETS:
        found = problems(load(name))
        bad += len(found)
        print("\n".join(f"{name} {f}" for f in found) or f"ok: {name}, {len(load(name))} facts")
    sys.exit(1 if bad else 0)
