"""`treechat sync` and `treechat session set --title` as a user runs them: subprocesses, real
stores, a real WebDAV server on 127.0.0.1, and the passphrase in a real Secret Service on a
private bus."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.support.webdav_server import PASSWORD, USER, WebDavServer

from treechat.core.model import Node, Session
from treechat.store.database import Store, default_store_path
from treechat.store.repository import Repository

ROOT = Path(__file__).resolve().parents[3]
PASSPHRASE = "a long passphrase for the test 7"


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "TREECHAT_DATA_DIR": str(tmp_path / "data"),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "desktop"), str(ROOT)]),
        **extra,
    }


def treechat(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "treechat.cli", *args], capture_output=True,
                          text=True, timeout=180, env=env, cwd=ROOT, check=False)


def seed(data_dir: Path) -> str:
    def write(repo: Repository) -> None:
        repo.create_session(Session(id="chat-1", title="Packing list", head=None, model="",
                                    created_at=1000.0))
        repo.append_nodes([Node(id="n-1", seq=0, created_at=1001.0, session_id="chat-1",
                                role="user", output="Bring the blue tent")])
        repo.set_head("chat-1", "n-1", 1002.0)

    with Store.open(default_store_path(data_dir)) as store:
        store.call(write)
    return "chat-1"


def test_without_a_keychain_sync_is_refused_and_a_title_can_still_be_set(
    tmp_path: Path,
) -> None:
    seed(tmp_path / "data")
    (tmp_path / "folder").mkdir()
    env = environment(tmp_path, PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring",
                      PP=PASSPHRASE)
    added = treechat(env, "sync", "add", "folder", str(tmp_path / "folder"),
                     "--passphrase-env", "PP")
    assert added.returncode == 1
    assert added.stderr.strip().splitlines() == [
        "treechat: no system keychain is available to keep the passphrase in; install or "
        "unlock one (GNOME Keyring, KWallet, macOS Keychain)"]
    assert not any((tmp_path / "folder").iterdir())
    now = treechat(env, "sync", "now")
    assert now.returncode == 1 and now.stderr.startswith("treechat: no sync target is set")
    status = treechat(env, "sync", "status", "--json")
    assert json.loads(status.stdout)["target"] is None
    renamed = treechat(env, "session", "set", "chat-1", "--title", "Camping", "--json")
    assert renamed.returncode == 0, renamed.stderr
    assert json.loads(renamed.stdout) == {"session": "chat-1", "title": "Camping"}
    listed = json.loads(treechat(env, "sessions", "--json").stdout)
    assert [s["title"] for s in listed] == ["Camping"]


KEYRING_CHILD = textwrap.dedent("""
    import json, os, subprocess, sys
    url, a, b, c = sys.argv[1:5]
    def run(data, *args, **env):
        done = subprocess.run([sys.executable, "-m", "treechat.cli", *args],
                              capture_output=True, text=True, timeout=180,
                              env={**os.environ, "TREECHAT_DATA_DIR": data, **env})
        return {"rc": done.returncode, "out": done.stdout, "err": done.stderr}
    dav = ["sync", "add", "webdav", url, "--user", "treechat", "--password-env", "DAVPW",
           "--passphrase-env", "PP"]
    steps = {}
    steps["add_a"] = run(a, *dav)
    steps["now_a"] = run(a, "sync", "now", "--json")
    steps["add_b"] = run(b, *dav)
    steps["now_b"] = run(b, "sync", "now", "--json")
    steps["rename_b"] = run(b, "session", "set", "chat-1", "--title", "Renamed on B")
    steps["now_b2"] = run(b, "sync", "now", "--json")
    steps["now_a2"] = run(a, "sync", "now", "--json")
    steps["sessions_a"] = run(a, "sessions", "--json")
    steps["status_a"] = run(a, "sync", "status", "--json")
    steps["wrong"] = run(c, "sync", "add", "webdav", url, "--user", "treechat",
                         "--password-env", "DAVPW", "--passphrase-env", "BAD")
    steps["sessions_c"] = run(c, "sessions", "--json")
    steps["remove_a"] = run(a, "sync", "remove")
    steps["status_a2"] = run(a, "sync", "status", "--json")
    print(json.dumps(steps))
""")


@pytest.mark.keyring
@pytest.mark.slow
def test_two_computers_sync_through_webdav_with_the_passphrase_in_the_keychain(
    tmp_path: Path,
) -> None:
    for tool in ("dbus-run-session", "gnome-keyring-daemon"):
        assert shutil.which(tool), f"{tool} is required (apt-get install dbus gnome-keyring)"
    seed(tmp_path / "a")
    server = WebDavServer(tmp_path / "dav")
    try:
        child = tmp_path / "child.py"
        child.write_text(KEYRING_CHILD)
        env = environment(
            tmp_path, PP=PASSPHRASE, BAD="not it", DAVPW=PASSWORD,
            HOME=str(tmp_path),  # the test keyring lives here, never in the user's keychain
            XDG_DATA_HOME=str(tmp_path / "xdg"), XDG_RUNTIME_DIR=str(tmp_path / "run"))
        env.pop("PYTHON_KEYRING_BACKEND", None)
        (tmp_path / "run").mkdir(mode=0o700)
        script = (
            "printf 'treechat-test' | gnome-keyring-daemon --unlock --components=secrets "
            f'>/dev/null; exec "{sys.executable}" "{child}" "{server.url}" '
            f'"{tmp_path / "a"}" "{tmp_path / "b"}" "{tmp_path / "c"}"'
        )
        done = subprocess.run(["dbus-run-session", "--", "sh", "-c", script],
                              capture_output=True, text=True, timeout=600, env=env, cwd=ROOT,
                              check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        steps = json.loads(done.stdout.strip().splitlines()[-1])
        for name in ("add_a", "now_a", "add_b", "now_b", "rename_b", "now_b2", "now_a2"):
            assert steps[name]["rc"] == 0, (name, steps[name])
        assert json.loads(steps["now_a"]["out"])["sent_nodes"] == 1
        got = json.loads(steps["now_b"]["out"])
        assert (got["received_nodes"], got["new_chats"]) == (1, ["Packing list"])
        assert json.loads(steps["now_a2"]["out"])["changed"] == ["title/chat-1"]
        assert [s["title"] for s in json.loads(steps["sessions_a"]["out"])] == ["Renamed on B"]
        status = json.loads(steps["status_a"]["out"])
        assert status["target"] == {"kind": "webdav", "location": server.url, "user": USER}
        assert steps["wrong"]["rc"] == 1
        assert steps["wrong"]["err"].strip().splitlines() == [
            "treechat: wrong passphrase for this sync target; nothing was imported"]
        assert json.loads(steps["sessions_c"]["out"]) == []
        assert steps["remove_a"]["out"].strip() == "Sync is off."
        assert json.loads(steps["status_a2"]["out"])["target"] is None
        # the secrets went to the keychain's encrypted file: not to the stores, the logs or
        # the server, and the server holds no readable text
        for where in (tmp_path / "a", tmp_path / "b", tmp_path / "dav", tmp_path / "xdg"):
            for path in where.rglob("*"):
                if path.is_file():
                    data = path.read_bytes()
                    assert PASSPHRASE.encode() not in data, path
                    assert PASSWORD.encode() not in data, path
                    if where.name == "dav":
                        assert b"blue tent" not in data and b"Packing" not in data, path
        assert any((tmp_path / "xdg" / "keyrings").iterdir())
    finally:
        server.stop()
