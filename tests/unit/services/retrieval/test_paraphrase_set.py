"""The benchmark's paraphrase set holds to its own rule: no question shares a content word
with its fact, and every exact question shares some."""

from __future__ import annotations

import importlib.util
from pathlib import Path

DATA = Path(__file__).resolve().parents[3] / "data" / "retrieval"
CHECKER = DATA / "check_paraphrases.py"


def test_questions_share_no_content_word_with_their_facts() -> None:
    spec = importlib.util.spec_from_file_location("check_paraphrases", CHECKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    entries = module.load()
    assert len(entries) >= 40
    assert module.problems(entries) == []
    # the checker can fail: a question that repeats its fact's word is caught
    bad = [{"fact": "Our boat is named Marigold.", "question": "What is the boat called?",
            "exact": "What is our boat named?"}]
    assert module.problems(bad) == ["0: question shares ['boat'] with its fact"]
