"""`treechat ledger` and `treechat usage` run as a user would: spend by model, day and chat
from the same usage rows, in the window's words ("free", "unpriced", "$0.0125")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.e2e.test_cli import treechat
from tests.support.cli_runner import new_chat, seed_chats
from tests.support.loopback_server import LoopbackProvider


def test_usage_by_model_and_by_session(
    tmp_path: Path, loopback: LoopbackProvider
) -> None:
    first = new_chat(tmp_path, loopback, "first chat")
    new_chat(tmp_path, loopback, "second chat")
    by_session = json.loads(treechat(tmp_path, "usage", "--by", "session", "--json").stdout)
    assert {r["title"] for r in by_session} == {"first chat", "second chat"}
    assert all(r["requests"] == 1 and r["unpriced_requests"] == 1 for r in by_session)
    assert first in {r["session"] for r in by_session}
    table = treechat(tmp_path, "usage", "--by", "model").stdout
    assert "openai/loopback-model" in table and "no known price" in table
    assert "unpriced" in table and "$0.0000" not in table and "*" not in table
    assert len(json.loads(treechat(tmp_path, "usage", "--json").stdout)) >= 1


def test_ledger_and_usage_print_the_same_figures(tmp_path: Path) -> None:
    assert treechat(tmp_path, "ledger").stdout.strip() == "No requests recorded yet."
    seed_chats(tmp_path, "first chat", "second chat")
    (by_model,) = json.loads(treechat(tmp_path, "ledger", "--json").stdout)
    (spend,) = json.loads(treechat(tmp_path, "usage", "--by", "model", "--json").stdout)
    assert by_model == {"model": "openai/gpt-4o", "requests": 2, "input_tokens": 2000,
                        "cache_read": 800, "cache_write": 0, "output_tokens": 100,
                        "cost_usd": 0.025, "unpriced_requests": 0, "free_requests": 0}
    assert spend == by_model
    table = treechat(tmp_path, "ledger").stdout
    assert "$0.03" in table and "*" not in table and "no known price" not in table
    per_chat = treechat(tmp_path, "ledger", "first chat", "--json").stdout
    assert json.loads(per_chat)[0]["requests"] == 1


@pytest.mark.parametrize("command", [("ledger",), ("usage", "--by", "model")])
def test_a_local_model_is_free_and_an_unknown_price_is_unpriced(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    seed_chats(tmp_path, "on this computer", model="ollama/llama3.2", priced=False)
    table = treechat(tmp_path, *command).stdout
    assert "free" in table and "unpriced" not in table and "$0" not in table, table
    other = tmp_path / "hosted"
    seed_chats(other, "somewhere else", model="openrouter/mystery-model", priced=False)
    table = treechat(other, *command).stdout
    assert "unpriced" in table and "no known price" in table and "$0" not in table, table


def test_the_total_says_what_the_rows_say(tmp_path: Path) -> None:
    seed_chats(tmp_path, "priced one", "priced two")
    table = treechat(tmp_path, "usage", "--by", "session").stdout
    total = next(line for line in table.splitlines() if line.startswith("total"))
    assert total.split()[1] == "2" and total.endswith("$0.03"), table
    assert sum(line.rstrip().endswith(" $0.01") for line in table.splitlines()) == 2
