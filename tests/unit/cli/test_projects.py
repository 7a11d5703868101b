"""`treechat projects`: a project made, a chat moved in and out, listed (text and JSON),
renamed, given instructions, memory and knowledge, and removed with its chats kept; bad names
are one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.cli_runner import treechat

from treechat.core.model import Session
from treechat.store.database import Store, default_store_path


@pytest.mark.slow
def test_projects_from_making_to_removing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Store.open(default_store_path(data)) as store:
        store.call(lambda r: r.create_session(Session("s1", "Packing list", None, "m", 1.0)))
        store.call(lambda r: r.set_setting("knowledge.bases", {"maps": ["/x"]}))
    assert "no projects" in treechat(data, "projects", "list").stderr
    made = treechat(data, "projects", "add", "Trip", "--instructions", "Plan it.")
    assert made.returncode == 0, made.stderr
    pid = made.stdout.split()[0]
    assert treechat(data, "projects", "move", "Packing list", "Trip").returncode == 0
    listed = treechat(data, "projects", "list")
    assert f"{pid}  Trip  (1 chat)" in listed.stdout and "s1  Packing list" in listed.stdout
    assert treechat(data, "projects", "rename", "trip", "Oslo").returncode == 0
    assert treechat(data, "projects", "memory", "Oslo", "on").returncode == 0
    assert treechat(data, "projects", "knowledge", "Oslo", "maps").returncode == 0
    bad = treechat(data, "projects", "knowledge", "Oslo", "nope")
    assert bad.returncode == 2 and "no knowledge base named 'nope'" in bad.stderr
    (project,) = json.loads(treechat(data, "projects", "list", "--json").stdout)
    assert project == {"id": pid, "name": "Oslo", "instructions": "Plan it.",
                       "knowledge": ["maps"], "memory": True,
                       "chats": [{"id": "s1", "title": "Packing list"}]}
    assert treechat(data, "projects", "move", "s1", "--out").returncode == 0
    assert "(0 chats" in treechat(data, "projects", "list").stdout
    missing = treechat(data, "projects", "remove", "Nowhere")
    assert missing.returncode == 2 and missing.stderr.strip() == "treechat: no project 'Nowhere'"
    assert treechat(data, "projects", "move", "s1", "Oslo").returncode == 0
    assert treechat(data, "projects", "remove", "Oslo").returncode == 0
    assert "no projects" in treechat(data, "projects", "list").stderr
    assert "Packing list" in treechat(data, "sessions").stdout  # its chat is kept
