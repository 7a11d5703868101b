"""`treechat mcp` and MCP approval on the terminal, as a user types them: real processes, a
real store, real MCP servers, and a real pseudo-terminal for the approval prompt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.support.loopback_server import LoopbackProvider, Reply
from tests.support.mcp_fixtures import SERVER_SCRIPT

MODEL = "openai/loopback-model"


def treechat(data: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        [sys.executable, "-m", "treechat.cli", "--data-dir", str(data), *args],
        capture_output=True, text=True, env=env, timeout=180, check=False,
        input=stdin if stdin is not None else "",
    )


def test_add_list_test_remove(tmp_path: Path) -> None:
    data = tmp_path / "data"
    added = treechat(data, "mcp", "add", "alpha", "--", sys.executable, str(SERVER_SCRIPT),
                     "--name", "alpha", "--secret", "cli-secret")
    assert added.returncode == 0, added.stderr
    assert "each tool call is asked about" in added.stdout
    listed = json.loads(treechat(data, "mcp", "list", "--json").stdout)
    assert listed[0]["name"] == "alpha" and listed[0]["args"][-1] == "cli-secret"
    tested = treechat(data, "mcp", "test", "alpha")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "tool      secret_value" in tested.stdout
    assert "prompt    /alpha:review" in tested.stdout
    assert "resource  note://readme" in tested.stdout
    assert "8 tools" in treechat(data, "mcp", "list").stdout
    assert treechat(data, "mcp", "remove", "alpha").returncode == 0
    assert "No MCP servers yet" in treechat(data, "mcp", "list").stdout


def test_bad_input_gets_one_clear_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    missing = treechat(data, "mcp", "add", "ghost", "--", "no-such-mcp-command-q")
    assert missing.returncode == 0  # saved as given; `test` says what is wrong
    tested = treechat(data, "mcp", "test", "ghost")
    assert tested.returncode == 1
    assert "command not found: 'no-such-mcp-command-q' is not on PATH" in tested.stdout
    both = treechat(data, "mcp", "add", "x", "--url", "http://127.0.0.1:1/mcp", "--", "cmd")
    assert both.returncode == 2 and "not both" in both.stderr
    bad_name = treechat(data, "mcp", "add", "bad name", "--", "cmd")
    assert bad_name.returncode == 2 and "server name 'bad name'" in bad_name.stderr
    config = tmp_path / "claude.json"
    config.write_text(json.dumps({"mcpServers": {"t": {"command": "uvx"}, "b": {"url": "x"}}}))
    imported = treechat(data, "mcp", "import", str(config))
    assert imported.returncode == 0 and "Added t" in imported.stdout
    assert "Skipped b: the URL must start with http://" in imported.stderr
    assert treechat(data, "mcp", "test", "nobody").returncode == 2


def test_send_without_a_terminal_denies_the_call(
    tmp_path: Path, loopback: LoopbackProvider
) -> None:
    data = tmp_path / "data"
    treechat(data, "mcp", "add", "alpha", "--", sys.executable, str(SERVER_SCRIPT),
             "--name", "alpha", "--secret", "never-shown-77")
    loopback.reply_with_tool_calls([{"name": "alpha__secret_value", "arguments": {}}])
    loopback.queue(Reply(text="I was not allowed to look."))
    sent = treechat(data, "send", "--new", "what is the secret?", "--model", MODEL,
                    "--api-base", loopback.openai_base)
    assert sent.returncode == 0, sent.stderr
    assert "I was not allowed to look." in sent.stdout
    assert "needs approval and there is no terminal to ask; denied" in sent.stderr
    last = json.dumps(loopback.requests[-1].body["messages"])
    assert "denied" in last and "never-shown-77" not in last


SEND_SAYING_WHAT_LOADED = """
import json, sys
from treechat.cli import main
code = main(sys.argv[1:])
print()
print(json.dumps({"code": code, "loaded": [m for m in ("mcp", "jsonschema") if m in sys.modules]}))
"""


def send_saying_what_loaded(data: Path, loopback: LoopbackProvider, text: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", SEND_SAYING_WHAT_LOADED, "--data-dir", str(data), "send",
         "--new", text, "--model", MODEL, "--api-base", loopback.openai_base],
        capture_output=True, text=True, env=env, timeout=180, check=False,
    )
    assert done.returncode == 0, done.stderr
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "stdout": done.stdout}


def test_a_send_offers_a_listed_servers_tools_and_starts_it_only_for_a_call(
    tmp_path: Path, loopback: LoopbackProvider
) -> None:
    """Once `mcp test` has listed a server, a reply that calls none of its tools neither
    starts it nor loads the MCP SDK, yet the model is offered its tools; a reply that calls
    one starts it and gets the answer."""
    data = tmp_path / "data"
    started = tmp_path / "alpha.pid"  # written by the server each time it starts
    treechat(data, "mcp", "add", "alpha", "--allow", "--", sys.executable, str(SERVER_SCRIPT),
             "--name", "alpha", "--secret", "called-for-61", "--pid-file", str(started))
    assert treechat(data, "mcp", "test", "alpha").returncode == 0
    started.unlink()

    loopback.queue(Reply(text="No tool needed."))
    quiet = send_saying_what_loaded(data, loopback, "just say hi")
    assert "No tool needed." in quiet["stdout"]
    offered = [t["function"]["name"] for t in loopback.requests[-1].body["tools"]]
    assert "alpha__secret_value" in offered
    assert quiet["loaded"] == [] and not started.exists()

    loopback.reply_with_tool_calls([{"name": "alpha__secret_value", "arguments": {}}])
    loopback.queue(Reply(text="Got it."))
    called = send_saying_what_loaded(data, loopback, "what is the secret?")
    assert "Got it." in called["stdout"] and "mcp" in called["loaded"]
    assert "called-for-61" in json.dumps(loopback.requests[-1].body["messages"])
    assert started.exists()


KEYRING_CHILD = """
import json, os, subprocess, sys
import keyring
data = sys.argv[1]
cli = [sys.executable, "-m", "treechat.cli", "--data-dir", data, "mcp"]
subprocess.run([*cli, "add", "web", "--url", "http://127.0.0.1:1/mcp",
                "--header", "Authorization=Bearer mcp-secret-991"], check=True)
