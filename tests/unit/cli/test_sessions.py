"""`treechat sessions` and `treechat session show|set` run as a user would: the real entry
point in a subprocess, a real store, and the loopback provider receiving what the chat's
settings say."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_cli import treechat
from tests.support.cli_runner import new_chat, seed_chats
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.store.database import Store, default_store_path


def test_session_set_then_show_and_the_next_request_carries_it(
    tmp_path: Path, loopback: LoopbackProvider
) -> None:
    sid = new_chat(tmp_path, loopback)
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Answer like a ship's captain.\nKeep it short.", encoding="utf-8")
    out = treechat(tmp_path, "session", "set", sid[:8], "--system-prompt-file", str(prompt),
                   "--temperature", "0.25", "--max-tokens", "300", "--reasoning-effort", "high")
    assert "revision 1" in out.stdout and "cached prefix" in out.stdout
    shown = json.loads(treechat(tmp_path, "session", "show", sid, "--json").stdout)
    assert shown["instructions"] == "Answer like a ship's captain.\nKeep it short."
    assert shown["parameters"] == {"temperature": 0.25, "max_tokens": 300,
                                   "reasoning_effort": "high"}
    loopback.queue(Reply(text="Aye."))
    treechat(tmp_path, "send", sid, "next", "--model", "openai/loopback-model",
             "--api-base", loopback.openai_base)
    body = loopback.requests[-1].body
    assert body["messages"][0]["content"].endswith("Answer like a ship's captain.\nKeep it short.")
    assert body["temperature"] == 0.25 and body["max_tokens"] == 300
    assert "reasoning_effort" not in body  # this model takes none
    treechat(tmp_path, "session", "set", sid, "--temperature", "default")
    shown = json.loads(treechat(tmp_path, "session", "show", sid, "--json").stdout)
    assert "temperature" not in shown["parameters"] and len(shown["history"]) == 2


def test_session_set_refuses_bad_values_and_changes_nothing(
    tmp_path: Path, loopback: LoopbackProvider
) -> None:
    sid = new_chat(tmp_path, loopback)
    bad = treechat(tmp_path, "session", "set", sid, "--temperature", "9", check=False)
    assert bad.returncode == 2 and "temperature must be between 0 and 2" in bad.stderr
    bad = treechat(tmp_path, "session", "set", sid, "--max-tokens", "lots", check=False)
    assert bad.returncode == 2 and "not a whole number" in bad.stderr
    none = treechat(tmp_path, "session", "set", sid, check=False)
    assert none.returncode == 2 and "nothing to set" in none.stderr
    shown = json.loads(treechat(tmp_path, "session", "show", sid, "--json").stdout)
    assert shown["revision"] == 0


def test_sessions_lists_the_chats_newest_first_and_all_shows_deleted_ones(
    tmp_path: Path,
) -> None:
    assert treechat(tmp_path, "sessions").stdout.strip() == "No chats yet."
    older, newer = seed_chats(tmp_path, "older chat", "newer chat")
    listed = json.loads(treechat(tmp_path, "sessions", "--json").stdout)
    assert [s["id"] for s in listed] == [newer, older]
    assert all(s["nodes"] == 2 and not s["hidden"] for s in listed)
    table = treechat(tmp_path, "sessions").stdout.splitlines()
    assert table[0].startswith(newer[:12]) and table[0].endswith("2 nodes  newer chat")
    renamed = treechat(tmp_path, "session", "set", older, "--title", "deleted chat")
    assert renamed.stdout.strip() == "Renamed to deleted chat"
    with Store.open(default_store_path(tmp_path)) as store:  # deleted in the window
        store.call(lambda r: r.update_session(older, hidden=True))
    assert "deleted chat" not in treechat(tmp_path, "sessions").stdout
    every = json.loads(treechat(tmp_path, "sessions", "--all", "--json").stdout)
    assert {(s["title"], s["hidden"]) for s in every} == {("newer chat", False),
                                                          ("deleted chat", True)}
