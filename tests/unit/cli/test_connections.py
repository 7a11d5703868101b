"""`treechat connections` and `treechat models` as a user runs them: a subprocess, a real
store, model servers on 127.0.0.1, and (for keys) a real Secret Service on a private bus."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.model_servers import OllamaModel, OllamaServer, OpenAIServer

ROOT = Path(__file__).resolve().parents[3]
LAB_KEY = "sk-lab-cli-secret-0123456789"


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENAI_API_KEY": "sk-env-must-not-leak-0123456789",
        "TREECHAT_DATA_DIR": str(tmp_path / "data"),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "desktop"), str(ROOT)]),
        **extra,
    }
    return env


def treechat(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "treechat.cli", *args],
        capture_output=True, text=True, timeout=180, env=env, cwd=ROOT, check=False,
    )


@pytest.fixture
def ollama() -> Iterator[OllamaServer]:
    server = OllamaServer([OllamaModel("llama3.2:3b", context_length=131_072)])
    yield server
    server.stop()


def test_detection_looks_only_where_it_is_told(tmp_path: Path, ollama: OllamaServer) -> None:
    """The tests' own environment probes nothing (so a server the machine runs is never
    listed); pointed at a server on a free port, `connections list` finds it there."""
    env = environment(tmp_path, PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    quiet = treechat(env, "connections", "list", "--json")
    assert quiet.returncode == 0, quiet.stderr
    assert "ollama" not in [c["name"] for c in json.loads(quiet.stdout)]
    pointed = treechat({**env, "TREECHAT_LOCAL_SERVERS": f"ollama={ollama.url}"},
                       "connections", "list", "--json")
    assert pointed.returncode == 0, pointed.stderr
    (found,) = [c for c in json.loads(pointed.stdout) if c["name"] == "ollama"]
    assert found["base_url"] == ollama.url


def test_add_list_send_and_remove_without_a_key(tmp_path: Path, ollama: OllamaServer) -> None:
    env = environment(tmp_path, PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    added = treechat(env, "connections", "add", "--kind", "ollama", "--name", "box",
                     "--base-url", ollama.url)
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip() == "Added box (ollama): 1 model"

    listed = treechat(env, "models", "--json")
    assert listed.returncode == 0, listed.stderr
    (box,) = [g for g in json.loads(listed.stdout) if g["connection"] == "box"]
    (model,) = box["models"]
    assert model == {
        "address": "box/llama3.2:3b", "name": "llama3.2:3b", "display_name": "box · llama3.2:3b",
        "window": 131_072, "window_estimated": False, "price_in_per_million": None,
        "price_out_per_million": None, "available": True,
    }
    table = treechat(env, "models")
    assert "box/llama3.2:3b" in table.stdout and "131,072  free" in table.stdout

    sent = treechat(env, "send", "--new", "Hello there", "--model", "box/llama3.2:3b")
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.strip() == ollama.reply
    assert "[box · llama3.2:3b]" in sent.stderr
    (chat,) = ollama.chats
    assert not any(k.lower() == "authorization" for k in chat.headers)

    tested = treechat(env, "connections", "test", "box", "--json")
    assert json.loads(tested.stdout)["ok"] is True, tested.stdout

    removed = treechat(env, "connections", "remove", "box")
    assert removed.returncode == 0 and removed.stdout.strip() == "Removed box."
    again = treechat(env, "connections", "list", "--json")
    assert "box" not in [c["name"] for c in json.loads(again.stdout)]


def test_bad_input_gets_one_line_and_saves_nothing(tmp_path: Path) -> None:
    env = environment(tmp_path, PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    bad = treechat(env, "connections", "add", "--kind", "openai-compatible", "--name", "lab",
                   "--base-url", "ftp://127.0.0.1:21")
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        "treechat: 'ftp://127.0.0.1:21' is not an http:// or https:// address "
        "(for example http://127.0.0.1:8000/v1)"
    )
    no_key = treechat(env, "connections", "add", "--kind", "openai-compatible", "--name", "lab",
                      "--base-url", "http://127.0.0.1:9/v1", "--key-from-env", "LAB_KEY")
    assert no_key.returncode == 2 and "LAB_KEY is empty or not set" in no_key.stderr
    no_keychain = treechat({**env, "LAB_KEY": LAB_KEY}, "connections", "add", "--kind",
                           "openai-compatible", "--name", "lab", "--base-url",
                           "http://127.0.0.1:9/v1", "--key-from-env", "LAB_KEY")
    assert no_keychain.returncode == 2 and "no system keychain" in no_keychain.stderr
    unknown = treechat(env, "send", "--new", "Hi", "--model", "nowhere/model")
    assert unknown.returncode != 0 and "Traceback" not in unknown.stderr
    listed = treechat(env, "connections", "list", "--json")
    # The bundled model, and OpenAI through $OPENAI_API_KEY; no "lab" was saved.
    assert [c["name"] for c in json.loads(listed.stdout)] == ["local", "openai"]


KEYRING_CHILD = textwrap.dedent("""
    import json, subprocess, sys
    def run(*args):
        done = subprocess.run([sys.executable, "-m", "treechat.cli", *args],
                              capture_output=True, text=True, timeout=180)
        return {"rc": done.returncode, "out": done.stdout, "err": done.stderr}
    url = sys.argv[1]
    print(json.dumps({
        "add": run("connections", "add", "--kind", "openai-compatible", "--name", "lab",
                   "--base-url", url, "--key-from-env", "LAB_KEY"),
        "send": run("send", "--new", "Hello", "--model", "lab/secure-model"),
        "test": run("connections", "test", "lab", "--json"),
    }))