listed = subprocess.run([*cli, "list", "--json"], check=True, capture_output=True, text=True)
stored = keyring.get_password("treechat", "mcp:web")
subprocess.run([*cli, "remove", "web"], check=True)
print(json.dumps({"listed": json.loads(listed.stdout), "stored": stored,
                  "after_remove": keyring.get_password("treechat", "mcp:web"),
                  "backend": type(keyring.get_keyring()).__module__}))
"""


@pytest.mark.keyring
def test_headers_go_to_the_real_keyring_and_never_to_the_store(tmp_path: Path) -> None:
    import shutil

    for tool in ("dbus-run-session", "gnome-keyring-daemon"):
        assert shutil.which(tool), f"{tool} is required (apt-get install dbus gnome-keyring)"
    child = tmp_path / "child.py"
    child.write_text(KEYRING_CHILD)
    data = tmp_path / "store"
    env = {
        **os.environ,
        "HOME": str(tmp_path),  # the test keyring lives here, never in the user's keychain
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    (tmp_path / "run").mkdir(mode=0o700)
    script = (
        "printf 'treechat-test' | gnome-keyring-daemon --unlock --components=secrets >/dev/null; "
        f'exec "{sys.executable}" "{child}" "{data}"'
    )
    done = subprocess.run(
        ["dbus-run-session", "--", "sh", "-c", script],
        check=False, capture_output=True, text=True, timeout=180, env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["backend"] == "keyring.backends.SecretService"
    assert json.loads(report["stored"])["headers"] == {"Authorization": "Bearer mcp-secret-991"}
    assert report["listed"][0]["header_names"] == ["Authorization"]
    assert "mcp-secret-991" not in json.dumps(report["listed"])
    assert report["after_remove"] is None
    for path in data.rglob("*"):
        if path.is_file():
            assert b"mcp-secret-991" not in path.read_bytes(), path


def test_a_secret_with_no_keychain_to_keep_it_adds_nothing(tmp_path: Path) -> None:
    """Kept in memory only, `--env TOKEN=…` would be gone when the command ends and the
    server started later with TOKEN empty: the command says so and adds nothing."""
    data = tmp_path / "data"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path),
           "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    added = subprocess.run(
        [sys.executable, "-m", "treechat.cli", "--data-dir", str(data), "mcp", "add", "tok",
         "--env", "TOKEN=abc123", "--", sys.executable, str(SERVER_SCRIPT)],
        capture_output=True, text=True, env=env, timeout=180, check=False,
    )
    assert added.returncode != 0
    assert "no system keychain is available" in added.stderr
    assert "kept in the keyring" not in added.stdout
    assert "No MCP servers yet" in treechat(data, "mcp", "list").stdout
