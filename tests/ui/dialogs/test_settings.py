"""Settings: keys are masked and tested with one tiny real request; saving applies the default
model, workspace, compaction thresholds and theme, and keeps them for the next start."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QLineEdit
from tests.support.loopback_server import LoopbackProvider

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.providers.keys import KeyStore
from treechat.services.preferences import SETTINGS_EMERGENCY, SETTINGS_SUMMARIZE
from treechat.store.database import Store
from treechat.ui.common.tasks import BackgroundTasks
from treechat.ui.dialogs.settings import SettingsDialog, SettingsValues, try_key

from ..conftest import BIG_MODEL, Aio, Desk, Seed


def dialog_for(provider: LoopbackProvider) -> SettingsDialog:
    values = SettingsValues(None, None, 0.8, 0.95, "system")
    return SettingsDialog(
        KeyStore(environ={}), ["openai", "anthropic"], [], values, tasks=BackgroundTasks(),
        tester=functools.partial(try_key, api_base=provider.openai_base),
    )


def test_keys_are_masked_and_tested_with_a_tiny_request(
    aio: Aio, loopback: LoopbackProvider
) -> None:
    dialog = dialog_for(loopback)
    field = dialog.key_fields["openai"]
    assert field.echoMode() == QLineEdit.EchoMode.Password
    assert field.accessibleName() == "OpenAI API key"

    async def scenario() -> None:
        dialog.open()
        QTest.keyClicks(field, "sk-test-123456")
        QTest.mouseClick(dialog.test_buttons["openai"], Qt.MouseButton.LeftButton)
        await aio.until(lambda: dialog.status_text("openai") not in ("", "Testing…"),
                        timeout=120)
        assert dialog.status_text("openai") == "The key works."
        loopback.fail_next(401)
        QTest.mouseClick(dialog.test_buttons["openai"], Qt.MouseButton.LeftButton)
        await aio.until(lambda: dialog.status_text("openai").startswith("Did not work"),
                        timeout=120)

    aio.run(scenario(), timeout=240)
    assert len(loopback.requests) == 2
    first = loopback.requests[0]
    assert first.body["max_tokens"] == 1  # the smallest request there is
    assert first.headers.get("authorization", first.headers.get("Authorization")) == (
        "Bearer sk-test-123456")
    assert "sk-test" not in dialog.status_text("openai")  # a key never shows up in text
    dialog.deleteLater()


def test_saving_applies_and_keeps_the_settings(
    desk_with: Callable[[Seed | None], Desk], aio: Aio, tmp_path: Path
) -> None:
    desk = desk_with(None)
    workspace = tmp_path / "work"
    workspace.mkdir()

    async def scenario() -> None:
        desk.controller.dialogs.open_settings()
        dialog = desk.controller.dialogs.settings_dialog
        assert dialog is not None and dialog.isVisible() and dialog.isModal()
        dialog.default_model.setCurrentIndex(dialog.default_model.findData(BIG_MODEL))
        dialog.workspace.setText(str(workspace))
        dialog.summarize_at.setValue(70)
        dialog.emergency_at.setValue(90)
        dialog.theme.setCurrentIndex(dialog.theme.findData("dark"))
        # a hosted provider's key is set as a connection, kept in the keychain
        page = dialog.connections_page
        assert page is not None
        page.add_button.click()
        editor = page.editor
        assert editor is not None
        editor.kind.setCurrentIndex(editor.kind.findData("hosted"))
        editor.provider.setCurrentIndex(editor.provider.findData("openai"))
        editor.key.setText("sk-saved-key")
        editor.save_button.click()
        await aio.until(lambda: page.editor is None, what="the connection to be saved")
        assert "OpenAI" in page.row_text("openai")
        dialog.save_button.click()
        await aio.until(lambda: not dialog.isVisible(), what="the dialog to close")
        await desk.controller.tasks.idle()

    aio.run(scenario())
    services = desk.services
    assert services.models.default_model == BIG_MODEL
    assert services.chat.config.workspace == workspace
    rules = services.engine.config.rules
    assert (rules.summarize_trigger, rules.emergency_trigger) == (0.70, 0.90)
    assert desk.theme.mode == "dark"
    assert desk.window.palette().color(QPalette.ColorRole.Window).lightness() < 80
    assert desk.prefs.value("theme") == "dark"
    saved = services.store.call(lambda r: (
        r.get_setting("default_model"), r.get_setting("workspace"),
        r.get_setting(SETTINGS_SUMMARIZE), r.get_setting(SETTINGS_EMERGENCY)))
    assert saved == (BIG_MODEL, str(workspace), 0.70, 0.90)
    assert services.keys.get_key("openai") == "sk-saved-key"
    # a provider with a key brings its models into the picker
    assert "openai/gpt-4o-mini" in desk.composer.model_ids()
    desk.theme.set_mode("light")


def test_a_new_chat_starts_on_the_default_model_chosen_in_settings(desk: Desk, aio: Aio) -> None:
    async def scenario() -> None:
        first = desk.composer.current_model()
        assert first is not None and first != BIG_MODEL
        desk.controller.new_chat()
        desk.composer.modelChanged.emit(first)  # once chosen in the picker of a new chat
        desk.controller.dialogs.open_settings()
        dialog = desk.controller.dialogs.settings_dialog
        assert dialog is not None
        dialog.default_model.setCurrentIndex(dialog.default_model.findData(BIG_MODEL))
        dialog.save_button.click()
        await aio.until(lambda: not dialog.isVisible(), what="the dialog to close")
        await desk.controller.tasks.idle()
        desk.controller.new_chat()
        assert desk.composer.current_model() == BIG_MODEL
        desk.composer.set_text("Which model am I talking to?")
        desk.composer.submit()
        await aio.until(lambda: not desk.composer.running and desk.requests() >= 1,
                        what="the reply")
        await desk.controller.tasks.idle()
        view = desk.controller.current_view
        assert view is not None and view.session.model == BIG_MODEL

    aio.run(scenario())


def test_a_search_model_chosen_in_settings_embeds_the_chats_again(
        desk_with: Callable[[Seed | None], Desk], aio: Aio) -> None:
    from tests.support.embedding_server import embedding_server

    def seed(store: Store) -> None:
        store.call(lambda r: r.create_sessions([Session("s", "Birds", None, "m", 1.0)]))
        node = Node("n1", 0, 1.0, "s", "user", output="The heron nests by the willow.")
        store.call(lambda r: r.apply_change("s", Change((node,), "n1"), 1.0))

    desk = desk_with(seed)
    with embedding_server() as server:
        async def scenario() -> None:
            connections = desk.services.connections
            assert connections is not None
            await connections.add("ollama", "lab", base_url=server.url)
            desk.controller.dialogs.open_settings()
            dialog = desk.controller.dialogs.settings_dialog
            assert dialog is not None
            combo = dialog.search_model
            assert combo.itemText(0) == "offline (built in)" and combo.currentIndex() == 0
            assert combo.count() == 1  # the servers are asked when the page is shown
            dialog.tabs.setCurrentIndex(next(i for i in range(dialog.tabs.count())
                                             if dialog.tabs.tabText(i) == "General"))
            await aio.until(lambda: combo.count() >= 2, what="the embedding models offered")
            names = [combo.itemText(i) for i in range(combo.count())]
            assert any(n.startswith("ollama:nomic-embed-text:latest@") for n in names)
            assert not any("llama3.2" in n for n in names)  # a chat model is not offered
            combo.setCurrentIndex(next(i for i, n in enumerate(names)
                                       if n.startswith("ollama:nomic-embed-text")))
            dialog.save_button.click()
            await aio.until(lambda: "and knowledge embedded"
                            in desk.window.statusBar().currentMessage(),
                            what="the chats embedded again")

        aio.run(scenario())
    search = desk.services.search
    assert search is not None
    chosen = search.search_model()
    assert chosen is not None and chosen.model == "nomic-embed-text:latest"
    assert any("heron" in t for r in server.requests if "input" in r for t in r["input"])
    assert ": 1 chat passage and knowledge" in desk.window.statusBar().currentMessage()
