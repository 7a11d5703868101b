"""Settings → Connections and the model picker on the real stack: servers on 127.0.0.1 that
speak OpenAI's and Ollama's wire formats are added through the dialog, their models picked
in the picker and a message sent; local servers passed to the detector appear in the picker
without opening Settings and are marked unreachable once they stop; bad input is refused in
the service's words, and a server that never answers leaves the window responsive."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMessageBox, QPushButton
from tests.support.loopback_server import LoopbackProvider
from tests.support.model_servers import OllamaModel, OllamaServer, OpenAIServer
from tests.ui.conftest import Aio, Desk, close_desk

from treechat.app import connect_services, create_window
from treechat.providers.keys import KeyStore
from treechat.providers.local.server_detection import LocalServers, ServerSpec
from treechat.services.bootstrap import build_services
from treechat.ui.dialogs.connections_page import ConnectionsPage

LAB_KEY = "sk-lab-0123456789"

Opener = Callable[..., Desk]


@pytest.fixture
def open_window(
    qapp: QApplication, aio: Aio, tmp_path: Path, loopback: LoopbackProvider
) -> Iterator[Opener]:
    """The window on real services with no preset models: only what the user adds, or
    what the detector finds among `probe` (nothing is probed unless given)."""
    from treechat.providers import llm

    aio.run(llm.ensure_loaded(), timeout=300)
    opened: list[Desk] = []

    def make(probe: tuple[ServerSpec, ...] = ()) -> Desk:
        services = build_services(
            tmp_path / "data", bundled=False, detect_local_servers=False,
            local_servers=LocalServers(probe) if probe else None,
            keys=KeyStore(environ={}),
        )
        window, prefs, theme = create_window(qapp, tmp_path / "data")
        controller = connect_services(window, services, prefs, theme)
        window.show()
        aio.run(controller.start())
        desk = Desk(window, controller, services, loopback, prefs, theme, aio, tmp_path)
        opened.append(desk)
        return desk

    try:
        yield make
    finally:
        for desk in opened:
            close_desk(desk)


def settings_page(desk: Desk) -> ConnectionsPage:
    desk.controller.dialogs.open_settings()
    dialog = desk.controller.dialogs.settings_dialog
    assert dialog is not None and dialog.connections_page is not None
    return dialog.connections_page


async def add_through_dialog(
    desk: Desk, kind: str, url: str, *, key: str = "", headers: str = "", wait: bool = True
) -> ConnectionsPage:
    page = settings_page(desk)
    page.add_button.click()
    editor = page.editor
    assert editor is not None and editor.isVisible()
    editor.kind.setCurrentIndex(editor.kind.findData(kind))
    editor.url.setText(url)
    if key:
        editor.key.setText(key)
    editor.headers.setText(headers)
    editor.save_button.click()
    if wait:
        await desk.aio.until(lambda: page.editor is None, what="the connection to be saved")
    return page


def close_settings(desk: Desk) -> None:
    dialog = desk.controller.dialogs.settings_dialog
    assert dialog is not None
    dialog.reject()


async def pick(desk: Desk, search: str) -> str:
    """Choose a model the way a user does: open the picker, type, press Enter."""
    picker = desk.composer.picker
    await desk.aio.until(lambda: any(search in m for m in desk.composer.model_ids()),
                         what=f"{search} in the picker")
    picker.setFocus()
    QTest.keyClicks(picker, search)  # typing on the closed picker opens it, filtered
    popup = picker.popup
    assert popup.isVisible() and popup.search.text() == search
    visible = popup.visible_items()
    assert visible and all(search in (i.data(0, Qt.ItemDataRole.AccessibleTextRole) or "")
                           for i in visible)
    QTest.keyClick(popup.search, Qt.Key.Key_Return)
    assert not popup.isVisible()
    chosen = desk.composer.current_model()
    assert chosen is not None and search in chosen
    return str(chosen)


async def send(desk: Desk, text: str) -> None:
    desk.composer.set_text(text)
    desk.composer.submit()
    await desk.aio.until(lambda: not desk.composer.running and len(desk.chat.model.rows) >= 2,
                         what="the reply")
    await desk.controller.tasks.idle()


def choice(desk: Desk, model_id: str) -> Any:
    return next(c for c in desk.controller.models.choices if c.id == model_id)


def test_an_openai_compatible_server_added_by_its_url_alone(
    open_window: Opener, aio: Aio
) -> None:
    lab = OpenAIServer([{"id": "lab-model", "object": "model", "context_length": 32_768}])
    desk = open_window()

    async def scenario() -> None:
        page = await add_through_dialog(desk, "openai-compatible", lab.url)
        (conn,) = desk.services.models.connections.saved()
        assert "Ready · 1 model" in page.row_text(conn.id)
        close_settings(desk)
        model = await pick(desk, "lab-model")
        assert model == f"{conn.id}/lab-model"
        shown = choice(desk, model)
        assert shown.label == desk.services.models.display_name(model)
        assert "32K" in desk.composer.models.item(
            desk.composer.picker.currentIndex()).data(Qt.ItemDataRole.UserRole + 3)
        await send(desk, "hello lab")

    try:
        aio.run(scenario())
        (hit,) = lab.chat_hits()
        assert hit.authorization is None  # no key: no Authorization header at all
        (request,) = [r for r in lab.requests if r.path.endswith("/chat/completions")]
        assert request.body["model"] == "lab-model"
        assert "hello lab" in str(request.body["messages"])
        record = desk.controller.occupancy.record
        assert record is not None and record.window == 32_768  # the server's own window
        session = desk.controller.current_view
        assert session is not None and session.session.model.endswith("/lab-model")
    finally:
        lab.stop()


def test_each_chat_keeps_the_model_it_was_given(open_window: Opener, aio: Aio) -> None:
    lab = OpenAIServer([{"id": "alpha-model", "object": "model"},
                        {"id": "beta-model", "object": "model"}])
    desk = open_window()

    async def scenario() -> None:
        await add_through_dialog(desk, "openai-compatible", lab.url)
        close_settings(desk)
        alpha = await pick(desk, "alpha-model")
        await send(desk, "first chat")
        first = desk.controller.current_session_id
        desk.controller.new_chat()
        beta = await pick(desk, "beta-model")
        await send(desk, "second chat")
        second = desk.controller.current_session_id
        assert first and second and first != second
        await desk.controller.load_session(first)
        await aio.until(lambda: desk.composer.current_model() == alpha,
                        what="the first chat's model")
        await desk.controller.load_session(second)
        await aio.until(lambda: desk.composer.current_model() == beta,
                        what="the second chat's model")

    try:
        aio.run(scenario())
        assert [r.body["model"] for r in lab.requests
                if r.path.endswith("/chat/completions")] == ["alpha-model", "beta-model"]
    finally:
        lab.stop()


def test_a_connection_edited_to_a_new_address_then_removed(
    open_window: Opener, aio: Aio
) -> None:
    old = OpenAIServer([{"id": "old-model", "object": "model"}])
    new = OpenAIServer([{"id": "new-model", "object": "model"}])
    desk = open_window()

    async def scenario() -> None:
        page = await add_through_dialog(desk, "openai-compatible", old.url)
        (conn,) = desk.services.models.connections.saved()
        await aio.until(lambda: any(m.endswith("/old-model") for m in desk.composer.model_ids()))
        page.select(conn.id)
        page.edit_button.click()
        editor = page.editor
        assert editor is not None and not editor.kind.isEnabled()  # the kind stays
        assert editor.url.text().startswith(old.url)
        editor.url.setText(new.url)
        editor.save_button.click()
        await aio.until(lambda: page.editor is None, what="the edit to be saved")
        assert "Ready · 1 model" in page.row_text(conn.id) and new.url in page.row_text(conn.id)
        await aio.until(lambda: any(m.endswith("/new-model") for m in desk.composer.model_ids()),
                        what="the new server's model in the picker")
        page.select(conn.id)
        page.remove_button.click()
        confirm_removal(page)
        await aio.until(lambda: "removed" in page.status.text(), what="the removal")
        assert page.row_text(conn.id) == ""
        assert desk.services.models.connections.saved() == ()
        await aio.until(lambda: not any("new-model" in m for m in desk.composer.model_ids()),
                        what="the picker to drop it")

    try:
        aio.run(scenario())
    finally:
        old.stop()
        new.stop()


def confirm_removal(page: Any) -> None:
    box = page.confirmation
    assert isinstance(box, QMessageBox) and box.isVisible()
    (remove,) = [b for b in box.buttons() if b.text() == "Remove"]
    remove.click()


def test_enter_after_test_removes_nothing_and_removal_asks_first(
    open_window: Opener, aio: Aio
) -> None:
    server = OpenAIServer([{"id": "kept-model", "object": "model"}])
    desk = open_window()

    async def scenario() -> None:
        page = await add_through_dialog(desk, "openai-compatible", server.url)
        (conn,) = desk.services.models.connections.saved()
        dialog = desk.controller.dialogs.settings_dialog
        assert dialog is not None
        dialog.activateWindow()
        page.select(conn.id)
        page.test_button.setFocus()
        QTest.mouseClick(page.test_button, Qt.MouseButton.LeftButton)
        await aio.until(lambda: page.test_button.isEnabled() and "Testing" not in
                        page.status.text(), what="the test")
        buttons = dialog.findChildren(QPushButton)
        assert not any(b.isDefault() for b in buttons if b is not dialog.save_button)
        focused = QApplication.focusWidget()
        QTest.keyClick(focused if focused is not None else dialog, Qt.Key.Key_Return)
        await aio.settle(0.3)
        assert page.confirmation is None
        assert [c.id for c in desk.services.models.connections.saved()] == [conn.id]

        if not dialog.isVisible():  # Enter saved Settings and closed it: open it again
            page = settings_page(desk)
        page.select(conn.id)
        page.remove_button.click()
        box = page.confirmation
        assert isinstance(box, QMessageBox) and box.isVisible()
        assert box.defaultButton() is box.button(QMessageBox.StandardButton.Cancel)
        QTest.keyClick(box, Qt.Key.Key_Return)  # Enter is Cancel
        await aio.settle(0.2)
        assert [c.id for c in desk.services.models.connections.saved()] == [conn.id]
        page.remove_button.click()
        confirm_removal(page)
        await aio.until(lambda: desk.services.models.connections.saved() == (),
                        what="the removal")

    try:
        aio.run(scenario())
    finally:
        server.stop()


def test_a_server_that_wants_a_key_gets_it_from_the_keychain(
    open_window: Opener, aio: Aio
) -> None:
    lab = OpenAIServer([{"id": "secure-model", "object": "model"}], required_key=LAB_KEY)
    desk = open_window()

    async def scenario() -> None:
        page = await add_through_dialog(desk, "openai-compatible", lab.url, key=LAB_KEY,
                                        headers="X-Team: blue")
        (conn,) = desk.services.models.connections.saved()
        assert conn.has_key
        assert "Ready" in page.row_text(conn.id)
        assert LAB_KEY not in page.row_text(conn.id) and LAB_KEY not in page.status.text()
        page.select(conn.id)
        page.test_button.click()
        await aio.until(lambda: "answered" in page.status.text(), what="the test to pass")
        close_settings(desk)
        await pick(desk, "secure-model")
        await send(desk, "hello secure")

    try:
        aio.run(scenario())
        hits = lab.chat_hits()
        assert hits and all(h.authorization == f"Bearer {LAB_KEY}" for h in hits)
        assert all(h.headers.get("X-Team", h.headers.get("x-team")) == "blue" for h in hits)
        stored = desk.services.store.call(lambda r: r.get_setting("connections"))
        assert LAB_KEY not in str(stored)  # the key is in the keychain, never the store
    finally:
        lab.stop()


def test_an_ollama_server_with_its_own_window(open_window: Opener, aio: Aio) -> None:
    ollama = OllamaServer([OllamaModel("llama3.2:3b", context_length=65_536)])
    desk = open_window()

    async def scenario() -> None:
        page = await add_through_dialog(desk, "ollama", ollama.url)
        (conn,) = desk.services.models.connections.saved()
        assert "Ready · 1 model" in page.row_text(conn.id)
        close_settings(desk)
        model = await pick(desk, "llama3.2")
        assert desk.controller.models.label_for(model) == "Ollama · llama3.2:3b"
        await send(desk, "hello llama")
        reply = desk.chat.model.rows[-1]
        assert reply.model == "Ollama · llama3.2:3b"  # the reply under the picker's name

    try:
        aio.run(scenario())
        assert ollama.chats and all(
            not any(k.lower() == "authorization" for k in c.headers) for c in ollama.chats)
        record = desk.controller.occupancy.record
        assert record is not None and record.window == 65_536
    finally:
        ollama.stop()


def test_the_context_dialog_says_when_a_window_is_estimated(
    open_window: Opener, aio: Aio
) -> None:
    # a model litellm does not know, on a server that does not say its window
    lab = OpenAIServer([{"id": "house-blend-7b", "object": "model"}])
    desk = open_window()

    async def scenario() -> None:
        await add_through_dialog(desk, "openai-compatible", lab.url)
        close_settings(desk)
        model = await pick(desk, "house-blend")
        assert choice(desk, model).window_estimated
        popup = desk.composer.picker.popup
        desk.composer.picker.showPopup()
        (item,) = popup.items()
        assert "(estimated)" in item.text(1) and "unpriced" in item.text(1)
        desk.composer.picker.hidePopup()
        await send(desk, "hello house")
        desk.composer.contextRequested.emit()
        dialog = desk.controller.occupancy.context_dialog
        assert dialog is not None
        await aio.until(lambda: "estimated" in dialog.model_label.text(),
                        what="the estimated mark")
        assert desk.services.models.display_name(model) in dialog.model_label.text()
        dialog.close()

    try:
        aio.run(scenario())
    finally:
        lab.stop()


def test_a_detected_server_appears_then_is_marked_unreachable(
    open_window: Opener, aio: Aio
) -> None:
    lab = OpenAIServer([{"id": "qwen2.5-7b-instruct", "object": "model"}])
    desk = open_window((ServerSpec("lmstudio", "LM Studio", lab.url),))
    stopped = False

    async def scenario() -> None:
        nonlocal stopped
        assert not any("qwen" in m for m in desk.composer.model_ids())
        # what the app does after its first paint; Settings is never opened
        desk.services.models.connections.start_detection(interval=None)
        await aio.until(lambda: "lmstudio/qwen2.5-7b-instruct" in desk.composer.model_ids(),
                        what="the detected server in the picker")
        picker = desk.composer.picker
        picker.showPopup()
        assert "LM Studio (detected)" in headings(picker.popup)
        (item,) = picker.popup.items()
        # a model on this computer costs nothing: "free", not "unpriced"
        assert item.text(0) == "qwen2.5-7b-instruct" and item.text(1).endswith("· free")
        lab.stop()
        stopped = True
        picker.popup.refresh_button.click()
        # one refresh: kept, marked, not removed
        await aio.until(lambda: "LM Studio (unreachable)" in headings(picker.popup),
                        what="the server marked unreachable")
        assert picker.popup.refresh_button.text() == "Refresh"
        (item,) = picker.popup.items()
        assert item.isDisabled()
        picker.hidePopup()

    try:
        aio.run(scenario())
    finally:
        if not stopped:
            lab.stop()


def headings(popup: Any) -> list[str]:
    tree = popup.tree
    return [tree.topLevelItem(i).text(0) for i in range(tree.topLevelItemCount())]


class HtmlServer:
    """A web server that is not a model server: every path answers a web page."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = b"<!doctype html><html><body>Router login</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_bad_input_is_refused_in_words_and_nothing_blocks(open_window: Opener, aio: Aio) -> None:
    html = HtmlServer()
    silent = socket.socket()  # accepts connections (the kernel's backlog), never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    silent_url = f"http://127.0.0.1:{silent.getsockname()[1]}"
    desk = open_window()

    async def scenario() -> None:
        page = settings_page(desk)
        page.add_button.click()
        editor = page.editor
        assert editor is not None
        editor.url.setText("ftp://127.0.0.1/models")
        editor.save_button.click()
        assert "http" in editor.error.text()  # the service's own words, at once
        assert editor.isVisible() and desk.services.models.connections.saved() == ()
        editor.url.setText("http://127.0.0.1:9/v1")
        editor.headers.setText("no colon here")
        editor.save_button.click()
        assert "is not a header" in editor.error.text()
        assert desk.services.models.connections.saved() == ()
        editor.reject()
        await aio.until(lambda: page.editor is None)

        page = await add_through_dialog(desk, "openai-compatible", html.url)
        (conn,) = desk.services.models.connections.saved()
        assert "could not be listed" in page.status.text()
        assert "Not checked yet" in page.row_text(conn.id)

        await add_through_dialog(desk, "openai-compatible", silent_url, wait=False)
        editor = page.editor
        assert editor is not None and editor.error.text() == "Listing its models…"
        # while the server says nothing the window goes on: the editor takes typing
        ticks = 0
        for _ in range(20):
            await aio.settle(0.05)
            ticks += 1
        editor.name.setFocus()
        QTest.keyClicks(editor.name, "still here")
        assert editor.name.text() == "still here" and ticks == 20
        await aio.until(lambda: page.editor is None, timeout=30,
                        what="the listing to give up")
        assert "could not be listed" in page.status.text()

    try:
        aio.run(scenario(), timeout=90)
    finally:
        html.stop()
        silent.close()


