"""litellm's table of model facts read without litellm: the same windows, reply limits and
uncached prices litellm gives, and litellm stays unloaded while the window only shows chats."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from treechat.providers import llm, model_facts

ROOT = Path(__file__).resolve().parents[3]
MODELS = ("openai/gpt-4o", "gpt-4o-mini", "anthropic/claude-sonnet-4-5", "openai/not-a-model")


@pytest.mark.parametrize("model", MODELS)
def test_the_table_agrees_with_litellm(model: str) -> None:
    litellm = llm.litellm_module()
    read, facts = model_facts.lookup(model)
    assert read
    try:
        info = litellm.get_model_info(model)
    except Exception:
        info = None
    if info is None:
        assert facts is None
        return
    assert facts is not None
    for key in ("max_input_tokens", "max_output_tokens", "input_cost_per_token",
                "output_cost_per_token"):
        assert facts.get(key) == info.get(key), key


def test_a_reservation_is_priced_alike_before_and_after_litellm_loads() -> None:
    table = llm._table_cost(model_facts.lookup("anthropic/claude-sonnet-4-5")[1], 12_000, 800)
    llm.litellm_module()
    assert table == llm.reservation_cost("anthropic/claude-sonnet-4-5", 12_000, 800)
    assert not llm._table_cost(None, 10, 10).priced


def test_model_facts_do_not_load_litellm() -> None:
    code = (
        "import sys\n"
        "from treechat.providers import llm\n"
        "print(llm.known_window('openai/gpt-4o'), llm.model_window('openai/unknown'),\n"
        "      llm.reservation_cost('openai/gpt-4o', 1000, 0).priced, 'litellm' in sys.modules)\n"
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    assert out == ["128000", str(llm.FALLBACK_WINDOW), "True", "False"]
