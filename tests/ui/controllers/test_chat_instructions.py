"""A chat's instructions and parameters and the global instructions in the window, on the
real services and the loopback provider: what is saved reaches the next request only, and
the parameters dialog shows what the model takes."""

from __future__ import annotations

from PySide6.QtWidgets import QMenu, QPushButton
from tests.support.loopback_server import Reply

from treechat.core.chat_settings import ChatParameters
from treechat.store.database import Store
from treechat.ui.dialogs.chat_controls import (
    InstructionsDialog,
    ParametersDialog,
    Shown,
)

from ..conftest import Aio, Desk, chat_session
from .controls_desk import controls, send, shoot, system_of, turn_done


def test_instructions_from_the_header_reach_the_next_request_only(desk: Desk, aio: Aio) -> None:
    c = controls(desk)
    desk.provider.queue(Reply(text="one"), Reply(text="two"))

    async def scenario() -> None:
        send(desk, "Hello")
        await turn_done(desk, aio, 1)
        c.instructions.instructions_button.click()
        await aio.until(lambda: isinstance(c.instructions.dialog, InstructionsDialog),
                        what="editor")
        dialog = c.instructions.dialog
        assert isinstance(dialog, InstructionsDialog)
        assert "rewrites the cached prefix" in dialog.note.text()
        assert "next request" in dialog.note.text()
        occupancy = desk.controller.occupancy
        await aio.until(lambda: occupancy.record is not None, what="the record")
        assert occupancy.record is not None
        before = occupancy.record.breakdown_dict()["system"]
        dialog.editor.setPlainText("Answer like a pirate.")
        shoot(desk, "instructions", dialog)
        dialog._save()
        # the ring, the Context tab and /context describe the next request: it carries them
        await aio.until(lambda: occupancy.record is not None
                        and occupancy.record.breakdown_dict()["system"] > before,
                        what="the saved instructions counted")
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
        await aio.until(lambda: isinstance(c.instructions.dialog, InstructionsDialog),
                        what="editor")
        shown = c.instructions.dialog
        assert shown is not None and "Trip plans" in shown.windowTitle()
        desk.window.settings_action.trigger()
        button = c.instructions.extend_settings()
        assert button is not None and button.text() == "Global instructions…"
        button.click()
        await aio.until(lambda: c.instructions.dialog is not None
                        and c.instructions.dialog.windowTitle() == "Global instructions",
                        what="global")
        dialog = c.instructions.dialog
        assert isinstance(dialog, InstructionsDialog)
        dialog.editor.setPlainText("Use metric units.")
        dialog._save()
        await desk.controller.tasks.idle()

    aio.run(scenario())
    assert aio.run(desk.services.chat.settings.global_instructions()) == "Use metric units."


def test_settings_opened_from_a_banner_offers_the_global_instructions_too(desk: Desk) -> None:
    """The first-run banner's "Open settings" (and the chat's settings link) open the same
    Settings dialog as the menu; its General page has the global instructions' row, which
    the chat's instructions editor points to (it had the row only when the menu opened it)."""
    controls(desk)
    desk.controller.dialogs.open_settings()  # as the banner's button does
    dialog = desk.controller.dialogs.settings_dialog
    assert dialog is not None
    try:
        buttons = dialog.findChildren(QPushButton, "GlobalInstructionsButton")
        assert [b.text() for b in buttons] == ["Global instructions…"]
    finally:
        dialog.close()
    desk.window.settings_action.trigger()  # the menu's again: still one row
    dialog = desk.controller.dialogs.settings_dialog
    assert dialog is not None
    try:
        assert len(dialog.findChildren(QPushButton, "GlobalInstructionsButton")) == 1
    finally:
        dialog.close()


def test_parameters_show_only_what_the_model_takes_and_are_sent(desk: Desk, aio: Aio) -> None:
    c = controls(desk)
    desk.provider.queue(Reply(text="one"), Reply(text="two"))

    async def scenario() -> None:
        send(desk, "Hello")
        await turn_done(desk, aio, 1)
        c.instructions.parameters_button.click()
        await aio.until(lambda: isinstance(c.instructions.dialog, ParametersDialog),
                        what="parameters")
        dialog = c.instructions.dialog
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
        c.instructions.parameters_button.click()
        await aio.until(lambda: isinstance(c.instructions.dialog, ParametersDialog),
                        what="parameters")

    aio.run(scenario())
    dialog = c.instructions.dialog
    assert isinstance(dialog, ParametersDialog)
    shown = desk.composer.picker.currentText()
    assert shown == "Loopback"
    assert f"the parameters {shown} takes" in dialog.note.text()
    assert "openai/loopback-model" not in dialog.note.text()
    # /context names it the same way, once
    assert desk.controller.models.selected_label() == shown


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