def test_the_bundled_model_has_a_read_only_row_named_as_the_picker_names_it(
    open_window: Opener, aio: Aio
) -> None:
    desk = open_window()
    desk.services.models.connections.bundled = True  # a build that ships it

    async def scenario() -> None:
        page = settings_page(desk)
        row = page.row_text("local")
        assert row, "the bundled model is listed"
        name, kind, state = row.split(" | ")
        assert name == desk.controller.models.label_for("local/smollm2-135m-instruct")
        assert name == "Bundled · SmolLM2 135M"
        assert kind == "Bundled with Treechat" and "works offline" in state
        page.select("local")
        assert not page.edit_button.isEnabled() and not page.test_button.isEnabled()
        assert not page.remove_button.isEnabled()
        assert "no network" in page.status.text()

    aio.run(scenario())


def test_every_state_is_read_whole_at_the_default_size(open_window: Opener, aio: Aio) -> None:
    lab = OpenAIServer([{"id": "qwen2.5-7b-instruct", "object": "model"}])
    desk = open_window((ServerSpec("lmstudio", "LM Studio", lab.url),))
    desk.services.models.connections.bundled = True

    async def scenario() -> None:
        desk.window.resize(1366, 768)
        desk.services.models.connections.start_detection(interval=None)
        await aio.until(lambda: "lmstudio/qwen2.5-7b-instruct" in desk.composer.model_ids(),
                        what="the detected server")
        page = await add_through_dialog(desk, "openai-compatible", lab.url)
        dialog = desk.controller.dialogs.settings_dialog
        assert dialog is not None and dialog.size().width() <= 1366  # as it opens
        await aio.settle(0.1)
        tree = page.list
        metrics = tree.fontMetrics()
        states = []
        for i in range(tree.topLevelItemCount()):
            item = tree.topLevelItem(i)
            assert item is not None
            states.append(item.text(2))
            # the whole text fits its column, and the column fits the list
            assert metrics.horizontalAdvance(item.text(2)) < tree.columnWidth(2) - 8, item.text(2)
        assert tree.columnViewportPosition(2) + tree.columnWidth(2) <= tree.viewport().width()
        assert any(s.startswith("Detected on this machine") for s in states)
        assert any(s.startswith("Ready · works offline") for s in states)

    aio.run(scenario())


def test_a_reply_through_an_unchecked_server_shows_it_reachable(
    open_window: Opener, aio: Aio, tmp_path: Path
) -> None:
    lab = OpenAIServer([{"id": "lab-model", "object": "model"}])
    before = build_services(tmp_path / "data", bundled=False, detect_local_servers=False,
                            keys=KeyStore(environ={}))
    aio.run(before.connections.add("openai-compatible", "lab",  # type: ignore[union-attr]
                                   base_url=lab.openai_base))
    aio.run(before.close())
    before.close_store()
    desk = open_window()  # the next start: nothing has checked it yet

    async def scenario() -> None:
        await aio.until(lambda: any(c.id == "lab/lab-model" for c in
                                    desk.controller.models.choices), what="lab in the picker")
        assert choice(desk, "lab/lab-model").state == "unchecked"
        await pick(desk, "lab-model")
        await send(desk, "Hello lab")
        assert lab.chat_hits(), "the reply came from the lab server"
        await aio.until(lambda: choice(desk, "lab/lab-model").state == "ready",
                        what="the picker to call it reachable")
        page = settings_page(desk)
        assert page.row_text("lab").endswith("Ready · 1 model")

    aio.run(scenario())
