"""`treechat export` and `treechat import` run as a user would: every chat exported as JSON
comes back whole in another data folder, a second import adds nothing, and export needs a
SESSION or --all-sessions."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_cli import treechat
from tests.support.cli_runner import seed_chats


def test_export_of_every_chat_and_import_of_it_elsewhere(tmp_path: Path) -> None:
    seed_chats(tmp_path, "first chat", "second chat")
    everything = json.loads(treechat(tmp_path, "export", "--all-sessions", "--format",
                                     "json").stdout)
    assert sorted(d["session"]["title"] for d in everything) == ["first chat", "second chat"]
    refused = treechat(tmp_path, "export", check=False)
    assert refused.returncode == 2 and "--all-sessions" in refused.stderr
    export = tmp_path / "all.json"
    export.write_text(json.dumps(everything), encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    summary = json.loads(treechat(elsewhere, "import", str(export), "--json").stdout)
    assert summary["sessions"] == 2 and summary["nodes"] == 4 and not summary["skipped"]
    titles = {s["title"] for s in json.loads(treechat(elsewhere, "sessions", "--json").stdout)}
    assert titles == {"first chat", "second chat"}
    again = treechat(elsewhere, "import", str(export)).stdout
    assert again.startswith("Nothing new: 2 conversations in this")
    markdown = treechat(tmp_path, "export", "first chat").stdout
    assert "a question in first chat" in markdown and "the reply in first chat" in markdown