""")


@pytest.mark.keyring
def test_a_key_from_the_environment_goes_to_the_keychain_and_to_the_server(
    tmp_path: Path,
) -> None:
    for tool in ("dbus-run-session", "gnome-keyring-daemon"):
        assert shutil.which(tool), f"{tool} is required (apt-get install dbus gnome-keyring)"
    lab = OpenAIServer([{"id": "secure-model", "object": "model"}], required_key=LAB_KEY)
    try:
        child = tmp_path / "child.py"
        child.write_text(KEYRING_CHILD)
        env = environment(
            tmp_path,
            LAB_KEY=LAB_KEY,
            HOME=str(tmp_path),  # the test keyring lives here, never in the user's keychain
            XDG_DATA_HOME=str(tmp_path / "xdg"),
            XDG_RUNTIME_DIR=str(tmp_path / "run"),
        )
        env.pop("PYTHON_KEYRING_BACKEND", None)
        (tmp_path / "run").mkdir(mode=0o700)
        script = (
            "printf 'treechat-test' | gnome-keyring-daemon --unlock --components=secrets "
            f'>/dev/null; exec "{sys.executable}" "{child}" "{lab.openai_base}"'
        )
        done = subprocess.run(["dbus-run-session", "--", "sh", "-c", script],
                              capture_output=True, text=True, timeout=600, env=env, cwd=ROOT,
                              check=False)
        assert done.returncode == 0, done.stderr[-2000:]
        report = json.loads(done.stdout.strip().splitlines()[-1])
        assert report["add"]["rc"] == 0, report["add"]
        assert report["add"]["out"].strip() == "Added lab (openai-compatible): 1 model"
        assert report["send"]["rc"] == 0, report["send"]
        assert json.loads(report["test"]["out"])["ok"] is True
        chats = lab.chat_hits()
        assert chats and all(h.authorization == f"Bearer {LAB_KEY}" for h in chats)
        # The key went to the keychain's encrypted file, never to the store or the log.
        for path in (tmp_path / "data").rglob("*"):
            if path.is_file():
                assert LAB_KEY.encode() not in path.read_bytes(), path
        keyrings = tmp_path / "xdg" / "keyrings"
        assert any(keyrings.iterdir())
    finally:
        lab.stop()
