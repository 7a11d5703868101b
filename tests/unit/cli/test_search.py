"""`treechat search`: every chat and branch searched by words and meaning (asked in other
words than the text), in one chat with --session; a query with no words is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.cli_runner import run_cli

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.store.database import Store, default_store_path


@pytest.mark.slow
def test_search_by_meaning_in_every_chat_or_one(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Store.open(default_store_path(data)) as store:
        for sid, text in (("s1", "Our sailboat is called Windlass."),
                          ("s2", "The tax forms are in the blue folder.")):
            node = Node(f"n-{sid}", 0, 1.0, sid, "user", output=text)
            store.call(lambda r, s=sid, n=node: (
                r.create_session(Session(s, s, None, "m", 1.0)),
                r.apply_change(s, Change((n,), n.id), 1.0)))
    d = ["--data-dir", str(data)]
    found = run_cli("search", "what name did we give the yacht", "--json", "--limit", "1", *d)
    assert found.returncode == 0, found.stderr
    (hit,) = json.loads(found.stdout)
    assert (hit["session"], hit["node"]) == ("s1", "n-s1") and "Windlass" in hit["passage"]
    only = run_cli("search", "folder", "--session", "s2", *d)
    assert only.returncode == 0 and only.stdout.startswith("s2  n-s2")
    _session, _node, role, score, *words = only.stdout.split()  # a line a hit, its score
    assert role == "user" and float(score) > 0 and "blue" in words
    assert run_cli("search", "?!", *d).returncode == 2
    assert "--limit must be at least 1" in run_cli("search", "x", "--limit", "0", *d).stderr
    none = run_cli("search", "zebra crossing", "--session", "nope", *d)
    assert none.returncode == 2 and "no chat matches 'nope'" in none.stderr
