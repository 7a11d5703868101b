"""`treechat knowledge`: a folder added and indexed, listed, searched in other words than
its text (cited by file and line), used by a chat, and removed; bad names are one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.cli_runner import run_cli

from treechat.core.model import Session
from treechat.store.database import Store, default_store_path


@pytest.mark.slow
def test_a_knowledge_base_from_adding_to_removing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Store.open(default_store_path(data)) as store:
        store.call(lambda r: r.create_session(Session("s1", "s1", None, "m", 1.0)))
    d = ["--data-dir", str(data)]
    assert "no knowledge bases" in run_cli("knowledge", "list", *d).stdout
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "garden.md").write_text("The tomatoes need water.\n\n"
                                     "The shed key hangs behind the pantry door.\n")
    added = run_cli("knowledge", "add", "home", str(notes), *d)
    assert added.returncode == 0, added.stderr
    assert "1 path, 1 file, 1 read" in added.stdout and "indexed 1/1 files" in added.stderr
    listed = run_cli("knowledge", "list", *d)
    assert "home: 1 file, 2 passages" in listed.stdout
    asked = run_cli("knowledge", "search", "home", "where is what unlocks the hut", "--json",
                    "--limit", "1", *d)
    (passage,) = json.loads(asked.stdout)
    assert passage["file"] == str(notes / "garden.md") and passage["line"] == 3
    used = run_cli("knowledge", "use", "s1", "home", *d)
    assert used.returncode == 0 and used.stdout.strip() == "s1: home"
    assert run_cli("knowledge", "use", "s1", "nope", *d).returncode == 2
    missing = run_cli("knowledge", "add", "home", str(tmp_path / "nope"), *d)
    assert missing.returncode == 2 and "no such file or folder" in missing.stderr
    said = run_cli("knowledge", "search", "home", "pantry", "--limit", "1", *d)
    place, passage = said.stdout.splitlines()
    assert place.startswith(f"{notes / 'garden.md'}, line 3  (") and "pantry" in passage

    # the files change: a re-index reads the new one and drops the gone one
    (notes / "garden.md").unlink()
    (notes / "boat.md").write_text("Our sailboat is called Windlass.\n")
    again = run_cli("knowledge", "reindex", "home", *d)
    assert again.returncode == 0 and "home: 1 file, 1 read, 1 removed" in again.stdout
    found = run_cli("knowledge", "search", "home", "Windlass", "--json", *d)
    assert [h["file"] for h in json.loads(found.stdout)] == [str(notes / "boat.md")]
    gone_file = run_cli("knowledge", "search", "home", "pantry", "--json", *d)
    assert "garden.md" not in gone_file.stdout  # the gone file's passages went with it
    for bad in (("reindex", "nope"), ("remove", "nope"), ("search", "nope", "key")):
        out = run_cli("knowledge", *bad, *d)
        assert out.returncode == 2 and out.stderr == "treechat: no knowledge base named 'nope'\n"
    zero = run_cli("knowledge", "search", "home", "key", "--limit", "0", *d)
    assert zero.returncode == 2 and zero.stderr == "treechat: --limit must be at least 1\n"
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x.txt").write_text("x\n")
    assert run_cli("knowledge", "add", "more", str(tmp_path / "other"), *d).returncode == 0
    (tmp_path / "other" / "x.txt").unlink()
    (tmp_path / "other").rmdir()
    assert f"{tmp_path / 'other'}  (not there any more)" in run_cli(
        "knowledge", "list", *d).stdout
    assert run_cli("knowledge", "remove", "home", *d).returncode == 0
    gone = run_cli("knowledge", "search", "home", "key", *d)
    assert gone.returncode == 2 and "no knowledge base named 'home'" in gone.stderr


@pytest.mark.slow
def test_the_search_model_is_listed_chosen_and_everything_embedded_again(
        tmp_path: Path) -> None:
    from tests.support.embedding_server import embedding_server

    data = tmp_path / "data"
    d = ["--data-dir", str(data)]
    with Store.open(default_store_path(data)) as store:
        store.call(lambda r: r.create_session(Session("s1", "s1", None, "m", 1.0)))
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "garden.md").write_text("The shed key hangs behind the pantry door.\n")
    assert run_cli("knowledge", "add", "home", str(notes), *d).returncode == 0
    with embedding_server() as server:
        added = run_cli("connections", "add", "--kind", "ollama", "--name", "lab",
                        "--base-url", server.url, *d)
        assert added.returncode == 0, added.stderr
        listed = run_cli("knowledge", "model", *d)
        host = server.url.split("://")[1]
        name = f"ollama:nomic-embed-text:latest@{host}"
        lines = listed.stdout.splitlines()
        assert lines[:2] == ["search model: offline (built in)", " * offline"]
        assert f"   {name}" in lines and "llama3.2" not in listed.stdout
        # the runner's OpenAI key offers OpenAI's embedding models too
        assert "   openai:text-embedding-3-small@api.openai.com" in lines
        chosen = run_cli("knowledge", "model", "nomic-embed-text:latest", *d)
        assert chosen.returncode == 0, chosen.stderr
        assert "indexed 1/1 files" in chosen.stderr
        assert any("shed key" in t for r in server.requests if "input" in r
                   for t in r["input"])
        assert run_cli("knowledge", "model", *d).stdout.splitlines()[0] == (
            f"search model: {name}")
        asked = run_cli("knowledge", "search", "home", "shed key", "--json", *d)
        assert json.loads(asked.stdout)[0]["line"] == 1
        server.behaviour = "error"
        failed = run_cli("search", "anything at all", *d)
        assert failed.returncode == 2 and "treechat: the search model:" in failed.stderr
        assert "HTTP 404" in failed.stderr and len(failed.stderr.splitlines()) == 1
    wrong = run_cli("knowledge", "model", "no-such-embed", *d)
    assert wrong.returncode == 2 and "no embedding model 'no-such-embed'" in wrong.stderr
    back = run_cli("knowledge", "model", "offline", *d)
    assert back.returncode == 0 and "search model: offline (built in)" in back.stdout
