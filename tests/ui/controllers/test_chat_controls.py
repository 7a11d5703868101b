"""The chat's controls in the window, on the real services and the loopback provider: its
instructions and parameters reach the request, presets, cost per reply and per chat, the
Usage view, export, Thinking and Continue, pinned and favourite chats."""

from __future__ import annotations

import json
import os
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QMenu, QTableWidget, QWidget
from tests.support.loopback_server import Reply

from treechat.core.chat_settings import ChatParameters
from treechat.core.reply import continuation_of, reasoning_of
from treechat.store.database import Store
from treechat.ui.chat.model import THINKING_KEY
from treechat.ui.controllers.chat_controls import ChatControls
from treechat.ui.dialogs.chat_controls import (
    InstructionsDialog,
    ParametersDialog,
    Shown,
    UsageDialog,
)

from ..conftest import BIG_MODEL, Aio, Desk, chat_session

SHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"


def shoot(desk: Desk, name: str, widget: QWidget | None = None) -> None:
    """With TREECHAT_SCREENSHOTS=1 (on a real display), save `widget` (the window when not
    given) as docs/screenshots/controls-<name>-light.png and -dark.png."""
    if os.environ.get("TREECHAT_SCREENSHOTS") != "1":
        return
    from PySide6.QtWidgets import QApplication

    for mode in ("light", "dark"):
        desk.theme.set_mode(mode)
        for _ in range(5):
            QApplication.processEvents()
        (widget or desk.window).grab().save(str(SHOTS / f"controls-{name}-{mode}.png"))
    desk.theme.set_mode("light")


def cell(table: QTableWidget, row: int, column: int) -> str:
    item = table.item(row, column)
    assert item is not None
    return item.text()


def controls(desk: Desk) -> ChatControls:
    found = desk.window.findChild(ChatControls, "ChatControls")
    assert isinstance(found, ChatControls)
    return found


def send(desk: Desk, text: str) -> None:
    desk.composer.input.setFocus()
    desk.composer.set_text(text)
    QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)


async def turn_done(desk: Desk, aio: Aio, requests: int) -> None:
    await aio.until(lambda: desk.requests() >= requests
                    and not desk.controller.turns.is_running(), what="turn end")
    await desk.controller.tasks.idle()


def system_of(body: dict[str, object]) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    return "\n".join(str(m["content"]) for m in messages if m["role"] == "system")


def test_instructions_from_the_header_reach_the_next_request_only(desk: Desk, aio: Aio) -> None:
    c = controls(desk)
    desk.provider.queue(Reply(text="one"), Reply(text="two"))

    async def scenario() -> None:
        send(desk, "Hello")
        await turn_done(desk, aio, 1)
        c.instructions_button.click()
        await aio.until(lambda: isinstance(c.dialog, InstructionsDialog), what="editor")
        dialog = c.dialog
        assert isinstance(dialog, InstructionsDialog)
        assert "rewrites the cached prefix" in dialog.note.text()
        assert "next request" in dialog.note.text()
        dialog.editor.setPlainText("Answer like a pirate.")
        shoot(desk, "instructions", dialog)
        dialog._save()
        await desk.controller.tasks.idle()
        send(desk, "Again")
        await turn_done(desk, aio, 2)

    aio.run(scenario())
    first, second = desk.provider.requests[0].body, desk.provider.requests[1].body
    assert "Answer like a pirate." not in system_of(first)
    assert "Answer like a pirate." in system_of(second)
    sid = desk.controller.current_session_id
    assert sid is not None
    history = aio.run(desk.services.chat.settings.history(sid))
    assert [h.instructions for h in history] == ["Answer like a pirate."]


