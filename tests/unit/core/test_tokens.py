"""Token counting: counts match tiktoken for CJK and code (no fixed ratio), the cache
serves repeated text, framing is counted, character budgets are calibrated on the text,
and a machine without network still counts."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from treechat.core.tokens import (
    MESSAGE_FRAMING_TOKENS,
    REPLY_PRIMING_TOKENS,
    CachedCounter,
    chars_for_tokens,
    cut_head_tail,
    truncate_to_tokens,
)
from treechat.providers.tokenizer import (
    CachedTiktokenCounter,
    TiktokenCounter,
    counter_for,
    encoding_for_model,
)

CJK = (
    "混合精度训练可以显著减少显存占用。"
    "日本語の文章も正しく数える必要があります。"
    "한국어 문장도 마찬가지입니다。"
)
CODE = textwrap.dedent(
    """\
    def compute_total(items: list[Item], period: str | None = None) -> Decimal:
        total = sum((i.amount for i in items if i.period == period), Decimal("0"))
        return total.quantize(Decimal("0.01"))  # {"k": [1, 2, 3]} && x->y != z
    """
)


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
@pytest.mark.parametrize("text", [CJK, CODE, "plain English prose, nothing special."])
def test_counts_match_tiktoken(encoding: str, text: str) -> None:
    ours = TiktokenCounter(encoding)
    reference = tiktoken.get_encoding(encoding)
    assert ours.count(text) == len(reference.encode_ordinary(text))


def test_cjk_and_code_are_not_counted_by_a_fixed_ratio() -> None:
    counter = TiktokenCounter("o200k_base")
    cjk_ratio = len(CJK) / counter.count(CJK)
    code_ratio = len(CODE) / counter.count(CODE)
    # A 4-chars-per-token guess would be badly wrong for both.
    assert cjk_ratio < 2.5
    assert abs(code_ratio - cjk_ratio) > 0.5


def test_special_token_text_is_counted_not_rejected() -> None:
    counter = TiktokenCounter()
    assert counter.count("before <|endoftext|> after") > 3


def test_encoding_per_model() -> None:
    assert encoding_for_model("openai/gpt-4o-mini") == "o200k_base"
    assert encoding_for_model("gpt-4-turbo") == "cl100k_base"
    assert encoding_for_model("gpt-3.5-turbo") == "cl100k_base"
    assert encoding_for_model("anthropic/claude-sonnet-4-5") == "o200k_base"
    assert counter_for("gpt-4o") is counter_for("openai/gpt-4.1")


def test_cache_serves_repeated_text_by_content() -> None:
    calls: list[str] = []

    def count(text: str) -> int:
        calls.append(text)
        return len(text.split())

    counter = CachedCounter(count, maxsize=4)
    long_text = "word " * 500
    assert counter.count(long_text) == 500
    assert counter.count("word " * 500) == 500  # an equal string, another object
    assert len(calls) == 1 and counter.hits == 1
    for i in range(6):
        counter.count(f"evict {i}")
    counter.count(long_text)
    assert len(calls) == 8  # bounded: the oldest entry was evicted


def test_count_messages_adds_framing_and_tool_calls() -> None:
    counter = CachedTiktokenCounter()
    msgs = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "read_file", "arguments": "{\"path\": \"a.py\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "print(1)"},
    ]
    text_tokens = (counter.count("hello") + counter.count("read_file")
                   + counter.count("{\"path\": \"a.py\"}") + counter.count("print(1)"))
    expected = text_tokens + 3 * MESSAGE_FRAMING_TOKENS + 3 + REPLY_PRIMING_TOKENS
    assert counter.count_messages(msgs) == expected
    assert counter.count_messages([]) == 0


@settings(max_examples=40, deadline=None)
@given(st.text(min_size=1, max_size=600), st.integers(min_value=1, max_value=120))
def test_chars_for_tokens_always_fits(text: str, tokens: int) -> None:
    counter = counter_for("gpt-4o")
    n = chars_for_tokens(text, tokens, counter)
    assert 0 <= n <= len(text)
    assert counter.count(text[:n]) <= tokens
    if counter.count(text) <= tokens:
        assert n == len(text)


@pytest.mark.parametrize("text", [CJK * 40, CODE * 30, "x" * 5000])
def test_chars_for_tokens_is_calibrated_per_text(text: str) -> None:
    counter = counter_for("gpt-4o")
    n = chars_for_tokens(text, 200, counter)
    used = counter.count(text[:n])
    assert 190 <= used <= 200


def test_truncate_keeps_head_and_tail_within_budget() -> None:
    counter = counter_for("gpt-4o")
    text = "HEAD-MARK " + ("filler text " * 3000) + " TAIL-MARK"
    out = truncate_to_tokens(text, 300, counter)
    assert counter.count(out) <= 300
    assert out.startswith("HEAD-MARK") and out.endswith("TAIL-MARK")
    assert "omitted" in out


def test_cut_head_tail_caps_characters() -> None:
    text = "start " + "y" * 10_000 + " end"
    out = cut_head_tail(text, 4000)
    assert len(out) <= 4000
    assert out.startswith("start") and out.endswith("end")
    assert cut_head_tail("short", 4000) == "short"


def test_counts_offline_on_a_fresh_machine(tmp_path: Path) -> None:
    """No TIKTOKEN_CACHE_DIR, no network: counting still works from litellm's bundled
    tables, and litellm itself is never imported."""
    script = textwrap.dedent(
        """
        import socket, sys
        def refuse(*a, **k):
            raise OSError("network disabled for this test")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        from treechat.providers.tokenizer import counter_for
        c = counter_for("gpt-4o")
        assert c.count("hello world") == 2, c.count("hello world")
        assert counter_for("gpt-4").count("hello world") == 2
        assert "litellm" not in sys.modules
        print("ok")
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "TIKTOKEN_CACHE_DIR"}
    env["HOME"] = str(tmp_path)  # no user-level cache either
    env["TMPDIR"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                         text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_an_estimate_without_tables_is_four_bytes_a_token() -> None:
    from treechat.core.tokens import estimated_tokens

    assert estimated_tokens("") == 0
    assert estimated_tokens("abcd") == 1 and estimated_tokens("abcde") == 2
    assert estimated_tokens("日本語の文") == 4  # 15 bytes of UTF-8
