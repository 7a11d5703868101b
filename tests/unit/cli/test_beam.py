"""`treechat send --models` and `treechat fuse` as a user runs them: a subprocess, a real store,
three OpenAI-compatible servers on 127.0.0.1 added as connections, litellm between."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.loopback_server import Reply
from tests.support.model_servers import OpenAIServer

from treechat.core.dag import Graph
from treechat.services.store_life.recovery import open_and_recover
from treechat.store.database import default_store_path

ROOT = Path(__file__).resolve().parents[3]
NAMES = ("gpt-4o-mini", "gpt-4o", "gpt-4.1-mini")
ADDRESSES = ",".join(f"{c}/{n}" for c, n in zip("abc", NAMES, strict=True))

pytestmark = pytest.mark.slow


@pytest.fixture
def servers() -> Iterator[list[OpenAIServer]]:
    started = [OpenAIServer([{"id": name, "object": "model"}]) for name in NAMES]
    yield started
    for server in started:
        server.stop()


def treechat(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "TREECHAT_DATA_DIR": str(tmp_path / "data"),
        "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "desktop"), str(ROOT)]),
    }
    env.pop("OPENAI_API_KEY", None)
    return subprocess.run([sys.executable, "-m", "treechat.cli", *args], capture_output=True,
                          text=True, timeout=180, env=env, cwd=ROOT, check=False)


def connect(tmp_path: Path, servers: list[OpenAIServer]) -> None:
    for name, server in zip("abc"[:len(servers)], servers, strict=True):
        added = treechat(tmp_path, "connections", "add", "--kind", "openai-compatible",
                         "--name", name, "--base-url", server.openai_base)
        assert added.returncode == 0, added.stderr


def stored(tmp_path: Path) -> tuple[str, Graph, str | None]:
    store = open_and_recover(default_store_path(tmp_path / "data"))
    try:
        (session,) = store.call(lambda r: r.list_sessions())
        return session.id, Graph(store.call(lambda r: r.session_nodes(session.id))), session.head
    finally:
        store.close()


def test_send_to_three_models_then_fuse(tmp_path: Path, servers: list[OpenAIServer]) -> None:
    connect(tmp_path, servers)
    for server, word in zip(servers, ("MAPLE", "BIRCH", "CEDAR"), strict=True):
        server.queue(Reply(text=f"Use {word}."))
    sent = treechat(tmp_path, "send", "--new", "Which wood?", "--models", ADDRESSES)
    assert sent.returncode == 0, sent.stderr
    for name, word in zip(NAMES, ("MAPLE", "BIRCH", "CEDAR"), strict=True):
        assert f"· {name}\n\nUse {word}.\n" in sent.stdout  # under its model's name
    assert sent.stderr.count("first token after") == 3
    assert "$" in sent.stderr  # each reply's cost
    session_id, graph, head = stored(tmp_path)
    (message,) = [n for n in graph if n.role == "user"]
    replies = graph.conversation_children(message.id)
    assert sorted(r.text for r in replies) == ["Use BIRCH.", "Use CEDAR.", "Use MAPLE."]
    assert graph.get(head or "").text == "Use MAPLE."  # HEAD on the first model's reply

    servers[1].queue(Reply(text="CEDAR outside; MAPLE and BIRCH disagreed."))
    fused = treechat(tmp_path, "fuse", session_id[:8], "--model", "b/gpt-4o",
                     "--prompt", "Be brief.")
    assert fused.returncode == 0, fused.stderr
    assert fused.stdout.strip() == "CEDAR outside; MAPLE and BIRCH disagreed."
    wire = json.dumps(servers[1].requests[-1].body["messages"])
    assert all(w in wire for w in ("MAPLE", "BIRCH", "CEDAR", "Be brief."))
    _, graph, head = stored(tmp_path)
    merge = graph.get(graph.get(head or "").predecessor or "")
    assert merge.is_merge and len(merge.metadata["peers"]) == 2

    ledger = treechat(tmp_path, "ledger", session_id[:8], "--json")
    assert sum(r["requests"] for r in json.loads(ledger.stdout)) == 4


def test_bad_model_lists_get_one_line_and_send_nothing(tmp_path: Path,
                                                      servers: list[OpenAIServer]) -> None:
    both = treechat(tmp_path, "send", "--new", "Hi", "--models", ADDRESSES, "--model", "a/x")
    assert both.returncode == 2
    assert both.stderr.strip().endswith("give --model or --models, not both")
    empty = treechat(tmp_path, "send", "--new", "Hi", "--models", " , ")
    assert empty.returncode == 2 and "name at least one model" in empty.stderr
    assert not (tmp_path / "data" / "treechat.duckdb").exists() or stored_count(tmp_path) == 0

    connect(tmp_path, servers[:1])
    servers[0].queue(Reply(text="Alone."))
    one = treechat(tmp_path, "send", "--new", "Hi", "--model", "a/gpt-4o-mini")
    assert one.returncode == 0, one.stderr
    session_id, _, _ = stored(tmp_path)
    refused = treechat(tmp_path, "fuse", session_id[:8], "--model", "a/gpt-4o-mini")
    assert refused.returncode == 2
    assert refused.stderr.strip().endswith(
        "fusing needs at least two replies to the same message")
    assert "Traceback" not in refused.stderr


def stored_count(tmp_path: Path) -> int:
    store = open_and_recover(default_store_path(tmp_path / "data"))
    try:
        return len(store.call(lambda r: r.list_sessions()))
    finally:
        store.close()
