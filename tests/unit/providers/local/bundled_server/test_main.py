"""The bundled server's process: it announces its port and window on one JSON line, answers,
and ends when the app that started it goes away."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx

from treechat.providers.local.bundled_model import SERVER_SCRIPT, find_gguf
from treechat.providers.local.bundled_server.main import default_threads


def test_default_threads_leave_room_for_the_app() -> None:
    threads = default_threads()
    assert 1 <= threads <= 4
    assert threads <= max(1, (os.cpu_count() or 2) // 2)


def test_the_server_says_where_it_listens_and_ends_when_its_pipe_closes() -> None:
    with subprocess.Popen(
        [sys.executable, "-u", str(SERVER_SCRIPT), "--model", str(find_gguf()), "--name", "m",
         "--n-ctx", "256", "--threads", "1", "--parent-pid", str(os.getpid())],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    ) as child:
        try:
            assert child.stdout is not None and child.stdin is not None
            ready = json.loads(child.stdout.readline())
            assert ready["n_ctx"] == 256 and ready["model"] == "m" and ready["pid"] == child.pid
            with httpx.Client(trust_env=False, timeout=30) as http:
                base = f"http://{ready['host']}:{ready['port']}"
                assert http.get(f"{base}/health").json() == {"status": "ok"}
                assert http.get(f"{base}/v1/models").json()["data"][0]["id"] == "m"
            child.stdin.close()  # what the OS does when the app dies
            assert child.wait(timeout=30) == 0
            assert child.stderr is not None
            assert b"parent closed the pipe" in child.stderr.read()
        finally:
            if child.poll() is None:
                child.kill()
