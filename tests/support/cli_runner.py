"""The `treechat` command as a user runs it: `python -m treechat.cli` in a child process, with
the repository's sources, no data folder from the environment and no network pricing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.loopback_server import LoopbackProvider, Reply

ROOT = Path(__file__).resolve().parents[2]  # the repository: its desktop/ and tests/


def run_cli(*args: str, stdin: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `treechat ARGS...`; the caller checks the exit status."""
    environment = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENAI_API_KEY": "sk-x",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "desktop"), str(ROOT)]),
        **(env or {}),
    }
    environment.pop("TREECHAT_DATA_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "treechat.cli", *args],
        capture_output=True, text=True, input=stdin, env=environment, cwd=ROOT, timeout=300,
        check=False,
    )


def treechat(
    data_dir: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `treechat --data-dir DATA_DIR ARGS...`; the caller checks the exit status."""
    return run_cli("--data-dir", str(data_dir), *args, stdin=stdin, env=env)


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The one `treechat: ...` line a failed command ends with (and no traceback)."""
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("treechat")]
    assert lines, done.stderr
    return lines[-1]


def seed_chats(data_dir: Path, *titles: str, model: str = "openai/gpt-4o",
               priced: bool = True) -> list[str]:
    """One chat per title (the last the newest), each a question and its reply, and one
    request of usage recorded for it (priced at $0.0125, or with no known price)."""
    from treechat.core.dag import Change
    from treechat.core.model import Node, Session
    from treechat.store.database import Store, default_store_path
    from treechat.store.repository import Repository
    from treechat.store.usage import UsageRecord, record_usage

    chats = []
    for i, title in enumerate(titles):
        sid, at = f"chat{i:04d}", 1_700_000_000.0 + i * 60
        question = Node(f"{sid}-q", 0, at, sid, "user", output=f"a question in {title}")
        reply = Node(f"{sid}-a", 0, at, sid, "assistant", predecessor=question.id,
                     output=f"the reply in {title}")
        usage = UsageRecord(f"{sid}-u", sid, model, at, input_tokens=1000, cache_read=400,
                            output_tokens=50, cost_usd=0.0125 if priced else 0.0,
                            priced=priced)
        chats.append((Session(sid, title, None, model, at, updated_at=at),
                      Change((question, reply), reply.id), usage))

    def write(r: Repository) -> None:
        for session, change, usage in chats:
            r.create_session(session)
            r.apply_change(session.id, change, session.updated_at)
            record_usage(r, usage)

    with Store.open(default_store_path(data_dir)) as store:
        store.call(write)
    return [session.id for session, _change, _usage in chats]


def seed_long_chat(data_dir: Path, messages: int = 3000) -> Path:
    """A store holding one chat `s1` of `messages` messages of random text (large enough
    that a file cut short loses some of them); its data folder."""
    import os

    from treechat.core.dag import Change
    from treechat.core.model import Node, Session
    from treechat.store.database import Store, default_store_path

    with Store.open(default_store_path(data_dir)) as store:
        first = Session("s1", "First", None, "m", 1.0, updated_at=1.0)
        store.call(lambda r: r.create_session(first))
        nodes, prev = [], None
        for i in range(messages):
            nodes.append(
                Node(id=f"n{i}", seq=0, created_at=1.0, session_id="s1",
                     role="user" if i % 2 == 0 else "assistant",
                     output=f"message {i} " + os.urandom(300).hex(), predecessor=prev)
            )
            prev = f"n{i}"
        store.call(lambda r: r.apply_change("s1", Change(tuple(nodes), prev), 2.0))
    return data_dir


def send_env() -> dict[str, str]:
    """The environment a `send` child runs in: a key for the loopback server, no data folder."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-send-test"}
    env.pop("TREECHAT_DATA_DIR", None)
    return env


def send_command(data: Path, base_url: str, *args: str) -> list[str]:
    """`treechat send ARGS...` to the OpenAI-compatible server at `base_url`."""
    return [
        sys.executable, "-m", "treechat.cli", "send", *args,
        "--model", "openai/gpt-4o-mini", "--api-base", base_url, "--data-dir", str(data),
    ]


def stored_path(data: Path) -> list[tuple[str, str, bool]]:
    """The one chat's messages from its root to HEAD: (role, text, interrupted)."""
    from treechat.core.dag import Graph, active_path
    from treechat.services.store_life.recovery import open_and_recover
    from treechat.store.database import default_store_path

    store = open_and_recover(default_store_path(data))
    try:
        (session,) = store.call(lambda r: r.list_sessions())
        nodes = store.call(lambda r: r.session_nodes(session.id))
    finally:
        store.close()
    return [(n.role, n.text, n.interrupted) for n in active_path(Graph(nodes), session.head)]


def new_chat(data: Path, loopback: LoopbackProvider, text: str = "hello") -> str:
    """A chat started with `send --new TEXT`, answered "first reply" by the loopback
    provider; its id."""
    loopback.queue(Reply(text="first reply"))
    sent = treechat(data, "send", "--new", text, "--model", "openai/loopback-model",
                    "--api-base", loopback.openai_base, env={"OPENAI_API_KEY": "sk-test-1"})
    assert sent.returncode == 0, sent.stderr
    (session,) = [s for s in json.loads(treechat(data, "sessions", "--json").stdout)
                  if s["title"] == text]
    return str(session["id"])
