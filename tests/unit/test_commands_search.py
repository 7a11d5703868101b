"""`treechat search` and `treechat knowledge` on a real store and real files: hits name their
session, node and passage (or file and line); bad input is one line and a non-zero exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.store.database import Store, default_store_path


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("TREECHAT_DATA_DIR", None)
    return subprocess.run([sys.executable, "-m", "treechat.cli", *args], capture_output=True,
                          text=True, env=env, timeout=300, check=False)


@pytest.mark.slow
def test_search_and_knowledge(tmp_path: Path) -> None:
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
    assert run_cli("search", "?!", *d).returncode == 2

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "garden.md").write_text("The tomatoes need water.\n\n"
                                     "The shed key hangs behind the pantry door.\n")
    added = run_cli("knowledge", "add", "home", str(notes), *d)
    assert added.returncode == 0, added.stderr
    assert "1 file(s)" in added.stdout and "indexed 1/1 files" in added.stderr
    listed = run_cli("knowledge", "list", *d)
    assert "home: 1 file(s), 2 passage(s)" in listed.stdout
    asked = run_cli("knowledge", "search", "home", "where is what unlocks the hut", "--json",
                    "--limit", "1", *d)
    (passage,) = json.loads(asked.stdout)
    assert passage["file"] == str(notes / "garden.md") and passage["line"] == 3
    used = run_cli("knowledge", "use", "s1", "home", *d)
    assert used.returncode == 0 and used.stdout.strip() == "s1: home"
    assert run_cli("knowledge", "use", "s1", "nope", *d).returncode == 2
    missing = run_cli("knowledge", "add", "home", str(tmp_path / "nope"), *d)
    assert missing.returncode == 2 and "no such file or folder" in missing.stderr
    assert run_cli("knowledge", "remove", "home", *d).returncode == 0
    gone = run_cli("knowledge", "search", "home", "key", *d)
    assert gone.returncode == 2 and "no knowledge base named 'home'" in gone.stderr