def test_instructions_from_the_chat_lists_menu_and_global_ones(
    desk_with: object, aio: Aio
) -> None:
    def seed(store: Store) -> None:
        chat_session(store, "s1", "Trip plans", 1_700_000_000.0, ["hi", "hello"])

    desk = desk_with(seed)  # type: ignore[operator]
    c = controls(desk)
    menu = QMenu()
    desk.window.sessions.menuRequested.emit("s1", menu)
    labels = [a.text() for a in menu.actions()]
    assert "Instructions…" in labels and "Pin to top" in labels
    next(a for a in menu.actions() if a.text() == "Instructions…").trigger()

    async def scenario() -> None:
        await aio.until(lambda: isinstance(c.dialog, InstructionsDialog), what="editor")
        assert c.dialog is not None and "Trip plans" in c.dialog.windowTitle()
        desk.window.settings_action.trigger()
        button = c.extend_settings()
        assert button is not None and button.text() == "Global instructions…"
        button.click()
        await aio.until(lambda: c.dialog is not None
                        and c.dialog.windowTitle() == "Global instructions", what="global")
        dialog = c.dialog
        assert isinstance(dialog, InstructionsDialog)
        dialog.editor.setPlainText("Use metric units.")
        dialog._save()
        await desk.controller.tasks.idle()

    aio.run(scenario())
    assert aio.run(desk.services.chat.settings.global_instructions()) == "Use metric units."


def test_parameters_show_only_what_the_model_takes_and_are_sent(desk: Desk, aio: Aio) -> None:
    c = controls(desk)
    desk.provider.queue(Reply(text="one"), Reply(text="two"))

    async def scenario() -> None:
        send(desk, "Hello")
        await turn_done(desk, aio, 1)
        c.parameters_button.click()
        await aio.until(lambda: isinstance(c.dialog, ParametersDialog), what="parameters")
        dialog = c.dialog
        assert isinstance(dialog, ParametersDialog)
        # an OpenAI-compatible model litellm cannot place: the common three, no reasoning
        assert set(dialog.rows) == {"temperature", "top_p", "max_tokens"}
        row = dialog.rows["temperature"]
        row.check.setChecked(True)
        row.editor.setValue(0.3)  # type: ignore[attr-defined]
        mt = dialog.rows["max_tokens"]
        mt.check.setChecked(True)
        mt.editor.setValue(321)  # type: ignore[attr-defined]
        shoot(desk, "parameters", dialog)
        dialog._save()
        await aio.until(lambda: not dialog.isVisible(), what="saved")
        send(desk, "Again")
        await turn_done(desk, aio, 2)

    aio.run(scenario())
    first, second = desk.provider.requests[0].body, desk.provider.requests[1].body
    assert "temperature" not in first
    assert second["temperature"] == 0.3
    assert second.get("max_tokens", second.get("max_completion_tokens")) == 321
    assert "reasoning_effort" not in second


def test_new_chat_from_a_preset_and_presets_export_and_import(
    desk: Desk, aio: Aio, tmp_path: Path
) -> None:
    c = controls(desk)
    target = tmp_path / "mine.json"

    async def scenario() -> None:
        await c.fill_presets()
        names = [a.text() for a in c.preset_menu.actions()]
        assert "Code reviewer" in names or len(names) >= 3, names
        next(a for a in c.preset_menu.actions() if a.isEnabled()).trigger()
        await aio.until(lambda: desk.controller.current_session_id is not None, what="chat")
        await desk.controller.tasks.idle()
        sid = desk.controller.current_session_id
        assert sid is not None
        settings = await desk.services.chat.settings.current(sid)
        assert settings.preset == names[0] and settings.instructions
        assert desk.window.title.text() == names[0]

        dialog = c.export_presets()
        dialog.selectFile(str(target))
        dialog.accept()
        await aio.until(target.exists, what="export file")
        await desk.controller.tasks.idle()
        data = json.loads(target.read_text("utf-8"))
        data["presets"] = [dict(data["presets"][0], name="My own")]
        target.write_text(json.dumps(data), "utf-8")
        dialog = c.import_presets()
        dialog.selectFile(str(target))
        dialog.accept()
        await aio.until(lambda: bool(imported), what="import")
        await c.fill_presets()

    imported: list[int] = []
    c.presetsImported.connect(imported.append)
    aio.run(scenario())
    assert imported == [1]
    assert "My own" in [a.text() for a in c.preset_menu.actions()]


