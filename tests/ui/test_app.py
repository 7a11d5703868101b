"""The composition root in a real process: the window paints before DuckDB and litellm are
loaded, `--data-dir` is honoured, SIGTERM shuts down cleanly (the store is released), and the
window comes back where it was left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from PySide6.QtNetwork import QLocalSocket
from PySide6.QtWidgets import QApplication

from treechat.app import create_window
from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.store.database import Store, default_store_path
from treechat.ui.shell.single_instance import server_name

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

DRIVER = """
import argparse, json, sys
from PySide6.QtCore import QTimer
from treechat import app

seen = {}

def painted(window):
    seen["litellm_at_paint"] = "litellm" in sys.modules
    seen["duckdb_at_paint"] = "duckdb" in sys.modules
    seen["controller_at_paint"] = window.ready
    timer = QTimer(window)

    def poll():
        if window.ready and window.sessions.model.session_count() == 3:
            seen["listed"] = [window.sessions.model.index(r).data()
                              for r in range(window.sessions.model.rowCount())]
        elif window.built and window._banner is not None and window.banner.isVisible():
            seen["title"] = window.empty_title.text()
            seen["banner"] = window.banner.message.text()
        else:
            return
        timer.stop()
        window.close()

    timer.timeout.connect(poll)
    timer.start(50)

args = argparse.Namespace(data_dir=sys.argv[1], session=None)
code = app.run(args, on_first_paint=painted)
print(json.dumps({"code": code, **seen}))
"""


def seed(data_dir: Path, n: int = 3) -> None:
    store = Store.open(default_store_path(data_dir))
    sessions = [Session(f"s{i}", f"Chat {i}", None, "m", 1000.0 + i, updated_at=1000.0 + i)
                for i in range(n)]
    store.call(lambda r: r.create_sessions(sessions))
    store.close()


def test_a_store_it_cannot_open_is_reported_in_the_window_and_left_alone(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    path = default_store_path(data_dir)
    path.write_bytes(b"this is not a database, but someone's file" * 100)
    before = path.read_bytes()
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(data_dir)], cwd=ROOT, env=ENV,
        capture_output=True, text=True, timeout=240, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["code"] == 2
    assert seen["title"] == "Treechat could not open your chats"
    assert str(path) in seen["banner"]
    assert path.read_bytes() == before  # refused, never overwritten


def test_paints_first_then_opens_the_store_and_lists_sessions(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    seed(data_dir)
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(data_dir)], cwd=ROOT, env=ENV,
        capture_output=True, text=True, timeout=240, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["code"] == 0
    assert seen["litellm_at_paint"] is False  # the window paints before litellm loads
    assert seen["duckdb_at_paint"] is False  # and before the store is even opened
    assert seen["controller_at_paint"] is False
    assert seen["listed"] == ["Today", "Chat 2", "Chat 1", "Chat 0"] or seen["listed"][1:] == [
        "Chat 2", "Chat 1", "Chat 0"]
    assert (data_dir / "window.ini").exists()  # prefs live beside the store


QUIT_DURING_BACKUP = """
import argparse, json, sys
from pathlib import Path
from PySide6.QtCore import QTimer
from treechat import app

backups = Path(sys.argv[1]) / "backups"

def painted(window):
    timer = QTimer(window)

    def poll():  # the window is closed while the start's backup copies the store
        if backups.is_dir() and any(backups.glob(".*.partial")):
            timer.stop()
            window.close()

    timer.timeout.connect(poll)
    timer.start(1)

args = argparse.Namespace(data_dir=sys.argv[1], session=None)
print(json.dumps({"code": app.run(args, on_first_paint=painted)}))
"""


def test_quitting_while_the_first_backup_is_written_closes_cleanly(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    store = Store.open(default_store_path(data_dir))
    nodes = [Node(id=f"n{i}", seq=0, created_at=1.0, session_id="s0", role="user",
                  output=os.urandom(10000).hex(), predecessor=f"n{i - 1}" if i else None)
             for i in range(1500)]
    store.call(lambda r: r.create_session(Session("s0", "Long", None, "m", 1.0, updated_at=1.0)))
    store.call(lambda r: r.apply_change("s0", Change(tuple(nodes), nodes[-1].id), 2.0))
    store.close()
    proc = subprocess.run(
        [sys.executable, "-c", QUIT_DURING_BACKUP, str(data_dir)], cwd=ROOT, env=ENV,
        capture_output=True, text=True, timeout=240, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"code": 0}
    assert "Traceback" not in proc.stderr
    assert not any((data_dir / "backups").glob(".*"))  # the half-written copy is gone
    store = Store.open(default_store_path(data_dir))
    try:
        assert len(store.call(lambda r: r.session_nodes("s0"))) == 1500
    finally:
        store.close()


def listening(name: str) -> bool:
    socket = QLocalSocket()
    socket.connectToServer(name)
    ok = socket.waitForConnected(200)
    socket.abort()
    return ok


def test_sigterm_shuts_down_cleanly_and_releases_the_store(
    tmp_path: Path, qapp: QApplication
) -> None:
    data_dir = tmp_path / "data"
    seed(data_dir)
    code = "import sys; from treechat.cli import main; raise SystemExit(main(sys.argv[1:]))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "--data-dir", str(data_dir)], cwd=ROOT, env=ENV,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 180
        while not listening(server_name(data_dir)):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the app never started listening"
            time.sleep(0.1)
        # wait until the store is open (the lock is taken) before asking it to stop
        time.sleep(3)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    store = Store.open(default_store_path(data_dir))  # not locked any more
    try:
        assert store.call(lambda r: r.drafts()) == ()
        assert len(store.call(lambda r: r.list_sessions())) == 3
    finally:
        store.close()
    assert not listening(server_name(data_dir))


def test_window_geometry_is_remembered(tmp_path: Path, qapp: QApplication) -> None:
    window, _prefs, _theme = create_window(qapp, tmp_path)
    window.show()
    window.resize(1000, 600)  # within the tests' offscreen screen (1366×768)
    window.dock.show()
    qapp.processEvents()
    window.close()  # the app is asked to close: geometry is saved first
    window.close_now()
    again, _prefs, _theme = create_window(qapp, tmp_path)
    try:
        assert (again.width(), again.height()) == (1000, 600)
        assert not again.dock.isHidden()
    finally:
        again.close_now()
        window.deleteLater()
        again.deleteLater()
