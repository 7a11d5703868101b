"""One window per data folder: a second `treechat` hands over to the running window (which
comes to the front) and exits 0 without touching the store."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from treechat.ui.shell.single_instance import SingleInstance, may_be_running, server_name

from ..conftest import Aio, Desk

ROOT = Path(__file__).resolve().parents[3]


def launch(data_dir: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    code = "import sys; from treechat.cli import main; raise SystemExit(main(sys.argv[1:]))"
    return subprocess.Popen(
        [sys.executable, "-c", code, "--data-dir", str(data_dir), *extra],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_second_launch_raises_the_running_window_and_exits(desk: Desk, aio: Aio) -> None:
    instance = SingleInstance(server_name(desk.data_dir))
    assert instance.listen()
    instance.activated.connect(desk.window.bring_to_front)
    desk.window.showMinimized()
    assert desk.window.isMinimized()

    async def scenario() -> tuple[int, str]:
        second = launch(desk.data_dir)
        await aio.until(lambda: second.poll() is not None, what="the second launch to exit",
                        timeout=120)
        _, err = second.communicate()
        await aio.until(lambda: not desk.window.isMinimized(), what="the window to come up")
        return second.returncode, err

    try:
        code, err = aio.run(scenario(), timeout=150)
    finally:
        instance.close()
    assert code == 0, err
    assert "Traceback" not in err
    assert desk.window.isVisible()


def test_a_launch_for_another_folder_is_not_handed_over(tmp_path: Path, aio: Aio) -> None:
    first = SingleInstance(server_name(tmp_path / "one"))
    assert first.listen()
    try:
        assert not SingleInstance(server_name(tmp_path / "two")).hand_over()
        assert server_name(tmp_path / "one") != server_name(tmp_path / "two")
    finally:
        first.close()


def test_a_stale_socket_does_not_block_the_next_start(tmp_path: Path) -> None:
    name = server_name(tmp_path)
    # what a crashed run leaves behind: the socket file, with nobody listening
    stale = Path(name)
    leftover = socket.socket(socket.AF_UNIX)
    leftover.bind(str(stale))
    leftover.close()
    assert stale.exists()
    fresh = SingleInstance(name)
    assert not fresh.hand_over()
    assert fresh.listen() and fresh.listening
    fresh.close()


def test_a_start_knows_nobody_is_running_without_asking(tmp_path: Path) -> None:
    name = server_name(tmp_path)
    assert not may_be_running(name)  # no socket: the first start need not connect anywhere
    first = SingleInstance(name)
    assert first.listen()
    try:
        assert may_be_running(name)
        assert SingleInstance(name).hand_over()
    finally:
        first.close()
    assert not may_be_running(name)