def test_each_reply_says_its_tokens_and_cost_and_the_header_the_chats_total(
    desk: Desk, aio: Aio
) -> None:
    c = controls(desk)
    # litellm prices gpt-4o (the loopback serves it)
    desk.composer.picker.setCurrentIndex(desk.composer.model_ids().index(BIG_MODEL))
    desk.provider.queue(Reply(text="A priced answer."))

    async def scenario() -> None:
        send(desk, "What does this cost?")
        await turn_done(desk, aio, 1)
        sid = desk.controller.current_session_id
        assert sid is not None
        await aio.until(lambda: bool(c.costs), what="costs")
        await c.estimate(sid)

    aio.run(scenario())
    sid = desk.controller.current_session_id
    assert sid is not None
    reply = desk.chat.model.rows[-1].node
    assert reply is not None
    cost = c.costs[reply.id]
    rec = desk.provider.requests[0]
    assert cost.input_tokens == rec.prompt_tokens and cost.output_tokens == rec.output_tokens
    assert cost.priced and cost.cost_usd > 0
    tip = c.reply_text(reply.id)
    # what hovering the reply shows
    assert c.tooltip_at(desk.chat.row_rect(reply.id).center().toPoint()) == tip
    assert f"{rec.prompt_tokens:,} tokens in" in tip and "$" in tip
    total = aio.run(desk.services.chat.spending.chat_total(sid))
    assert total.cost_usd == cost.cost_usd
    assert c.cost_label.text().startswith("$")
    assert c.estimate_label.text().startswith("next ≈ $")
    shoot(desk, "cost")

    usage = c.open_usage()
    assert isinstance(usage, UsageDialog)
    aio.run(desk.controller.tasks.idle())
    assert usage.tables["day"].rowCount() == 1
    assert cell(usage.tables["model"], 0, 0) == "Loopback GPT-4o"  # as the picker names it
    assert usage.tables["model"].item(0, 0).toolTip().endswith("gpt-4o")
    assert cell(usage.tables["session"], 0, 0) == desk.window.title.text()
    shoot(desk, "usage", usage)


def test_an_unpriced_model_says_so(desk: Desk, aio: Aio) -> None:
    c = controls(desk)
    desk.provider.queue(Reply(text="free?"))

    async def scenario() -> None:
        send(desk, "Hello")
        await turn_done(desk, aio, 1)
        await aio.until(lambda: bool(c.costs), what="costs")
        sid = desk.controller.current_session_id
        assert sid is not None
        await c.estimate(sid)

    aio.run(scenario())
    reply = desk.chat.model.rows[-1].node
    assert reply is not None
    assert "unpriced" in c.reply_text(reply.id)
    assert c.cost_label.text() == "unpriced"
    assert c.estimate_label.text() == "next: unpriced"
    usage = c.open_usage()
    aio.run(desk.controller.tasks.idle())
    assert cell(usage.tables["day"], 0, 5) == "unpriced"
    assert "unpriced" in usage.note.text()


def test_export_chat_and_all_chats_from_the_file_menu(
    desk: Desk, aio: Aio, tmp_path: Path
) -> None:
    c = controls(desk)
    desk.provider.queue(Reply(text="Exported answer"))
    written: list[str] = []
    c.exported.connect(written.append)

    async def scenario() -> None:
        send(desk, "Export me")
        await turn_done(desk, aio, 1)
        dialog = c.export_chat()
        assert dialog is not None and dialog.isVisible()  # open(): the loop runs on
        dialog.selectNameFilter("JSON, every branch (*.json)")
        dialog.selectFile(str(tmp_path / "one.json"))
        dialog.accept()
        await aio.until(lambda: len(written) == 1, what="chat export")
        every = c.export_all()
        every.selectNameFilter("Markdown (*.md)")
        every.selectFile(str(tmp_path / "all.md"))
        every.accept()
        await aio.until(lambda: len(written) == 2, what="all export")

    aio.run(scenario())
    doc = json.loads((tmp_path / "one.json").read_text("utf-8"))
    assert "Exported answer" in json.dumps(doc)
    assert "Export me" in (tmp_path / "all.md").read_text("utf-8")


