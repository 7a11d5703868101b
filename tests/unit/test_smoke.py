"""`treechat --smoke` from source: the window paints offscreen, one turn goes to the given
endpoint, and the exit code and output say what happened."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.loopback_server import DEFAULT_TEXT, LoopbackProvider, Reply

from treechat.smoke import DEFAULT_PROMPT, PAINTED_MARKER

MODEL = "openai/loopback-model"


def run_smoke(*args: str, home: Path, timeout: float = 120,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "TREECHAT_DATA_DIR"}
    full_env.update(HOME=str(home), QT_QPA_PLATFORM="offscreen",
                    LITELLM_LOCAL_MODEL_COST_MAP="True",
                    XDG_DATA_HOME=str(home / ".local" / "share"), **(env or {}))
    home.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "treechat.cli", "--smoke", *args],
        check=False, capture_output=True, text=True, env=full_env, timeout=timeout,
    )


def test_smoke_prints_the_reply_from_the_endpoint(loopback: LoopbackProvider,
                                                  tmp_path: Path) -> None:
    data = tmp_path / "data"
    done = run_smoke("--api-base", loopback.openai_base, "--model", MODEL,
                     "--data-dir", str(data), home=tmp_path / "home")

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == DEFAULT_TEXT
    assert PAINTED_MARKER in done.stderr
    assert "ok:" in done.stderr
    # one turn: one request, carrying the smoke prompt as the last user message
    assert len(loopback.requests) == 1
    messages = loopback.requests[0].body["messages"]
    assert messages[-1]["role"] == "user"
    assert DEFAULT_PROMPT in str(messages[-1]["content"])
    # the turn went through the store it was given, and the window kept its prefs beside it
    assert (data / "window.ini").exists()
    assert any(data.glob("*.duckdb"))


def test_smoke_without_data_dir_leaves_nothing_behind(loopback: LoopbackProvider,
                                                      tmp_path: Path) -> None:
    home = tmp_path / "home"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = run_smoke("--api-base", loopback.openai_base, "--model", MODEL, home=home,
                     env={"TMPDIR": str(scratch)})

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == DEFAULT_TEXT
    # the throwaway store lived in the temp dir and is gone; the user's home is untouched
    assert list(scratch.iterdir()) == []
    assert not (home / ".local" / "share" / "Treechat").exists()


def test_smoke_reports_a_failed_turn_and_exits_1(loopback: LoopbackProvider,
                                                 tmp_path: Path) -> None:
    loopback.queue(Reply(status=401, message="invalid api key"))
    done = run_smoke("--api-base", loopback.openai_base, "--model", MODEL,
                     "--data-dir", str(tmp_path / "data"), home=tmp_path / "home")

    assert done.returncode == 1
    assert "FAILED" in done.stderr
    assert "auth" in done.stderr
    # the provider's own words reach the person running the check, and the log file
    assert "invalid api key" in done.stderr
    assert "invalid api key" in (tmp_path / "data" / "logs" / "treechat.log").read_text()
    assert done.stdout.strip() == ""


def test_smoke_reports_an_unreachable_endpoint(tmp_path: Path) -> None:
    closed = LoopbackProvider()
    base = closed.openai_base
    closed.stop()
    done = run_smoke("--api-base", base, "--model", MODEL, "--timeout", "60",
                     "--data-dir", str(tmp_path / "data"), home=tmp_path / "home")

    assert done.returncode == 1
    assert "FAILED" in done.stderr
    assert "the turn failed" in done.stderr


@pytest.mark.parametrize("args", [("--api-base", "http://127.0.0.1:9/v1"), ("--bogus",)])
def test_smoke_rejects_incomplete_options(args: tuple[str, ...], tmp_path: Path) -> None:
    done = run_smoke(*args, home=tmp_path / "home", timeout=60)

    assert done.returncode == 2
    assert "usage: treechat --smoke" in done.stderr
