"""The chat view on real sessions: SessionService over a DuckDB file in tmp_path, rendered
offscreen, driven with real mouse clicks and key presses."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import shiboken6
from PySide6.QtCore import QPoint, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QAbstractItemView, QApplication
from pytestqt.qtbot import QtBot

from treechat.core import dag
from treechat.core.model import Node
from treechat.services.turns.events import TurnError
from treechat.services.turns.sessions import SessionService, SessionView
from treechat.store.database import Store
from treechat.ui.chat.model import RowKind
from treechat.ui.chat.view import ChatView

MODEL = "anthropic/claude-sonnet-4-5"

ANSWER_V1 = "Use `json.load` — it's fine for files that fit in memory."
ANSWER_V2 = """For big files, stream them instead of loading everything at once:

1. Install **ijson** (`pip install ijson`)
2. Iterate over the items you need:
   - `ijson.items(f, "item")` yields one object at a time
   - memory stays flat whatever the file size

```python
import ijson

def records(path: str):
    \"\"\"Yield each record of a top-level JSON array.\"\"\"
    with open(path, "rb") as fh:
        for item in ijson.items(fh, "item"):
            yield item  # one dict at a time
```

| Approach | Memory | Speed |
|---|---|---|
| `json.load` | whole file | fastest |
| `ijson.items` | one item | ~3× slower |
| `pandas.read_json(lines=True)` | chunked | fast |

> Tip: if you control the format, JSON Lines (`.jsonl`) is easier to stream.
"""
CODE = '''import ijson

def records(path: str):
    """Yield each record of a top-level JSON array."""
    with open(path, "rb") as fh:
        for item in ijson.items(fh, "item"):
            yield item  # one dict at a time'''
FINAL = """Your loader reads the whole file with `json.load`, which explains the memory spike. \
Here's a streaming version:

```diff
-    data = json.load(fh)
-    return [Config(**item) for item in data]
+    return [Config(**item) for item in ijson.items(fh, "item")]
```

Everything else in `config.py` can stay as it is."""
CONFIG_PY = """import json

from .model import Config


def load(path):
    with open(path) as fh:
        data = json.load(fh)
    return [Config(**item) for item in data]