def test_thinking_is_shown_apart_and_a_cut_reply_continues_joined(desk: Desk, aio: Aio) -> None:
    c = controls(desk)
    desk.provider.queue(
        Reply(text="The first half", reasoning="Let me think it through.", finish="length"),
        Reply(text=" and the rest."),
    )

    said: list[str] = []
    desk.window.statusBar().messageChanged.connect(said.append)

    async def scenario() -> None:
        send(desk, "Tell me")
        await turn_done(desk, aio, 1)
        assert "Thinking…" in said  # while the reasoning streamed

    aio.run(scenario())
    partial = desk.chat.model.rows[-1].node
    assert partial is not None
    assert reasoning_of(partial) == "Let me think it through."
    assert "Let me think" not in partial.output
    rows = desk.chat.model.rows
    thinking = rows[-2]
    assert thinking.key == THINKING_KEY + partial.id and thinking.label == "Thinking"
    assert thinking.text == "Let me think it through." and not thinking.expanded
    assert thinking.starts_turn and not rows[-1].starts_turn  # one reply: Thinking, answer
    desk.chat.trigger(thinking.key, "toggle")
    assert desk.chat.model.rows[-2].expanded
    assert c.continue_action.isEnabled()
    menu = desk.chat.context_menu(partial.id)
    labels = [a.text() for a in menu.actions()]
    assert "Show thinking…" in labels and "Continue this reply" in labels
    next(a for a in menu.actions() if a.text() == "Show thinking…").trigger()
    assert c.dialog is not None and c.dialog.objectName() == "ThinkingDialog"
    shoot(desk, "thinking", c.dialog)
    c.dialog.close()
    next(a for a in menu.actions() if a.text() == "Continue this reply").trigger()
    aio.run(turn_done(desk, aio, 2))
    view = desk.controller.current_view
    assert view is not None
    last = view.path[-1]
    assert continuation_of(last) == partial.id
    assert view.path[-2].id == partial.id  # appended after the partial reply
    assert not c.continue_action.isEnabled()
    # drawn joined: the continuation carries on the reply, no header of its own
    joined = desk.chat.model.rows[-1]
    assert joined.key == last.id and not joined.starts_turn
    shoot(desk, "continued")


def test_pinned_chats_come_first_and_favourites_filter(desk_with: object, aio: Aio) -> None:
    def seed(store: Store) -> None:
        chat_session(store, "old", "Oldest chat", 1_600_000_000.0, ["a", "b"])
        chat_session(store, "mid", "Middle chat", 1_650_000_000.0, ["a", "b"])
        chat_session(store, "new", "Newest chat", 1_700_000_000.0, ["a", "b"])

    desk = desk_with(seed)  # type: ignore[operator]
    c = controls(desk)
    model = desk.window.sessions.model

    def titles() -> list[str]:
        return [str(model.index(i).data()) for i in range(model.rowCount())]

    menu = QMenu()
    desk.window.sessions.menuRequested.emit("old", menu)
    next(a for a in menu.actions() if a.text() == "Pin to top").trigger()
    aio.run(aio.until(lambda: titles()[:2] == ["Pinned", "Oldest chat"], what="pinned"))
    menu = QMenu()
    desk.window.sessions.menuRequested.emit("old", menu)
    assert "Unpin" in [a.text() for a in menu.actions()]
    menu = QMenu()
    desk.window.sessions.menuRequested.emit("mid", menu)
    next(a for a in menu.actions() if a.text() == "Add to favourites").trigger()
    aio.run(desk.controller.tasks.idle())
    shoot(desk, "pinned")
    c.favourites_button.setChecked(True)
    aio.run(aio.until(lambda: "Newest chat" not in titles(), what="filter"))
    assert [t for t in titles() if t.endswith("chat")] == ["★ Middle chat"]
    c.favourites_button.setChecked(False)
    aio.run(aio.until(lambda: "Newest chat" in titles(), what="filter off"))
    assert aio.run(desk.services.chat.settings.listed())[0].session.id == "old"


