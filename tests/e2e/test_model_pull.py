"""`treechat models pull` killed mid-download resumes from its bytes to the hub's sha256."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.hub_server import sha256_of

from treechat.providers.local.bundled_model import find_gguf

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
REPO, FILE = "acme/Tiny-Chat-GGUF", "tiny-chat-q4.gguf"


@pytest.fixture
def hub_url() -> Iterator[str]:
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "support" / "hub_server.py"), "--repo", REPO,
         "--file", FILE, "--path", str(find_gguf()), "--rate", "12000000"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    assert server.stdout is not None
    with server:
        yield json.loads(server.stdout.readline())["url"]
        server.kill()


def treechat(data: Path, hub: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "HF_ENDPOINT": hub, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.Popen(
        [sys.executable, "-m", "treechat.cli", "--data-dir", str(data), "models", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )


def test_a_killed_pull_resumes_to_the_same_sha256(tmp_path: Path, hub_url: str) -> None:
    part = tmp_path / "models" / "acme--Tiny-Chat-GGUF" / f"{FILE}.part"
    first = treechat(tmp_path, hub_url, "pull", REPO, FILE)
    deadline = time.monotonic() + 60
    while not (part.exists() and part.stat().st_size > 20_000_000):
        assert first.poll() is None, first.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.communicate()
    kept = part.stat().st_size
    assert 20_000_000 < kept < find_gguf().stat().st_size

    listed = treechat(tmp_path, hub_url, "library", "--json")
    out, _ = listed.communicate(timeout=60)
    (stopped,) = json.loads(out)["partial"]
    assert stopped["done"] == kept

    second = treechat(tmp_path, hub_url, "pull", REPO, FILE, "--json")
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    model = json.loads(out)
    assert model["sha256"] == sha256_of(find_gguf())
    assert sha256_of(Path(model["path"])) == model["sha256"]
    assert not part.exists()

    # the downloaded model answers through the bundled llama.cpp server, under its one name
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    send = subprocess.run(
        [sys.executable, "-m", "treechat.cli", "--data-dir", str(tmp_path), "send", "--new",
         "--model", f"library/{model['name']}", "Say hello"],
        check=False, capture_output=True, text=True, env=env, timeout=300,
    )
    assert send.returncode == 0, send.stderr
    assert f"[Downloaded · {model['name']}]" in send.stderr
    assert send.stdout.strip()

    removed = treechat(tmp_path, hub_url, "rm", model["name"])
    out, err = removed.communicate(timeout=60)
    assert removed.returncode == 0, err
    assert "MB freed" in out
    assert not Path(model["path"]).exists()


def test_a_pull_of_a_missing_repository_says_so(tmp_path: Path, hub_url: str) -> None:
    run = treechat(tmp_path, hub_url, "pull", "nobody/nothing-GGUF")
    _, err = run.communicate(timeout=60)
    assert run.returncode == 1
    assert err.startswith("treechat: could not read nobody/nothing-GGUF on the hub")
    assert "Traceback" not in err
