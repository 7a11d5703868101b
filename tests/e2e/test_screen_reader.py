"""The window as a screen reader reads it, over AT-SPI in a session of the test's own (Xvfb,
a D-Bus session bus, Qt's accessibility bridge): with a chat open, the Inspector and
Settings showing, every control is named, the messages are list items with their text, the
graph's nodes are items of the graph, and a finished reply is announced."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.accessibility_session import SYSTEM_PYTHON, accessibility_session, missing

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "tests" / "support" / "screen_reader_app.py"
READER = ROOT / "tests" / "support" / "atspi_reader.py"
# Controls a person operates: each must say what it is.
CONTROLS = {"push button", "toggle button", "check box", "radio button", "combo box",
            "spin button", "slider", "page tab", "menu item", "list item", "table cell",
            "entry", "password text"}

pytestmark = pytest.mark.slow


def walk(node: dict[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[dict[str, Any],
                                                                             tuple[str, ...]]]:
    here = (*path, f"{node['role']}:{node['name']}")
    yield node, here
    for child in node["children"]:
        yield from walk(child, here)


def find(tree: dict[str, Any], role: str, name: str) -> dict[str, Any]:
    for node, _ in walk(tree):
        if node["role"] == role and node["name"] == name:
            return node
    raise AssertionError(f"no {role} named {name!r} in the tree")


class Window:
    def __init__(self, env: dict[str, str], data: Path) -> None:
        child_env = {**env, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "desktop")]),
                     "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        self.env = env
        self.proc = subprocess.Popen([sys.executable, str(APP), str(data)], env=child_env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     cwd=str(ROOT))
        self.expect("ready", 120)

    def expect(self, word: str, timeout: float) -> None:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise AssertionError(f"the window ended before saying {word!r}")
            if line.strip() == word:
                return
        raise AssertionError(f"the window did not say {word!r}")

    def say(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def reader(self, verb: str, *extra: str) -> subprocess.Popen[str]:
        """The reader, run by the system's python (pyatspi is the distribution's)."""
        return subprocess.Popen(
            [str(SYSTEM_PYTHON), str(READER), verb, str(self.proc.pid), *extra],
            env=self.env, stdout=subprocess.PIPE, text=True)

    def tree(self) -> dict[str, Any]:
        with self.reader("tree") as reader:
            out, _ = reader.communicate(timeout=120)
        assert reader.returncode == 0, "the accessibility tree could not be read"
        found: dict[str, Any] = json.loads(out)
        return found

    def close(self) -> None:
        if self.proc.poll() is None:
            self.say("quit")
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


def test_a_screen_reader_reads_the_window_and_hears_a_finished_reply(tmp_path: Path) -> None:
    assert not missing(), f"install the Debian packages {missing()} (make test does)"
    with accessibility_session(tmp_path / "home") as env:
        window = Window(env, tmp_path / "data")
        try:
            tree = window.tree()
            deadline = time.monotonic() + 60
            while len(find(tree, "list", "History graph")["children"]) < 5:
                assert time.monotonic() < deadline, "the graph's nodes never became items"
                time.sleep(0.5)
                tree = window.tree()
            assert tree["role"] == "application" and tree["name"] == "Treechat"

            conversation = find(tree, "list", "Conversation")
            said = [n["name"] for n in conversation["children"] if n["role"] == "list item"]
            assert said[0] == "You: Tell me about a dragon"
            assert said[1].startswith("Assistant (version 1 of 2): It breathes fire.")
            assert said[-1].endswith("Its name is Ember.")

            graph = find(tree, "list", "History graph")
            nodes = [n for n in graph["children"] if n["role"] == "list item"]
            assert [n["name"] for n in nodes] == [
                "You · Tell me about a dragon", "Assistant · It breathes fire.",
                "Assistant · It sleeps on gold.", "You · What is its name?",
                "Assistant · Its name is Ember."]
            assert "version 2 of 2" in nodes[2]["description"]
            assert "HEAD" in nodes[-1]["description"]

            settings = find(tree, "dialog", "Settings")
            tabs = [n["name"] for n, _ in walk(settings) if n["role"] == "page tab"]
            assert tabs == ["Connections", "General", "Tools", "Sync"]
            assert find(settings, "push button", "Save")["showing"]
            for tab in ("Graph", "Context"):
                find(tree, "page tab", tab)

            unnamed = [" > ".join(path[-3:]) for node, path in walk(tree)
                       if node["role"] in CONTROLS and node["showing"]
                       and not (node["name"] or node.get("text"))]
            assert unnamed == []

            listener = window.reader("listen", "60")
            assert listener.stdout is not None
            assert listener.stdout.readline().strip() == "listening"
            window.say("send Tell me more about Ember")
            window.expect("finished", 120)
            heard = json.loads(listener.stdout.readline())
            listener.terminate()
            listener.wait(timeout=10)
            listener.stdout.close()
            assert heard["type"] == "object:announcement"
            assert heard["text"] == ("Reply from Loopback finished. Ember is a small red "
                                     "dragon who sleeps in a cave.")
        finally:
            window.close()