def test_a_reasoning_model_gets_reasoning_effort_and_loses_what_it_does_not_take(
    desk: Desk, aio: Aio
) -> None:
    caps = aio.run(desk.services.chat.capabilities("openai/o3-mini"))
    dialog = ParametersDialog("openai/o3-mini", ChatParameters(reasoning_effort="high"),
                              Shown.of(caps), parent=desk.window)
    assert set(dialog.rows) == {"temperature", "max_tokens", "reasoning_effort"}
    assert dialog.values()["reasoning_effort"] == "high"
    assert dialog.values()["temperature"] is None  # unticked: not sent
    dialog.show()
    shoot(desk, "parameters-reasoning", dialog)
    dialog.close()


def test_the_parameters_dialog_names_the_model_as_the_picker_does(desk: Desk, aio: Aio) -> None:
    c = controls(desk)
    desk.provider.queue(Reply(text="one"))

    async def scenario() -> None:
        send(desk, "Hello")
        await turn_done(desk, aio, 1)
        c.parameters_button.click()
        await aio.until(lambda: isinstance(c.dialog, ParametersDialog), what="parameters")

    aio.run(scenario())
    dialog = c.dialog
    assert isinstance(dialog, ParametersDialog)
    shown = desk.composer.picker.currentText()
    assert shown == "Loopback"
    assert f"the parameters {shown} takes" in dialog.note.text()
    assert "openai/loopback-model" not in dialog.note.text()
    # /context names it the same way, once
    assert desk.controller.models.selected_label() == shown


def test_a_model_on_this_computer_is_free_not_unpriced(desk: Desk, aio: Aio) -> None:
    from treechat.services.models.catalog import ModelChoice

    local = "openai/loopback-local"
    catalog = desk.services.models
    catalog.extra = (*catalog.extra, ModelChoice(local, "Loopback local", "openai",
                                                 api_base=desk.provider.openai_base,
                                                 local=True))
    c = controls(desk)
    desk.provider.queue(Reply(text="free!"))

    async def scenario() -> None:
        await desk.controller.models.refresh()
        desk.composer.picker.setCurrentIndex(desk.composer.model_ids().index(local))
        send(desk, "Hello")
        await turn_done(desk, aio, 1)
        await aio.until(lambda: bool(c.costs), what="costs")
        sid = desk.controller.current_session_id
        assert sid is not None
        await c.refresh_costs(sid)
        await c.estimate(sid)

    aio.run(scenario())
    reply = desk.chat.model.rows[-1].node
    assert reply is not None
    tip = c.reply_text(reply.id)
    assert "free" in tip and "unpriced" not in tip and "Loopback local" in tip
    assert c.cost_label.text() == "free"
    assert c.estimate_label.text() == "next: free"
    shoot(desk, "free")
    usage = c.open_usage()
    aio.run(desk.controller.tasks.idle())
    assert cell(usage.tables["model"], 0, 0) == "Loopback local"
    assert usage.tables["model"].item(0, 0).toolTip() == local
    assert cell(usage.tables["model"], 0, 5) == "free"
    assert "1 request to models on this computer cost nothing" in usage.note.text()
    assert "unpriced" not in usage.note.text()