"""
LONG_PATH = "/var/lib/app/cache/" + "a1b2c3d4e5f6" * 14 + ".json"


class Sample:
    """Ids of the nodes of the sample conversation."""

    session: str
    u1: str
    a1: str
    a1b: str
    u2: str
    step: str
    read: str
    grep: str
    final: str
    u3: str
    cut: str


async def add_tool(
    service: SessionService, session_id: str, caller: str, name: str, args: Any, result: str
) -> Node:
    node = Node(
        id=service.make_id(),
        seq=0,
        created_at=time.time(),
        session_id=session_id,
        role="tool",
        name=name,
        input=args,
        output=result,
        caller=caller,
        metadata={"tool_call_id": f"call_{name}"},
    )
    (stored,) = await service.store.run(lambda r: r.append_nodes([node]))
    return stored


async def build_sample(service: SessionService) -> Sample:
    """A chat with a retried answer (< 2/2 >), Markdown, tool calls, a long unbroken path
    and an interrupted reply."""
    meta = {"model": MODEL}
    ids = Sample()
    s = await service.create("Streaming JSON", MODEL)
    ids.session = s.id
    ids.u1 = (await service.append_message(
        s.id, "How do I parse a large JSON file in Python without loading it all into memory?"
    )).id
    ids.a1 = (await service.append_message(s.id, ANSWER_V1, role="assistant", metadata=meta)).id
    ids.a1b = (await service.append_message(
        s.id, ANSWER_V2, role="assistant", parent=ids.u1, use_parent=True, metadata=meta
    )).id
    ids.u2 = (await service.append_message(
        s.id, "Can you check how my project's config loader reads its files?"
    )).id
    calls = [{"id": "call_read_file", "name": "read_file",
              "arguments": {"path": "src/app/config.py"}}]
    ids.step = (await service.append_message(
        s.id, "", role="assistant", metadata={**meta, "tool_calls": calls}
    )).id
    ids.read = (await add_tool(service, s.id, ids.step, "read_file",
                               {"path": "src/app/config.py"}, CONFIG_PY)).id
    ids.grep = (await add_tool(
        service, s.id, ids.step, "grep", {"pattern": "json.load", "path": "src"},
        "src/app/config.py:7:        data = json.load(fh)\nsrc/app/cache.py:31:    return x\n",
    )).id
    ids.final = (await service.append_message(
        s.id, FINAL, role="assistant", parent=ids.step, use_parent=True, metadata=meta
    )).id
    ids.u3 = (await service.append_message(
        s.id, f"The log shows this path: {LONG_PATH} — is that normal?"
    )).id
    ids.cut = (await service.append_message(
        s.id, "That path is a content hash, so its length is expected. The cache is keyed by",
        role="assistant", metadata={**meta, "interrupted": True},
    )).id
    return ids


async def build_long(service: SessionService, count: int) -> str:
    """`count` alternating messages in one session, written in one transaction (the way an
    import lands), then read back through the service like any other session."""
    s = await service.create("Long session", "openai/gpt-4o")
    nodes: list[Node] = []
    previous: str | None = None
    now = time.time()
    for i in range(count):
        if i % 2 == 0:
            role, text, meta = "user", f"Question {i}: how does step {i} work? " + (
                "Please explain the details. " * (i % 5)), {}
        else:
            role, meta = "assistant", {"model": "openai/gpt-4o"}
            text = ANSWER_V2 if i % 20 == 1 else f"Answer {i}. " + (
                "This is one sentence of a longer reply. " * (5 + i % 20))
        node = Node(id=service.make_id(), seq=0, created_at=now + i, session_id=s.id,
                    role=role, output=text, predecessor=previous, metadata=meta)  # type: ignore[arg-type]
        nodes.append(node)
        previous = node.id
    change = dag.Change(tuple(nodes), previous)
    await service.store.run(lambda r: r.apply_change(s.id, change, now))
    return s.id


@pytest.fixture
def runner() -> Iterator[asyncio.Runner]:
    """A plain asyncio loop for the service calls: the view itself is synchronous, and a
    loop without Qt objects leaves nothing for a worker thread's garbage collection to
    destroy (Qt refuses to stop timers from another thread)."""
    with asyncio.Runner() as loop:
        yield loop


@pytest.fixture(autouse=True)
def collect_on_the_gui_thread() -> Iterator[None]:
    """Torn down last: collect the cycles the test left here, on the GUI thread."""
    yield
    gc.collect()


@pytest.fixture
def service(tmp_path: Path) -> Iterator[SessionService]:
    store = Store.open(tmp_path / "chat.duckdb")
    try:
        yield SessionService(store)
    finally:
        store.close()


@pytest.fixture
def chat(qtbot: QtBot) -> Iterator[ChatView]:
    view = ChatView()
    view.resize(900, 1400)
    view.show()
    qtbot.waitExposed(view)
    yield view
    view.close()
    # destroyed here, on the GUI thread: left to the garbage collector, the last reference
    # may go on a worker thread, which Qt refuses for an object owning timers
    shiboken6.delete(view)


@pytest.fixture
def sample(runner: asyncio.Runner, service: SessionService) -> Sample:
    return runner.run(build_sample(service))


def load(runner: asyncio.Runner, service: SessionService, session_id: str) -> SessionView:
    view: SessionView = runner.run(service.view(session_id))
    return view


def reveal(chat: ChatView, key: str, action: str) -> QPoint:
    """Scroll until the action's button is on screen; return its centre (viewport)."""
    bar = chat.list.verticalScrollBar()
    for _ in range(5):
        rect = chat.button_rect(key, action)
        assert not rect.isEmpty(), f"no {action} button on {key}"
        viewport = QRectF(chat.list.viewport().rect())
        if viewport.contains(rect):
            return rect.center().toPoint()
        bar.setValue(bar.value() + int(rect.center().y() - viewport.center().y()))
    raise AssertionError(f"{action} on {key} never came into view")


def click(chat: ChatView, key: str, action: str) -> None:
    point = reveal(chat, key, action)
    QTest.mouseMove(chat.list.viewport(), point)
    QTest.mouseClick(chat.list.viewport(), Qt.MouseButton.LeftButton,
                     Qt.KeyboardModifier.NoModifier, point)


def focus_row(chat: ChatView, key: str) -> None:
    chat.list.setFocus()
    chat.list.setCurrentIndex(chat.model.index(chat.model.index_of(key)))


# --- rows ---------------------------------------------------------------------------------


def test_rows_match_the_active_path(
    runner: asyncio.Runner, service: SessionService, sample: Sample, chat: ChatView
) -> None:
    view = load(runner, service, sample.session)
    chat.set_view(view)
    # the tool-only step is represented by its tool rows, which follow it on the path
    assert chat.row_keys() == [sample.u1, sample.a1b, sample.u2, sample.read, sample.grep,
                               sample.final, sample.u3, sample.cut]
    kinds = [r.kind for r in chat.model.rows]
    assert kinds == [RowKind.USER, RowKind.ASSISTANT, RowKind.USER, RowKind.TOOL, RowKind.TOOL,
                     RowKind.ASSISTANT, RowKind.USER, RowKind.ASSISTANT]
    read = chat.model.rows[3]
    assert read.label == "read_file" and read.arguments_summary == "path=src/app/config.py"
    assert read.starts_turn and read.model == "claude-sonnet-4-5"  # the reply header
    assert chat.model.rows[1].version == (2, 2)
    # every row reads out as text for screen readers
    assert chat.model.data(chat.model.index(1)).startswith("claude-sonnet-4-5 (version 2 of 2)")

    switched = runner.run(service.switch_version(sample.session, sample.a1b, 1))
    chat.set_view(switched)
    assert chat.row_keys() == [sample.u1, sample.a1]
    assert chat.model.rows[1].version == (1, 2)
    assert chat.at_bottom()


