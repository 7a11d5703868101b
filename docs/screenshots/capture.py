"""Regenerates the screenshots in this folder: a store with a few dozen chats (one long chat
with code, tool calls and a retried reply), the window in light and dark, the empty state and
the /context dialog, and the first frame of the next start. Run under a display (Xvfb works):

    xvfb-run -s "-screen 0 1600x1000x24" .venv/bin/python docs/screenshots/capture.py
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtWidgets import QApplication

from treechat.app import connect_services, create_window, open_shell
from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.providers.keys import KeyStore
from treechat.services.bootstrap import build_services
from treechat.services.models.catalog import ModelChoice
from treechat.services.turns.events import TurnError
from treechat.store.database import Store, default_store_path
from treechat.ui.shell.event_loop import close_event_loop, create_event_loop

OUT = Path(__file__).resolve().parent
DAY = 86_400.0

TITLES = [
    "Refactor the DuckDB repository", "Trip plan: Lisbon in April", "Why is my Qt list slow?",
    "Sourdough starter schedule", "Explain attention like I'm five", "SQL window functions",
    "Birthday card for Mia", "Rust lifetimes vs. Python refs", "Kubernetes liveness probes",
    "Summarize the quarterly report", "Regex for ISO dates", "Garden layout for tomatoes",
    "Debugging a flaky pytest", "Compare three note-taking apps", "Draft a polite reminder",
    "Matrix inverse by hand", "Pick a name for the cat", "Tune PostgreSQL autovacuum",
    "Cover letter, data engineer", "What is a monad, really?", "Weekly meal prep ideas",
    "Convert Celsius table", "Git rebase vs merge", "Explain the Fourier transform",
    "Make this email shorter", "Plan a 5k training block", "Translate to Portuguese",
    "Outline a talk on CRDTs", "Fix my Dockerfile layers", "A very long title that goes on "
    "and on to show how the list elides text that does not fit",
]

LONG_CHAT = [
    ("user", "Our session list gets slow with thousands of rows. How should I build it in "
             "Qt so it stays fast?"),
    ("assistant", "Use **one model and one delegate** instead of a widget per row. A few "
                  "things matter most:\n\n1. `setUniformItemSizes(True)` lets the view skip "
                  "measuring every row.\n2. Keep `data()` cheap: precompute strings once.\n"
                  "3. Paint in the delegate; do not create widgets.\n\n```python\nclass "
                  "SessionListModel(QAbstractListModel):\n    def __init__(self, rows):\n"
                  "        super().__init__()\n        self._rows = rows\n\n    def rowCount("
                  "self, parent=QModelIndex()):\n        return len(self._rows)\n\n    def "
                  "data(self, index, role=Qt.DisplayRole):\n        if role == Qt.DisplayRole:"
                  "\n            return self._rows[index.row()].title\n```\n\nWith 5,000 rows "
                  "this opens in a few milliseconds."),
    ("user", "Can you check how the current code does it? The repository is in my workspace."),
]


def seed(data_dir: Path, now: float) -> str:
    store = Store.open(default_store_path(data_dir))
    sessions = []
    for i, title in enumerate(TITLES):
        when = now - i * DAY * 0.45 - 600
        sessions.append(Session(f"s{i:03d}", title, None, "anthropic/claude-sonnet-4-5", when,
                                updated_at=when))
    store.call(lambda r: r.create_sessions(sessions))
    for i, s in enumerate(sessions[1:], start=1):
        q = Node(f"q{i}", 0, s.created_at, s.id, "user", output=f"About: {s.title}")
        a = Node(f"a{i}", 0, s.created_at + 5, s.id, "assistant",
                 output=f"Here are some thoughts on {s.title.lower()}.", predecessor=q.id)
        store.call(lambda r, q=q, a=a, s=s: r.apply_change(s.id, Change((q, a), a.id),
                                                           s.updated_at))
    long_id = "long"
    store.call(lambda r: r.create_session(Session(
        long_id, "Keeping a Qt list fast", None, "anthropic/claude-sonnet-4-5", now - 300,
        updated_at=now - 60)))
    nodes: list[Node] = []
    prev: str | None = None
    for i, (role, text) in enumerate(LONG_CHAT):
        node = Node(f"l{i}", 0, now - 300 + i, long_id, role, output=text,  # type: ignore[arg-type]
                    predecessor=prev,
                    metadata={"model": "anthropic/claude-sonnet-4-5"} if role == "assistant"
                    else {})
        nodes.append(node)
        prev = node.id
    caller = Node("l-call", 0, now - 200, long_id, "assistant",
                  output="Let me look at the session list code.", predecessor=prev,
                  metadata={"model": "anthropic/claude-sonnet-4-5", "tool_calls": [
                      {"id": "call_1", "name": "read_file",
                       "arguments": '{"path": "desktop/treechat/ui/session_list.py"}'},
                      {"id": "call_2", "name": "search_files",
                       "arguments": '{"pattern": "setUniformItemSizes"}'}]})
    tool1 = Node("l-t1", 0, now - 199, long_id, "tool", name="read_file",
                 input={"path": "desktop/treechat/ui/session_list.py"},
                 output='"""The left column: New chat, a search field and the session list."""'
                        "\n\nclass SessionList(QFrame):\n    ...", caller=caller.id,
                 metadata={"tool_call_id": "call_1", "ok": True})
    tool2 = Node("l-t2", 0, now - 198, long_id, "tool", name="search_files",
                 input={"pattern": "setUniformItemSizes"},
                 output="desktop/treechat/ui/session_list.py:86: "
                        "self.view.setUniformItemSizes(True)", caller=caller.id,
                 metadata={"tool_call_id": "call_2", "ok": True})
    first = Node("l-r1", 0, now - 190, long_id, "assistant",
                 output="It already uses a model and a delegate.", predecessor=caller.id,
                 metadata={"model": "anthropic/claude-sonnet-4-5"})
    final = Node("l-r2", 0, now - 120, long_id, "assistant", predecessor=caller.id,
                 output="Good news: the list is already built the fast way.\n\n- It uses "
                        "`SessionListModel` (a `QAbstractListModel`) with a custom delegate.\n"
                        "- `setUniformItemSizes(True)` is on, so scrolling 5,000 rows only "
                        "measures one.\n- Search runs in DuckDB on the store's worker thread, "
                        "never on the GUI thread.\n\nOne improvement: debounce the search field "
                        "(it already waits 160 ms after the last key) and cap results at 500.",
                 metadata={"model": "anthropic/claude-sonnet-4-5"})
    nodes += [caller, tool1, tool2, first, final]
    store.call(lambda r: r.apply_change(long_id, Change(tuple(nodes), final.id), now - 60))
    store.close()
    return long_id


async def shoot(window: object, name: str, aio_wait: float = 0.6) -> None:
    await asyncio.sleep(aio_wait)
    QApplication.processEvents()
    path = OUT / f"{name}.png"
    window.grab().save(str(path))  # type: ignore[attr-defined]
    print("wrote", path)


async def scenario(app: QApplication, data_dir: Path, long_id: str) -> None:
    choices = (
        ModelChoice("anthropic/claude-sonnet-4-5", "Claude Sonnet 4.5", "anthropic"),
        ModelChoice("openai/gpt-4o", "GPT-4o", "openai"),
        ModelChoice("local/smollm2-135m-instruct", "SmolLM2 135M, local, offline", "local",
                    local=True),
    )
    services = build_services(data_dir, bundled=False, detect_local_servers=False,
                              extra_models=choices, keys=KeyStore(environ={}))
    services.models.default_model = "anthropic/claude-sonnet-4-5"
    window, prefs, theme = create_window(app, data_dir)
    window.resize(1280, 800)
    controller = connect_services(window, services, prefs, theme)
    window.show()
    await controller.start()
    window.sessions.select(long_id)
    await controller.load_session(long_id)
    window.dock.hide()
    for mode in ("light", "dark"):
        theme.set_mode(mode)
        await shoot(window, f"main-{mode}")
    theme.set_mode("light")
    controller.occupancy.open_dialog()
    await controller.tasks.idle()
    dialog = controller.occupancy.context_dialog
    assert dialog is not None
    await shoot(dialog, "context-breakdown")
    theme.set_mode("dark")
    await shoot(dialog, "context-breakdown-dark")
    dialog.close()
    theme.set_mode("light")
    window.banner.show_error(TurnError(
        "rate_limit", "The provider is limiting how often you can send requests. "
        "Try again in 12 seconds.", True, retry_after=12, action="wait"))
    await shoot(window, "error-banner")
    window.banner.dismiss()
    window.dock.show()
    await shoot(window, "inspector-dock")
    window.dock.hide()
    controller.new_chat()
    await shoot(window, "empty-state")
    window.sessions.search.setText("fast")
    window.sessions.flush_search()
    await controller.tasks.idle()
    await shoot(window, "search")
    controller.dialogs.open_settings()
    await controller.tasks.idle()
    assert controller.dialogs.settings_dialog is not None
    await shoot(controller.dialogs.settings_dialog, "settings")
    controller.dialogs.settings_dialog.close()
    window.save_geometry()  # as when the user closes it: the next start outlines this
    await controller.close()
    await services.close()
    services.close_store()
    window.close_now()
    shell, _prefs = open_shell(data_dir)  # the next start's first frame, before its widgets
    shell.show()
    await shoot(shell, "first-frame", aio_wait=0.2)
    shell.close_now()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", help="keep the seeded store here instead of a temp dir")
    args = parser.parse_args()
    app = QApplication(sys.argv[:1])
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(args.data_dir or tmp)
        long_id = seed(data_dir, time.time())
        loop = create_event_loop(app)
        try:
            loop.run_until_complete(scenario(app, data_dir, long_id))
        finally:
            close_event_loop(loop)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