def test_the_bundled_model_shows_its_reply_cap_ticked_and_it_can_be_changed(
    desk: Desk, aio: Aio
) -> None:
    from treechat.services.models.catalog import BUNDLED_ID, BUNDLED_REPLY_CAP

    cap = desk.services.models.default_reply_cap(BUNDLED_ID)
    assert cap == BUNDLED_REPLY_CAP
    # the bundled model takes what any llama.cpp server does: the common three
    caps = aio.run(desk.services.chat.capabilities("openai/loopback-model"))
    dialog = ParametersDialog(desk.controller.models.label_for(BUNDLED_ID), ChatParameters(),
                              Shown.of(caps), parent=desk.window, default_max_tokens=cap)
    row = dialog.rows["max_tokens"]
    assert row.check.isChecked() and row.editor.value() == BUNDLED_REPLY_CAP  # type: ignore[attr-defined]
    assert row.editor.isEnabled()
    # left as it is, nothing is stored: the chat keeps following its model's default
    assert dialog.values()["max_tokens"] is None
    dialog.show()
    shoot(desk, "parameters-bundled", dialog)
    row.editor.setValue(2000)  # type: ignore[attr-defined]
    assert dialog.values()["max_tokens"] == 2000
    dialog.close()
    # another model: unticked, its own default
    other = ParametersDialog("Loopback", ChatParameters(), Shown.of(caps), parent=desk.window,
                             default_max_tokens=desk.services.models.default_reply_cap(
                                 "openai/loopback-model"))
    assert not other.rows["max_tokens"].check.isChecked()
    other.close()


def test_export_starts_in_documents_and_markdown_writes_the_files_beside_it(
    desk: Desk, aio: Aio, tmp_path: Path
) -> None:
    from PySide6.QtCore import QStandardPaths

    from treechat.core.attachments import with_attachments
    from treechat.services.attachments import AttachmentService, prepare_bytes

    c = controls(desk)
    store = desk.services.store

    async def scenario() -> str:
        files = [prepare_bytes(b"a,b\n1,2\n", "data.csv")]
        service = AttachmentService(store, desk.services.engine.counter)
        await service.save(files)
        sessions = desk.services.chat.sessions
        session = await sessions.create(title="With a file")
        await sessions.append_message(session.id, "see this",
                                      metadata=with_attachments({}, service.refs(files)))
        await desk.controller.session_list.reload()
        await desk.controller.load_session(session.id)
        dialog = c.export_chat()
        assert dialog is not None
        documents = Path(QStandardPaths.writableLocation(
            QStandardPaths.StandardLocation.DocumentsLocation))
        offered = Path(dialog.directory().absolutePath())
        assert offered == (documents if documents.is_dir() else Path.home())
        assert offered != Path.cwd()
        dialog.reject()
        return await c.write_chat(session.id, str(tmp_path / "chat.md"), "md", "branch")

    written = aio.run(scenario())
    assert (tmp_path / "chat files" / "data.csv").read_bytes() == b"a,b\n1,2\n"
    assert "see this" in Path(written).read_text("utf-8")
    assert "1 attached file" in desk.window.statusBar().currentMessage()


def test_a_local_model_litellm_prices_is_free_in_every_label(desk: Desk, aio: Aio) -> None:
    """A model on this computer whose name litellm has a price for (a local server serving
    a model under a hosted name): free in the reply's tooltip, the header and by Send, never
    "$0" in one place and "free" in another."""
    from treechat.services.models.catalog import ModelChoice

    local = "openai/gpt-4o-mini"
    catalog = desk.services.models
    catalog.extra = (*catalog.extra, ModelChoice(local, "Mini on this computer", "openai",
                                                 api_base=desk.provider.openai_base,
                                                 local=True))
    c = controls(desk)
    desk.provider.queue(Reply(text="local and free"))

    async def scenario() -> None:
        await desk.controller.models.refresh()
        desk.composer.picker.setCurrentIndex(desk.composer.model_ids().index(local))
        send(desk, "Hello")
        await turn_done(desk, aio, 1)
        await aio.until(lambda: bool(c.costs), what="costs")
        sid = desk.controller.current_session_id
        assert sid is not None
        await c.refresh_costs(sid)
        await c.estimate(sid)

    aio.run(scenario())
    reply = desk.chat.model.rows[-1].node
    assert reply is not None
    assert "free (runs on this computer)" in c.reply_text(reply.id)
    assert c.cost_label.text() == "free"
    assert c.estimate_label.text() == "next: free"
