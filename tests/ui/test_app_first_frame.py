"""The window's first real frame, in a real process: after a window closed on a chat, the next
start shows the chat list, the end of that chat, the message box with the keyboard and the
model's name in its first built frame, before DuckDB is even loaded; text typed at once stays
in that chat. A store changed since (a command wrote to it) is read instead, and its newer
message is shown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.services.store_life.first_frame import frame_path
from treechat.store.database import Store, default_store_path

pytestmark = pytest.mark.slow  # four launches of the window

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

# Opens the window on the data dir; at its first painted frame with real widgets, notes what
# that frame shows; types a word once the window is ready; closes once the chat is open.
DRIVER = """
import argparse, json, sys
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication
from treechat import app

seen = {}

def shown(window):
    chat = window.chat
    view = chat.model.view if chat is not None else None
    return {
        "duckdb": "duckdb" in sys.modules,
        "listed": window.sessions.model.session_count(),
        "chat": view.session.id if view is not None else None,
        "last": view.path[-1].text if view is not None and view.path else None,
        "on_screen": window.stack.currentWidget() is chat and chat is not None,
        "focus": QApplication.focusWidget() is window.composer.input,
        "model": window.composer.picker.currentText(),
    }

class First(QObject):
    def eventFilter(self, watched, event):
        if event.type() == QEvent.Type.Paint and watched.built and "first" not in seen:
            seen["first"] = shown(watched)
            watched.composer.input.insertPlainText("typed at once")
        return False

def painted(window):
    window.installEventFilter(First(window))
    timer = QTimer(window)
    def poll():
        if window.ready and window.chat is not None and window.chat.model.view is not None:
            seen["ready"] = shown(window)
            seen["box"] = window.composer.text()
            timer.stop()
            window.close()
    timer.timeout.connect(poll)
    timer.start(50)

args = argparse.Namespace(data_dir=sys.argv[1], session=None)
code = app.run(args, on_first_paint=painted)
print(json.dumps({"code": code, **seen}))
"""


def seed(data_dir: Path) -> Store:
    store = Store.open(default_store_path(data_dir))
    store.call(lambda r: r.create_sessions([
        Session(f"s{i}", f"Chat {i}", None, "m", 1.0, updated_at=1.0 + i) for i in range(3)]))
    nodes, prev = [], None
    for i in range(4):
        node = Node(f"n{i}", 0, 1.0, "s1", "user" if i % 2 == 0 else "assistant",
                    output=f"message {i}", predecessor=prev)
        nodes.append(node)
        prev = node.id
    store.call(lambda r: r.apply_change("s1", Change(tuple(nodes), prev), 9.0))
    return store


def launch(data_dir: Path) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(data_dir)], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    seen: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["code"] == 0
    return seen


def remember(data_dir: Path, session_id: str) -> None:
    (data_dir / "window.ini").write_text(
        f"[General]\nlast_session={session_id}\n\n[model]\nlast=openai/gpt-4o\n"
        "last_label=OpenAI \\xb7 GPT-4o\n")


def test_the_first_real_frame_carries_the_list_and_the_chat_the_window_closed_on(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    seed(data_dir).close()
    remember(data_dir, "s1")
    launch(data_dir)  # the window closes on the chat and keeps its first frame
    assert frame_path(default_store_path(data_dir)).exists()

    seen = launch(data_dir)
    first = seen["first"]
    assert first == {"duckdb": False, "listed": 3, "chat": "s1", "last": "message 3",
                     "on_screen": True, "focus": True, "model": first["model"]}
    assert first["model"]
    ready = seen["ready"]
    assert ready["chat"] == "s1" and ready["last"] == "message 3"
    assert seen["box"] == "typed at once"  # what was typed stays in that chat's box


def test_a_store_written_since_is_read_and_its_newer_message_shown(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    seed(data_dir).close()
    remember(data_dir, "s1")
    launch(data_dir)
    store = Store.open(default_store_path(data_dir))  # `treechat send` while it was closed
    later = Node("n4", 0, 2.0, "s1", "user", output="written by a command", predecessor="n3")
    store.call(lambda r: r.apply_change("s1", Change((later,), "n4"), time.time()))
    store.close()

    seen = launch(data_dir)
    first = seen["first"]
    assert first["last"] != "message 3"  # the old end is not shown
    assert seen["ready"]["last"] == "written by a command"


# Put before DRIVER: one more module among those the first frame imports, which finishes
# importing only once the window has handled an event posted at its first paint; notes on
# which thread the window's heavy modules were imported (a finder is asked first for each),
# printed after DRIVER's line.
GATE = """
import atexit, importlib.abc, importlib.util, json, sys, threading
from PySide6.QtCore import QTimer
from treechat import app

answered = threading.Event()
gate = {}

class Gate(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name in ("treechat.ui.composer.composer", "treechat.ui.chat.view"):
            gate.setdefault(name, threading.current_thread().name)
        return importlib.util.spec_from_loader(name, self) if name == "treechat._gate" else None
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        gate["answered_while_importing"] = answered.wait(120)

sys.meta_path.insert(0, Gate())
app._FIRST_FRAME = (*getattr(app, "_FIRST_FRAME", ()), "_gate")
run = app.run

def run_answering(args, qt_args=(), *, on_first_paint=None):
    def painted(window):
        QTimer.singleShot(0, answered.set)
        on_first_paint(window)
    return run(args, qt_args, on_first_paint=painted)

app.run = run_answering
atexit.register(lambda: print(json.dumps(gate)))
"""


def test_the_painted_window_answers_while_its_widgets_modules_load(tmp_path: Path) -> None:
    """The modules the built window and its first chat need are imported on a worker thread
    after the outline has painted, the window handling its events meanwhile: imported on the
    GUI thread they held it still for all that time."""
    data_dir = tmp_path / "data"
    seed(data_dir).close()
    remember(data_dir, "s1")
    proc = subprocess.run([sys.executable, "-c", GATE + DRIVER, str(data_dir)], cwd=ROOT,
                          env=ENV, capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    *_, shown, line = proc.stdout.strip().splitlines()
    seen, gate = json.loads(shown), json.loads(line)
    assert seen["code"] == 0 and seen["ready"]["chat"] == "s1"
    assert gate.get("answered_while_importing") is True
    assert gate["treechat.ui.composer.composer"] == "first-frame-imports"
    assert gate["treechat.ui.chat.view"] == "first-frame-imports"