def test_a_tool_only_step_that_reasoned_shows_its_thinking_above_its_tools(
    runner: asyncio.Runner, service: SessionService, chat: ChatView
) -> None:
    async def build() -> tuple[str, str, str, str]:
        s = await service.create("Plot", MODEL)
        await service.append_message(s.id, "What does this plot show?")
        calls = [{"id": "py", "name": "python", "arguments": "import math\nprint(1)"}]
        step = await service.append_message(s.id, "", role="assistant", metadata={
            "model": MODEL, "tool_calls": calls, "reasoning": "Run code to confirm."})
        out = await add_tool(service, s.id, step.id, "python", "import math\nprint(1)", "1")
        await service.append_message(s.id, "A sine wave.", role="assistant",
                                     parent=step.id, use_parent=True, metadata={"model": MODEL})
        return s.id, step.id, out.id, "A sine wave."

    session, step, out, answer = runner.run(build())
    chat.set_view(load(runner, service, session))
    rows = chat.model.rows
    # the call's code is on its tool row only; its reasoning is not lost with its empty text
    assert [(r.kind, r.label) for r in rows][1:3] == [(RowKind.TOOL, "Thinking"),
                                                      (RowKind.TOOL, "python")]
    assert rows[1].text == "Run code to confirm." and rows[2].key == out
    assert rows[2].arguments_text == "import math\nprint(1)"
    assert step not in chat.row_keys()
    assert [r.text for r in rows if r.kind is RowKind.ASSISTANT] == [answer]


def test_version_arrows_emit_the_version_asked_for(
    runner: asyncio.Runner, service: SessionService, sample: Sample, chat: ChatView, qtbot:
    QtBot
) -> None:
    chat.set_view(load(runner, service, sample.session))
    asked: list[tuple[str, int]] = []
    chat.versionRequested.connect(lambda node, index: asked.append((node, index)))
    click(chat, sample.a1b, "next")  # already the last version: nothing to ask for
    assert asked == []
    click(chat, sample.a1b, "prev")
    assert asked == [(sample.a1b, 1)]

    chat.set_view(runner.run(service.switch_version(sample.session, sample.a1b, 1)))
    click(chat, sample.a1, "next")
    assert asked[-1] == (sample.a1, 2)
    # the keyboard does the same on the focused message
    focus_row(chat, sample.a1)
    with qtbot.waitSignal(chat.versionRequested) as signal:
        QTest.keyClick(chat.list, Qt.Key.Key_Right, Qt.KeyboardModifier.AltModifier)
    assert signal.args == [sample.a1, 2]


def test_retry_and_edit_are_disabled_while_a_turn_runs(
    runner: asyncio.Runner, service: SessionService, sample: Sample, chat: ChatView
) -> None:
    chat.set_view(load(runner, service, sample.session))
    retried: list[str] = []
    edited: list[tuple[str, str]] = []
    chat.retryRequested.connect(retried.append)
    chat.editRequested.connect(lambda node, text: edited.append((node, text)))

    chat.set_busy(True)
    click(chat, sample.final, "retry")
    click(chat, sample.u2, "edit")
    focus_row(chat, sample.final)
    QTest.keyClick(chat.list, Qt.Key.Key_R)
    assert retried == [] and edited == []
    assert chat.editor_for(sample.u2) is None

    chat.set_busy(False)
    click(chat, sample.final, "retry")
    assert retried == [sample.final]
    click(chat, sample.u2, "edit")
    editor = chat.editor_for(sample.u2)
    assert editor is not None and editor.text().startswith("Can you check")
    editor.set_text("Check the cache loader too, please.")
    chat.set_busy(True)  # a turn started elsewhere: sending the edit must wait
    assert not editor.send_button.isEnabled()
    QTest.mouseClick(editor.send_button, Qt.MouseButton.LeftButton)
    assert edited == []
    chat.set_busy(False)
    QTest.mouseClick(editor.send_button, Qt.MouseButton.LeftButton)
    assert edited == [(sample.u2, "Check the cache loader too, please.")]
    assert chat.editor_for(sample.u2) is None


