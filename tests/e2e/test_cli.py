"""The headless command line, run as a user would: the real `treechat` entry point in a
subprocess, a real store, and the loopback provider over HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.services.turns.sessions import SessionService
from treechat.store.database import Store, default_store_path
from treechat.store.schema import SCHEMA_VERSION


def treechat(data_dir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-test-1"}
    env.pop("TREECHAT_DATA_DIR", None)
    out = subprocess.run(
        [sys.executable, "-m", "treechat.cli", "--data-dir", str(data_dir), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    if check:
        assert out.returncode == 0, out.stderr
    return out


def test_sessions_and_doctor_on_an_empty_store(tmp_path: Path) -> None:
    assert treechat(tmp_path, "sessions").stdout.strip() == "No chats yet."
    assert json.loads(treechat(tmp_path, "sessions", "--json").stdout) == []
    doctor = treechat(tmp_path, "doctor").stdout
    assert str(default_store_path(tmp_path)) in doctor
    assert f"schema version: {SCHEMA_VERSION}" in doctor and "nodes:          0" in doctor


def test_send_new_streams_and_records_then_context_and_ledger(
    tmp_path: Path, loopback: LoopbackProvider
) -> None:
    loopback.queue(Reply(text="Four, of course."))
    out = treechat(
        tmp_path,
        "send",
        "--new",
        "What is 2+2?",
        "--model",
        "openai/gpt-4o-mini",
        "--api-base",
        loopback.openai_base,
    )
    assert out.stdout.strip() == "Four, of course."
    assert loopback.requests[0].headers.get("authorization", "").endswith("sk-test-1")
    (session,) = json.loads(treechat(tmp_path, "sessions", "--json").stdout)
    assert session["title"] == "What is 2+2?" and session["nodes"] == 2

    loopback.queue(Reply(text="Eight."))
    out = treechat(
        tmp_path,
        "send",
        session["id"][:8],
        "And 4+4?",
        "--model",
        "openai/gpt-4o-mini",
        "--api-base",
        loopback.openai_base,
    )
    assert out.stdout.strip() == "Eight."
    sent = loopback.requests[1].body["messages"]
    assert [m["content"] for m in sent if m["role"] != "system"] == [
        "What is 2+2?",
        "Four, of course.",
        "And 4+4?",
    ]

    record = json.loads(treechat(tmp_path, "context", session["id"], "--json").stdout)
    assert record["basis"] == "measured"
    assert record["total_used"] == loopback.requests[1].prompt_tokens
    assert sum(record["breakdown"].values()) == record["window"]

    (row,) = json.loads(treechat(tmp_path, "ledger", "--json").stdout)
    assert row["model"] == "openai/gpt-4o-mini" and row["requests"] == 2
    assert row["input_tokens"] == sum(r.prompt_tokens for r in loopback.requests)
    assert row["cost_usd"] > 0  # litellm prices gpt-4o-mini from its bundled map
    assert "sk-test-1" not in default_store_path(tmp_path).read_bytes().decode("latin-1")


def test_send_reports_provider_errors_and_keeps_the_message(
    tmp_path: Path, loopback: LoopbackProvider
) -> None:
    loopback.fail_next(401, message="Incorrect API key provided: sk-test-1")
    out = treechat(tmp_path, "send", "--new", "first try", "--model", "openai/gpt-4o-mini",
                   "--api-base", loopback.openai_base, check=False)
    assert out.returncode == 1 and "sk-test-1" not in out.stderr + out.stdout
    logged = "".join(p.read_text() for p in (tmp_path / "logs").glob("*.log*"))
    assert "failed (auth)" in logged and "sk-test-1" not in logged
    loopback.fail_next(500)
    out = treechat(
        tmp_path,
        "send",
        "--new",
        "keep me",
        "--model",
        "openai/gpt-4o-mini",
        "--api-base",
        loopback.openai_base,
        check=False,
    )
    assert out.returncode == 1
    assert "treechat:" in out.stderr
    sessions = json.loads(treechat(tmp_path, "sessions", "--json").stdout)
    assert [(s["title"], s["nodes"]) for s in sessions] == [("keep me", 1), ("first try", 1)]


def test_unknown_session_is_a_clear_error(tmp_path: Path) -> None:
    out = treechat(tmp_path, "export", "nope", check=False)
    assert out.returncode == 2 and "no chat matches 'nope'" in out.stderr


def test_export_shows_every_branch_built_through_the_operations(tmp_path: Path) -> None:
    async def build() -> str:
        store = Store.open(default_store_path(tmp_path))
        try:
            svc = SessionService(store)
            s = await svc.create()
            u1 = await svc.append_message(s.id, "root question")
            await svc.append_message(s.id, "answer A", role="assistant")
            await svc.append_message(
                s.id, "answer B", role="assistant", parent=u1.id, use_parent=True
            )
            await svc.edit(s.id, u1.id, "edited question")
            await svc.append_message(s.id, "answer C", role="assistant")
            return s.id
        finally:
            store.close()

    session_id = asyncio.run(build())
    graph = json.loads(treechat(tmp_path, "export", session_id, "--format", "json").stdout)
    texts = json.dumps(graph)
    for text in ("root question", "answer A", "answer B", "edited question", "answer C"):
        assert text in texts
    md = treechat(tmp_path, "export", session_id, "--format", "md").stdout
    assert "edited question" in md and "answer C" in md and "answer A" not in md
    md_all = treechat(tmp_path, "export", session_id, "--format", "md", "--all-branches").stdout
    assert all(t in md_all for t in ("answer A", "answer B", "answer C"))


@pytest.mark.parametrize("args", [["send", "x"], ["send", "s", "x", "--new"]])
def test_send_arguments_are_checked(tmp_path: Path, args: list[str]) -> None:
    out = treechat(tmp_path, *args, check=False)
    # A usage error (exit 2) that says what to give instead, and nothing sent or written.
    assert out.returncode == 2, out.stderr
    assert "SESSION" in out.stderr and "--new" in out.stderr
    assert out.stdout == ""
    assert json.loads(treechat(tmp_path, "sessions", "--json").stdout) == []


def test_send_lets_go_of_the_store_while_the_provider_is_silent(
    tmp_path: Path, loopback: LoopbackProvider
) -> None:
    """While `send` waits for a provider that does not answer, other commands open the store;
    a store held elsewhere when the reply is ready is waited for, with a clear line, and the
    reply lands whole."""
    answer = threading.Event()
    loopback.queue(Reply(text="Late, but whole.", hold=answer))
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-test-1"}
    env.pop("TREECHAT_DATA_DIR", None)
    child = subprocess.Popen(
        [sys.executable, "-m", "treechat.cli", "--data-dir", str(tmp_path), "send", "--new",
         "are you there?", "--model", "openai/gpt-4o-mini", "--api-base", loopback.openai_base],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    said: list[str] = []
    waiting = threading.Event()

    def read_stderr() -> None:
        assert child.stderr is not None
        for line in child.stderr:
            said.append(line)
            if "waiting up to" in line:
                waiting.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        loopback.wait_for_requests(1, timeout=120)
        # The request is out and unanswered: the store is free for another command.
        (session,) = json.loads(treechat(tmp_path, "sessions", "--json").stdout)
        assert session["title"] == "are you there?" and session["nodes"] == 1
        # Held by this process when the answer comes: send waits for it and says so.
        holder = Store.open(default_store_path(tmp_path))
        try:
            answer.set()
            assert waiting.wait(timeout=60), "".join(said)
        finally:
            holder.close()
        assert child.stdout is not None
        out = child.stdout.read()
        assert child.wait(timeout=120) == 0, "".join(said)
    finally:
        answer.set()
        if child.poll() is None:
            child.kill()
            child.wait()
        reader.join(timeout=10)
        for pipe in (child.stdout, child.stderr):
            if pipe is not None:
                pipe.close()
    assert out.strip() == "Late, but whole."
    assert f"in use by process {os.getpid()}" in "".join(said)
    store = Store.open(default_store_path(tmp_path))
    try:
        nodes = store.call(lambda r: r.session_nodes(session["id"]))
        assert store.call(lambda r: r.drafts()) == ()
    finally:
        store.close()
    reply = next(n for n in nodes if n.role == "assistant")
    assert reply.text == "Late, but whole." and not reply.interrupted
    assert [n.role for n in nodes] == ["user", "assistant"]


def long_chat(data_dir: Path) -> str:
    """A chat whose next request folds its older turns into a summary written by the chat's
    own model (the `context.summarizer` setting is "session")."""

    async def build() -> str:
        store = Store.open(default_store_path(data_dir))
        try:
            store.call(lambda r: r.set_setting("context.summarizer", "session"))
            svc = SessionService(store)
            s = await svc.create(model="openai/loopback-model")
            for i in range(16):
                await svc.append_message(
                    s.id, f"turn {i}: " + " ".join(f"word{i}x{j}" for j in range(160)),
                    role="user" if i % 2 == 0 else "assistant",
                )
            return s.id
        finally:
            store.close()

    return asyncio.run(build())


def test_send_lets_go_of_the_store_while_the_summary_is_awaited(
    tmp_path: Path, loopback: LoopbackProvider
) -> None:
    """A model summary of folded history is a network wait like the reply's: other commands
    open the store meanwhile; a store held elsewhere when the summary comes back is waited
    for, with a clear line, then the reply is asked for with the summary in it."""
    session_id = long_chat(tmp_path)
    summarized = threading.Event()
    loopback.queue(Reply(text="A short summary.", hold=summarized), Reply(text="after the fold"))
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-test-1"}
    env.pop("TREECHAT_DATA_DIR", None)
    child = subprocess.Popen(
        [sys.executable, "-m", "treechat.cli", "--data-dir", str(tmp_path), "send", session_id,
         "go on", "--model", "openai/loopback-model", "--api-base", loopback.openai_base],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    said: list[str] = []
    waiting = threading.Event()

    def read_stderr() -> None:
        assert child.stderr is not None
        for line in child.stderr:
            said.append(line)
            if "waiting up to" in line:
                waiting.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        loopback.wait_for_requests(1, timeout=120)
        assert "word2x0" in str(loopback.requests[0].body["messages"])  # the summary's request
        # The summary is asked for and unanswered: the store is free for another command.
        (listed,) = json.loads(treechat(tmp_path, "sessions", "--json").stdout)
        assert listed["id"] == session_id and listed["nodes"] == 17
        holder = Store.open(default_store_path(tmp_path))
        try:
            summarized.set()
            assert waiting.wait(timeout=60), "".join(said)
            assert len(loopback.requests) == 1  # the reply waits for the store
        finally:
            holder.close()
        assert child.stdout is not None
        out = child.stdout.read()
        assert child.wait(timeout=120) == 0, "".join(said)
    finally:
        summarized.set()
        if child.poll() is None:
            child.kill()
            child.wait()
        reader.join(timeout=10)
        for pipe in (child.stdout, child.stderr):
            if pipe is not None:
                pipe.close()
    assert out.strip() == "after the fold"
    assert f"in use by process {os.getpid()}" in "".join(said)
    assert "after the summary of older messages" in "".join(said)
    assert "A short summary." in str(loopback.requests[1].body["messages"])
    store = Store.open(default_store_path(tmp_path))
    try:
        nodes = store.call(lambda r: r.session_nodes(session_id))
    finally:
        store.close()
    assert [n.text for n in nodes][-2:] == ["go on", "after the fold"]


def test_send_lets_go_of_the_store_while_an_mcp_server_over_http_answers(
    tmp_path: Path, loopback: LoopbackProvider
) -> None:
    """A call to an MCP server over HTTP is a network wait too: while the server works on it,
    the store opens elsewhere (the reply asking for the call is in it, the call's answer not
    yet); then the answer lands and the reply after it."""
    from tests.support.mcp_fixtures import http_server

    from treechat.providers.keys import KeyStore
    from treechat.services.mcp.service import McpService
    from treechat.store.database import StoreLockedError

    with http_server("beta") as server:
        store = Store.open(default_store_path(tmp_path))
        try:
            asyncio.run(McpService(store, KeyStore()).add(server.config("beta", policy="allow")))
        finally:
            store.close()
        loopback.reply_with_tool_calls([{"name": "beta__slow", "arguments": {"seconds": 4}}])
        loopback.queue(Reply(text="It waited."))
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-test-1"}
        env.pop("TREECHAT_DATA_DIR", None)
        child = subprocess.Popen(
            [sys.executable, "-m", "treechat.cli", "--data-dir", str(tmp_path), "send", "--new",
             "wait a little", "--model", "openai/loopback-model", "--api-base",
             loopback.openai_base],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        seen: list[list[str]] = []
        try:
            loopback.wait_for_requests(1, timeout=120)
            while child.poll() is None and len(loopback.requests) == 1:
                try:
                    held = Store.open(default_store_path(tmp_path))
                except StoreLockedError:
                    time.sleep(0.05)
                    continue
                try:
                    roles: list[str] = held.call(
                        lambda r: [n.role for s in r.list_sessions() for n in r.session_nodes(s.id)]
                    )
                finally:
                    held.close()
                seen.append(roles)
                if roles == ["user", "assistant"]:
                    break  # opened while the server worked on the call
            out, err = child.communicate(timeout=120)
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()
    assert child.returncode == 0, err
    assert ["user", "assistant"] in seen, seen
    assert out.strip() == "It waited."
    assert "waited 4" in str(loopback.requests[1].body["messages"])
