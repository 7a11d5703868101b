"""`treechat session`, `treechat presets`, `treechat usage` and `treechat export --all-sessions`
run as a user would: the real entry point in a subprocess, a real store, and the loopback
provider receiving what the chat's settings say."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_cli import treechat
from tests.support.loopback_server import LoopbackProvider, Reply


def new_chat(tmp_path: Path, loopback: LoopbackProvider, text: str = "hello") -> str:
    loopback.queue(Reply(text="first reply"))
    treechat(tmp_path, "send", "--new", text, "--model", "openai/loopback-model",
             "--api-base", loopback.openai_base)
    (session,) = [s for s in json.loads(treechat(tmp_path, "sessions", "--json").stdout)
                  if s["title"] == text]
    return str(session["id"])


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


def test_presets_list_export_import(tmp_path: Path) -> None:
    listed = json.loads(treechat(tmp_path, "presets", "list", "--json").stdout)
    assert listed and all(p["builtin"] for p in listed)
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps([{"name": "Haiku poet", "system_prompt": "Write haiku.",
                                 "parameters": {"temperature": 0.9}}]), encoding="utf-8")
    assert "Imported 1 preset: Haiku poet" in treechat(tmp_path, "presets", "import",
                                                       str(mine)).stdout
    out = tmp_path / "out.json"
    treechat(tmp_path, "presets", "export", "Haiku poet", "-o", str(out))
    (exported,) = json.loads(out.read_text("utf-8"))["presets"]
    assert exported["system_prompt"] == "Write haiku."
    assert exported["parameters"] == {"temperature": 0.9}
    broken = tmp_path / "broken.json"
    broken.write_text('{"presets": 1', encoding="utf-8")
    failed = treechat(tmp_path, "presets", "import", str(broken), check=False)
    assert failed.returncode == 2 and "not a JSON file" in failed.stderr


def test_usage_by_model_and_session_and_export_of_every_chat(
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
    assert len(json.loads(treechat(tmp_path, "usage", "--json").stdout)) >= 1
    everything = json.loads(treechat(tmp_path, "export", "--all-sessions", "--format",
                                     "json").stdout)
    assert sorted(d["session"]["title"] for d in everything) == ["first chat", "second chat"]
    refused = treechat(tmp_path, "export", check=False)
    assert refused.returncode == 2 and "--all-sessions" in refused.stderr