def test_an_open_editor_keeps_its_text_when_the_view_is_redrawn(
     runner: asyncio.Runner, service: SessionService, sample: Sample, chat: ChatView
) -> None:
    chat.set_view(load(runner, service, sample.session))
    click(chat, sample.u3, "edit")
    editor = chat.editor_for(sample.u3)
    assert editor is not None
    editor.set_text("half-typed edit")
    chat.set_view(load(runner, service, sample.session))
    again = chat.editor_for(sample.u3)
    assert again is not None and again.text() == "half-typed edit"
    QTest.keyClick(again.text_edit, Qt.Key.Key_Escape)
    assert chat.editor_for(sample.u3) is None


def test_copy_puts_the_code_block_and_the_message_on_the_clipboard(
     runner: asyncio.Runner, service: SessionService, sample: Sample, chat: ChatView, qtbot:
    QtBot
) -> None:
    chat.set_view(load(runner, service, sample.session))
    clipboard = QGuiApplication.clipboard()
    clipboard.setText("")
    click(chat, sample.a1b, "code:0")
    assert clipboard.text() == CODE
    with qtbot.waitSignal(chat.copyRequested) as signal:
        click(chat, sample.a1b, "copy")
    assert signal.args == [sample.a1b]
    assert clipboard.text() == ANSWER_V2
    focus_row(chat, sample.u1)
    QTest.keyClick(chat.list, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert clipboard.text().startswith("How do I parse a large JSON file")


def test_streaming_text_appears_coalesced(
    runner: asyncio.Runner, service: SessionService, sample: Sample, chat: ChatView, qtbot:
    QtBot
) -> None:
    chat.set_view(load(runner, service, sample.session))
    chat.begin_stream(sample.u3, "claude-sonnet-4-5")
    # a retry of the last message: the interrupted reply makes way for the new one
    assert chat.row_keys()[-2:] == [sample.u3, "stream"]
    pieces = [f"word{i} " for i in range(300)]
    for piece in pieces:
        chat.append_stream_text(piece)
    assert chat.model.rows[-1].text == ""  # nothing painted synchronously per token
    qtbot.waitUntil(lambda: chat.model.rows[-1].text == "".join(pieces), timeout=3000)
    assert chat.repaint_count <= 2  # 300 deltas, coalesced into one or two repaints
    assert chat.at_bottom()
    chat.append_stream_text("\n\n```python\nprint('done')\n```\n")
    chat.end_stream()
    assert chat.model.rows[-1].text.endswith("```\n") and not chat.model.rows[-1].streaming
    # once the reply is a node, the view shows it instead of the stream
    reply = runner.run(service.append_message(sample.session, chat.model.rows[-1].text,
                                           role="assistant", parent=sample.u3, use_parent=True))
    chat.set_view(load(runner, service, sample.session))
    assert chat.row_keys()[-1] == reply.id and "stream" not in chat.row_keys()
    assert chat.model.rows[-1].version == (2, 2)


def test_a_step_committed_mid_stream_is_not_shown_twice(
    runner: asyncio.Runner, service: SessionService, sample: Sample, chat: ChatView,
    qtbot: QtBot,
) -> None:
    chat.set_view(load(runner, service, sample.session))
    chat.begin_stream(sample.u3, "claude-sonnet-4-5")
    chat.append_stream_text("Let me look at the cache first.")  # still buffered
    # the agent loop commits that text as a step with a tool call, then runs the tool
    step = runner.run(service.append_message(
        sample.session, "Let me look at the cache first.", role="assistant", parent=sample.u3,
        use_parent=True, metadata={"model": MODEL},
    ))
    tool = runner.run(add_tool(service, sample.session, step.id, "list_dir",
                               {"path": "/var/lib/app/cache"}, "a1b2.json\nc3d4.json\n"))
    chat.set_view(load(runner, service, sample.session))
    assert chat.row_keys()[-3:] == [step.id, tool.id, "stream"]
    assert chat.model.rows[-1].text == ""
    chat.append_stream_text("Two entries, both hashes.")
    qtbot.waitUntil(lambda: chat.model.rows[-1].text == "Two entries, both hashes.",
                    timeout=3000)
    # one reply: the header is drawn once, above the step
    assert [r.starts_turn for r in chat.model.rows[-3:]] == [True, False, False]


def test_interrupted_reply_is_marked_and_offers_retry(
    runner: asyncio.Runner, service: SessionService, sample: Sample, chat: ChatView, qtbot:
    QtBot
) -> None:
    chat.set_view(load(runner, service, sample.session))
    row = chat.model.rows[-1]
    assert row.key == sample.cut and row.interrupted
    assert "interrupted" in chat.model.data(chat.model.index(len(chat.model.rows) - 1))
    retry = chat.delegate.button(row, "retry")
    assert retry is not None and not retry.hover_only and retry.label == "Retry"
    layout = chat.delegate.layout(row)
    assert layout.badge is not None  # the "Interrupted" badge
    with qtbot.waitSignal(chat.retryRequested) as signal:
        click(chat, sample.cut, "retry")
    assert signal.args == [sample.cut]


def test_branch_pin_and_the_context_menu(
    runner: asyncio.Runner, service: SessionService, sample: Sample, chat: ChatView, qtbot:
    QtBot
) -> None:
    chat.set_view(load(runner, service, sample.session))
    with qtbot.waitSignal(chat.branchRequested) as branch:
        click(chat, sample.final, "branch")
    assert branch.args == [sample.final]
    with qtbot.waitSignal(chat.pinRequested) as pin:
        click(chat, sample.u1, "pin")
    assert pin.args == [sample.u1, True]
    chat.set_view(runner.run(service.annotate(sample.session, sample.u1, "pin")))
    row = chat.model.rows[0]
    button = chat.delegate.button(row, "pin")
    assert row.pinned and button is not None and button.active and not button.hover_only
    with qtbot.waitSignal(chat.pinRequested) as unpin:
        click(chat, sample.u1, "pin")
    assert unpin.args == [sample.u1, False]

    focus_row(chat, sample.u2)
    with qtbot.waitSignal(chat.branchRequested) as keyed:
        QTest.keyClick(chat.list, Qt.Key.Key_B)
    assert keyed.args == [sample.u2]
    chat.set_busy(True)
    menu = chat.context_menu(sample.u2)
    actions = {a.text(): a for a in menu.actions()}
    assert {"Copy", "Edit…", "Branch into a new chat", "Pin"} <= set(actions)
    assert not actions["Edit…"].isEnabled() and actions["Branch into a new chat"].isEnabled()
    with qtbot.waitSignal(chat.pinRequested) as from_menu:
        actions["Pin"].trigger()
    assert from_menu.args == [sample.u2, True]
    menu.deleteLater()


def test_ctrl_shift_c_opens_the_text_in_a_reader(
    runner: asyncio.Runner, service: SessionService, sample: Sample, chat: ChatView
) -> None:
    # (selecting in place, double click included, is in test_selection.py)
    chat.set_view(load(runner, service, sample.session))
    rect = chat.row_rect(sample.final)
    layout = chat.delegate.layout(chat.model.rows[chat.model.index_of(sample.final)])
    point = (rect.topLeft() + layout.body_origin + QPointF(20, 8)).toPoint()
    QTest.mouseMove(chat.list.viewport(), point)
    QTest.mouseClick(chat.list.viewport(), Qt.MouseButton.LeftButton,
                     Qt.KeyboardModifier.NoModifier, point)  # a plain click does nothing
    assert chat._reader is None
    focus_row(chat, sample.final)
    QTest.keyClick(chat.list, Qt.Key.Key_C,
                   Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    reader = chat._reader
    assert reader is not None and reader.isVisible()
    assert "Your loader reads the whole file" in reader.browser.toPlainText()
    assert "```" not in reader.browser.toPlainText()  # rendered, not raw
    reader.browser.selectAll()
    assert reader.browser.textCursor().selectedText().startswith("Your loader")
    focus_row(chat, sample.u1)
    QTest.keyClick(chat.list, Qt.Key.Key_C,
                   Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert reader.browser.toPlainText().startswith("How do I parse a large JSON file")
    reader.close()


def test_keyboard_moves_between_messages_and_keeps_the_current_one_in_view(
    runner: asyncio.Runner, service: SessionService, sample: Sample, chat: ChatView
) -> None:
    chat.resize(900, 400)
    chat.set_view(load(runner, service, sample.session))
    chat.list.setFocus()
    focus_row(chat, sample.cut)
    viewport = QRectF(chat.list.viewport().rect())
    for _ in range(len(chat.model.rows) - 1):
        QTest.keyClick(chat.list, Qt.Key.Key_Up)
        current = chat.list.currentIndex()
        assert viewport.intersects(QRectF(chat.list.visualRect(current)))
    assert chat.list.currentIndex().row() == 0
    assert chat.delegate.keyboard_focus  # the focus ring shows once the keyboard is used
    QTest.keyClick(chat.list, Qt.Key.Key_End)
    assert chat.at_bottom()


def test_tool_rows_expand_to_show_arguments_and_result(
    runner: asyncio.Runner, service: SessionService, sample: Sample, chat: ChatView
) -> None:
    chat.set_view(load(runner, service, sample.session))
    collapsed = chat.row_rect(sample.read).height()
    click(chat, sample.read, "toggle")
    row = chat.model.rows[chat.model.index_of(sample.read)]
    assert row.expanded
    layout = chat.delegate.layout(row)
    assert layout.result is not None and layout.result.document.toPlainText() == CONFIG_PY
    assert layout.args is not None and '"path": "src/app/config.py"' in (
        layout.args.document.toPlainText())
    assert chat.row_rect(sample.read).height() > collapsed + 100
    focus_row(chat, sample.read)
    QTest.keyClick(chat.list, Qt.Key.Key_Return)
    assert not chat.model.rows[chat.model.index_of(sample.read)].expanded
    assert chat.row_rect(sample.read).height() == collapsed


def test_turn_error_row_offers_its_action(
    runner: asyncio.Runner, service: SessionService, sample: Sample, chat: ChatView, qtbot:
    QtBot
) -> None:
    chat.set_view(load(runner, service, sample.session))
    chat.show_turn_error(TurnError("server", "The provider had a problem (HTTP 503).",
                                   retry=True, action="retry"))
    assert chat.row_keys()[-1] == "error"
    with qtbot.waitSignal(chat.retryRequested) as signal:
        click(chat, "error", "error:retry")
    assert signal.args == [sample.cut]
    chat.show_turn_error(TurnError("auth", "The API key was refused.", action="settings"))
    with qtbot.waitSignal(chat.settingsRequested):
        click(chat, "error", "error:settings")
    chat.begin_stream(sample.cut, "claude")
    assert "error" not in chat.row_keys()


def test_markdown_renders_in_the_view(
    runner: asyncio.Runner, service: SessionService, sample: Sample, chat: ChatView
) -> None:
    chat.set_view(load(runner, service, sample.session))
    body = chat.delegate.layout(chat.model.rows[1]).body
    assert body is not None
    doc = body.document
    assert [b.language for b in body.code_blocks] == ["python"]
    tables = [f for f in doc.rootFrame().childFrames() if f.__class__.__name__ == "QTextTable"]
    assert len(tables) == 1 and tables[0].rows() == 4 and tables[0].columns() == 3
    lists = {doc.findBlockByNumber(i).textList() for i in range(doc.blockCount())} - {None}
    assert len(lists) == 2  # the numbered list and the bullets inside it
    text = doc.toPlainText()
    assert "**" not in text and "Install ijson" in text


def test_very_long_messages_keep_inside_the_column(
    runner: asyncio.Runner, service: SessionService, chat: ChatView
) -> None:
    s = runner.run(service.create("Long", MODEL))
    unbroken = "x" * 20_000
    many_lines = "\n".join(f"line {i}" for i in range(3000))
    u = runner.run(service.append_message(s.id, unbroken))
    a = runner.run(service.append_message(s.id, f"```\n{'y' * 5000}\n```\n\n{unbroken}",
                                       role="assistant"))
    m = runner.run(service.append_message(s.id, many_lines))
    chat.set_view(load(runner, service, s.id))
    x, column = chat.delegate.column()
    viewport_width = chat.list.viewport().width()
    assert x >= 0 and x + column <= viewport_width
    for key in (u.id, a.id, m.id):
        index = chat.model.index_of(key)
        # rows off screen carry an estimate of their height until they come into view
        chat.list.scrollTo(chat.model.index(index), QAbstractItemView.ScrollHint.PositionAtTop)
        row = chat.model.rows[index]
        layout = chat.delegate.layout(row)
        assert layout.body is not None
        assert layout.body.natural_width <= column + 0.5
        assert layout.body.document.size().width() <= column + 0.5  # wrapped, not clipped
        assert chat.row_rect(key).height() == pytest.approx(layout.height, abs=1)
        # folded to a screenful, with a button to read the rest
        assert layout.fold == "collapsed" and chat.row_rect(key).height() < 900
        assert chat.delegate.button(row, "more") is not None
    user = chat.delegate.layout(chat.model.rows[0])
    assert user.bubble is not None and user.bubble.right() <= x + column + 0.5
    assert not chat.grab().isNull()  # paints without error

    folded = chat.row_rect(m.id).height()
    click(chat, m.id, "more")
    row = chat.model.rows[chat.model.index_of(m.id)]
    assert row.expanded and chat.delegate.layout(row).fold == "expanded"
    assert 3000 * 10 > chat.row_rect(m.id).height() > folded * 10  # up to what a view can hold
    assert not chat.grab().isNull()
    click(chat, m.id, "more")
    assert chat.row_rect(m.id).height() == folded


def test_stays_at_the_bottom_only_when_it_was_there(
    runner: asyncio.Runner, service: SessionService, sample: Sample, chat: ChatView
) -> None:
    chat.resize(900, 500)
    chat.set_view(load(runner, service, sample.session))
    assert chat.at_bottom()
    runner.run(service.append_message(sample.session, "one more question"))
    chat.set_view(load(runner, service, sample.session))
    assert chat.at_bottom()

    bar = chat.list.verticalScrollBar()
    bar.setValue(bar.maximum() // 3)
    top = chat.list.indexAt(QPoint(chat.list.viewport().width() // 2, 0))
    offset = chat.list.visualRect(top).top()
    runner.run(service.append_message(sample.session, "and a reply", role="assistant"))
    chat.set_view(load(runner, service, sample.session))
    assert not chat.at_bottom()
    assert chat.list.visualRect(top).top() == offset  # what was read stays put


def test_follows_light_and_dark_palettes(
    runner: asyncio.Runner, service: SessionService, sample: Sample, chat: ChatView
) -> None:
    chat.set_view(load(runner, service, sample.session))
    palette = QPalette(chat.palette())
    palette.setColor(QPalette.ColorRole.Base, QColor("#18181b"))
    palette.setColor(QPalette.ColorRole.Window, QColor("#1f1f22"))
    palette.setColor(QPalette.ColorRole.Text, QColor("#e6e6e6"))
    chat.setPalette(palette)
    QApplication.processEvents()
    assert chat.delegate.colors.dark and chat.delegate.theme.dark
    image = chat.grab().toImage()
    corner = image.pixelColor(2, 2)
    assert corner.lightnessF() < 0.2  # the list paints the dark base


def test_open_2000_messages_lays_out_lazily(
    runner: asyncio.Runner, service: SessionService, chat: ChatView, record_property: Any,
    capsys: pytest.CaptureFixture[str]
) -> None:
    session_id = runner.run(build_long(service, 2000))
    chat.resize(900, 800)
    QApplication.processEvents()
    started = time.perf_counter()
    view = load(runner, service, session_id)
    loaded = time.perf_counter()
    chat.set_view(view)
    chat.repaint()
    shown = time.perf_counter()
    # the end of the path is in the list, the rest comes in as it is scrolled up to
    assert 0 < len(chat.model.rows) < 2000 and chat.model.has_earlier()
    assert chat.row_keys()[-1] == view.path[-1].id
    assert chat.at_bottom()
    last = chat.row_rect(chat.row_keys()[-1])
    assert QRectF(chat.list.viewport().rect()).intersects(last)
    # only what is on (or next to) the screen was laid out for real
    measured = chat.measured_count()
    assert 0 < measured < 100
    open_ms = (shown - loaded) * 1000
    load_ms = (loaded - started) * 1000
    bare_ms = bare_list_open_ms([n.text for n in view.path])
    record_property("open_2000_messages_ms", round(open_ms, 1))
    record_property("load_2000_view_ms", round(load_ms, 1))
    record_property("bare_list_2000_ms", round(bare_ms, 1))
    with capsys.disabled():
        print(f"\nopen 2000 messages: view load {load_ms:.0f} ms, chat view {open_ms:.0f} ms "
              f"({measured} rows measured); a bare QListView of the same 2000 texts "
              f"{bare_ms:.0f} ms (ratio {open_ms / max(bare_ms, 0.1):.1f})")
    # scrolling to the top brings in the rows above a slice at a time, measures what comes
    # into view and keeps everything in order
    for _ in range(100):
        chat.list.verticalScrollBar().setValue(0)
        if not chat.model.has_earlier():
            break
    chat.list.verticalScrollBar().setValue(0)
    assert chat.row_keys() == [n.id for n in view.path]
    first = chat.row_rect(chat.row_keys()[0])
    assert first.top() <= 0 < first.bottom()
    assert chat.delegate.is_measured(chat.model.rows[0])


def on_screen(chat: ChatView) -> list[int]:
    """Indexes of the rows the viewport shows, top to bottom."""
    viewport = QRectF(chat.list.viewport().rect())
    return [i for i in range(len(chat.model.rows))
            if viewport.intersects(QRectF(chat.list.visualRect(chat.model.index(i))))]


def assert_exact_and_in_order(chat: ChatView) -> None:
    """Every row on screen has its laid-out height, and the rows touch without overlapping."""
    shown = on_screen(chat)
    assert shown
    bottom = None
    for i in shown:
        rect = chat.list.visualRect(chat.model.index(i))
        row = chat.model.rows[i]
        assert chat.delegate.is_measured(row), f"row {i} painted with a guessed height"
        assert rect.height() == int(chat.delegate.layout(row).height + 0.999)
        if bottom is not None:
            assert rect.top() == bottom + 1
        bottom = rect.bottom()


def open_long(runner: asyncio.Runner, service: SessionService, chat: ChatView, count: int,
              height: int) -> None:
    """A session of `count` messages shown in a view `height` pixels tall."""
    session_id = runner.run(build_long(service, count))
    chat.resize(900, height)
    QApplication.processEvents()
    chat.set_view(load(runner, service, session_id))


def test_a_long_session_opens_on_its_last_message_measuring_only_the_screen(
    runner: asyncio.Runner, service: SessionService, chat: ChatView
) -> None:
    open_long(runner, service, chat, 600, 700)
    viewport = chat.list.viewport().rect()
    last = chat.list.visualRect(chat.model.index(chat.model.rowCount() - 1))
    assert chat.at_bottom() and last.bottom() < viewport.bottom() + 1
    assert last.bottom() > viewport.bottom() - 40  # only the end margin below it
    assert_exact_and_in_order(chat)
    # what is off screen keeps its estimate until it is needed
    assert chat.measured_count() <= len(on_screen(chat)) + 2
    assert not chat.delegate.is_measured(chat.model.rows[0])


def test_scrolling_up_measures_rows_as_they_come_and_nothing_jumps(
    runner: asyncio.Runner, service: SessionService, chat: ChatView
) -> None:
    open_long(runner, service, chat, 400, 600)
    bar = chat.list.verticalScrollBar()
    for _ in range(60):  # wheel steps up through several screens of unmeasured rows
        top = chat.list.indexAt(QPoint(chat.list.viewport().width() // 2, 0)).row()
        before = chat.list.visualRect(chat.model.index(top)).top()
        bar.setValue(bar.value() - bar.singleStep())
        # the row that was at the top moved by exactly one step, however the heights
        # around it were corrected
        assert chat.list.visualRect(chat.model.index(top)).top() == before + bar.singleStep()
        assert_exact_and_in_order(chat)
    assert not chat.at_bottom()
    bar.setValue(bar.maximum() // 2)  # a jump lands on exact rows too
    assert_exact_and_in_order(chat)


def test_rows_off_screen_are_measured_once_the_view_is_quiet(
    runner: asyncio.Runner, service: SessionService, chat: ChatView, qtbot: QtBot
) -> None:
    open_long(runner, service, chat, 120, 600)
    rows = chat.model.rows
    assert chat.measured_count() < len(rows)
    qtbot.waitUntil(lambda: chat.measured_count() == len(rows), timeout=30_000)
    # the scroll bar now spans the real length, and the view stayed on the last message
    heights = sum(int(chat.delegate.layout(r).height + 0.999) for r in rows)
    bar = chat.list.verticalScrollBar()
    assert bar.maximum() + chat.list.viewport().height() == heights
    assert chat.at_bottom()
    assert_exact_and_in_order(chat)


def test_resizing_many_times_forgets_old_widths_and_rows_stay_exact(
    runner: asyncio.Runner, service: SessionService, chat: ChatView, qtbot: QtBot,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from treechat.ui.chat import heights as chat_heights

    monkeypatch.setattr(chat_heights, "HEIGHTS_KEPT", 50)
    open_long(runner, service, chat, 120, 600)
    rows = chat.model.rows
    qtbot.waitUntil(lambda: chat.measured_count() == len(rows), timeout=30_000)
    for width in range(700, 1000, 10):  # a window dragged wider, a pixel step at a time
        chat.resize(width, 600)
        QApplication.processEvents()
        assert_exact_and_in_order(chat)
    # heights for widths long gone are dropped; the current width's come back exact
    assert chat.delegate.remembered_heights() <= 50 + 2 * len(rows)
    chat.resize(700, 600)
    QApplication.processEvents()
    assert_exact_and_in_order(chat)
    qtbot.waitUntil(lambda: chat.measured_count() == len(rows), timeout=30_000)
    heights = sum(int(chat.delegate.layout(r).height + 0.999) for r in rows)
    bar = chat.list.verticalScrollBar()
    assert bar.maximum() + chat.list.viewport().height() == heights


def bare_list_open_ms(texts: list[str]) -> float:
    """The same texts in a plain QListView (word-wrapped, no delegate): the baseline a
    loaded machine slows down just as much, so the ratio means something."""
    from PySide6.QtCore import QStringListModel
    from PySide6.QtWidgets import QListView

    view = QListView()
    view.resize(900, 800)
    view.setWordWrap(True)
    view.setVerticalScrollMode(QListView.ScrollMode.ScrollPerPixel)
    view.show()
    QApplication.processEvents()
    started = time.perf_counter()
    view.setModel(QStringListModel(texts, view))
    view.doItemsLayout()
    view.scrollToBottom()
    view.repaint()
    elapsed = (time.perf_counter() - started) * 1000
    view.close()
    shiboken6.delete(view)
    return elapsed
