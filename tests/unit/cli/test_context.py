"""`treechat context SESSION`: what the chat's next request would carry, as the window's ring
shows it: the used share of the model's window, its breakdown, and another model's window
with --model."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli_runner import one_line_error, seed_chats, treechat


def test_the_occupancy_record_and_its_breakdown(tmp_path: Path) -> None:
    (chat,) = seed_chats(tmp_path, "first chat")
    done = treechat(tmp_path, "context", chat, "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["window"] == 128_000 and record["head"] == f"{chat}-a"
    parts = record["breakdown"]
    assert parts["messages"] > 0 and parts["free"] == record["window"] - record["total_used"]
    assert sum(v for k, v in parts.items() if k != "free") == record["total_used"]
    table = treechat(tmp_path, "context", "first chat").stdout.splitlines()
    assert table[0].startswith(f"{record['total_used']:,} / 128,000 tokens (")
    assert any(line.split()[:2] == ["messages", str(parts["messages"])] for line in table)


def test_another_models_window_and_an_unknown_chat(tmp_path: Path) -> None:
    (chat,) = seed_chats(tmp_path, "first chat")
    small = json.loads(treechat(tmp_path, "context", chat, "--model",
                                "local/smollm2-135m-instruct", "--json").stdout)
    assert small["window"] == 8192
    assert "no chat matches 'nope'" in one_line_error(treechat(tmp_path, "context", "nope"))
