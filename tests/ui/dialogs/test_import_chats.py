"""The Import dialog on the real window and store: a real ChatGPT export lands in the session
list with the right counts, a damaged file is refused with nothing written, and Cancel stops
between conversations; an export dropped on the chat list is imported too."""

from __future__ import annotations

import json
import os
from pathlib import Path

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication
from tests.support.exports import big_chatgpt_export

from ..conftest import Desk

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data" / "imports"
CHATGPT = DATA / "chatgpt-export-browsing.json"


def counts(desk: Desk) -> tuple[int, int]:
    """(sessions, nodes) in the store."""
    return desk.services.store.call(lambda r: (len(r.list_sessions()), r.node_count()))


def test_real_chatgpt_export_through_the_file_dialog(desk: Desk) -> None:
    raw = json.loads(CHATGPT.read_text(encoding="utf-8"))
    messages = sum(1 for c in raw for e in c["mapping"].values() if e.get("message"))

    async def scenario() -> None:
        desk.window.import_action.trigger()
        dialog = desk.controller.dialogs.import_dialog
        assert dialog is not None and dialog.isVisible()
        dialog.choose_button.click()
        picker = dialog.file_dialog
        assert picker is not None and picker.isVisible()
        picker.selectFile(str(CHATGPT))
        picker.accept()
        await desk.aio.until(lambda: dialog.summary is not None, what="the summary")
        labels = {k: v.text() for k, v in dialog.count_labels.items()}
        assert labels == {"format": "ChatGPT", "sessions": "2", "nodes": str(messages),
                          "branches": "2", "skipped": "0"}
        assert dialog.headline.text() == "Imported 2 chats"
        assert not dialog.skipped_table.isVisible() and not dialog.error_box.isVisible()
        ids = dialog.summary.session_ids
        await desk.aio.until(
            lambda: all(desk.window.sessions.session(s) is not None for s in ids),
            what="the imported chats in the list")
        titles = {desk.window.sessions.session(s).title for s in ids}
        assert titles == {c["title"] for c in raw}
        assert dialog.open_button.isVisible()
        dialog.open_button.click()
        await desk.aio.until(lambda: desk.controller.current_session_id == ids[0],
                             what="the first imported chat open")
        assert desk.window.title.text() == desk.window.sessions.session(ids[0]).title
        assert not dialog.isVisible()

    desk.aio.run(scenario())
    assert counts(desk) == (2, messages)


def test_a_truncated_file_is_refused_and_nothing_is_written(desk: Desk, tmp_path: Path) -> None:
    whole = CHATGPT.read_bytes()
    broken = tmp_path / "conversations.json"
    broken.write_bytes(whole[: len(whole) // 2])

    async def scenario() -> None:
        desk.controller.dialogs.open_import_dialog(str(broken))
        dialog = desk.controller.dialogs.import_dialog
        await desk.aio.until(lambda: not dialog.running and dialog.error_box.isVisible(),
                             what="the error")
        assert dialog.headline.text() == "This file can't be imported"
        assert "conversations.json" in dialog.error_text.text()
        assert dialog.summary is None and not dialog.open_button.isVisible()
        assert desk.window.sessions.model.session_count() == 0

    desk.aio.run(scenario())
    assert counts(desk) == (0, 0)


def test_cancel_after_the_first_conversation_keeps_only_finished_ones(
    desk: Desk, tmp_path: Path
) -> None:
    export = tmp_path / "three.json"
    export.write_text(json.dumps(big_chatgpt_export(3, 6)), encoding="utf-8")

    async def scenario() -> None:
        desk.controller.dialogs.open_import_dialog()
        dialog = desk.controller.dialogs.import_dialog
        titles: list[str] = []

        def on_value(value: int) -> None:
            # the user presses Cancel as the bar shows the first conversation written
            if value == 1:
                titles.append(dialog.current_title.text())
                dialog.cancel_button.click()

        dialog.progress_bar.valueChanged.connect(on_value)
        assert dialog.start_import(export)
        assert dialog.cancel_button.isVisible()
        await desk.aio.until(lambda: dialog.summary is not None, what="the summary")
        assert titles == ["1 of 3: Conversation 0"]
        assert dialog.summary.cancelled
        assert dialog.headline.text() == "Import cancelled"
        assert dialog.count_labels["sessions"].text() == "1"
        assert dialog.count_labels["nodes"].text() == "6"
        assert "1 of 3 conversations" in dialog.detail.text()
        await desk.aio.until(lambda: desk.window.sessions.model.session_count() == 1,
                             what="one chat in the list")
        assert desk.window.sessions.session(dialog.summary.session_ids[0]).title == (
            "Conversation 0")

    desk.aio.run(scenario())
    assert counts(desk) == (1, 6)


def drag_events(path: Path) -> tuple[QDragEnterEvent, QDropEvent, QMimeData]:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    at = QPointF(40, 80)
    buttons, mods = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    enter = QDragEnterEvent(at.toPoint(), Qt.DropAction.CopyAction, mime, buttons, mods)
    drop = QDropEvent(at, Qt.DropAction.CopyAction, mime, buttons, mods)
    return enter, drop, mime


def test_dropping_an_export_on_the_chat_list_imports_it(desk: Desk, tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("not an export", encoding="utf-8")

    async def scenario() -> None:
        target = desk.window.sessions
        enter, _drop, _mime = drag_events(other)
        QApplication.sendEvent(target, enter)
        assert not enter.isAccepted()  # only .json and .zip files are taken

        enter, drop, _mime = drag_events(CHATGPT)
        QApplication.sendEvent(target, enter)
        assert enter.isAccepted()
        QApplication.sendEvent(target, drop)
        dialog = desk.controller.dialogs.import_dialog
        assert dialog is not None and dialog.isVisible()
        await desk.aio.until(lambda: dialog.summary is not None, what="the summary")
        assert dialog.count_labels["sessions"].text() == "2"
        await desk.aio.until(lambda: desk.window.sessions.model.session_count() == 2,
                             what="two chats in the list")

    desk.aio.run(scenario())


def test_the_dialog_names_every_format_it_reads(desk: Desk) -> None:
    from PySide6.QtWidgets import QLabel

    desk.controller.dialogs.open_import_dialog()
    dialog = desk.controller.dialogs.import_dialog
    assert dialog is not None
    intro = dialog.findChild(QLabel, "ImportIntro")
    assert isinstance(intro, QLabel)
    text = intro.text()
    for name in ("ChatGPT", "Claude", "Grok", "DeepSeek", "Google AI Studio (Gemini)",
                 "LibreChat", "Open WebUI", "Treechat JSON"):
        assert name in text, name
    if os.environ.get("TREECHAT_SCREENSHOTS") == "1":
        dialog.grab().save(str(Path(__file__).resolve().parents[3] / "docs" / "screenshots"
                               / "first-hour-import-formats.png"))
    dialog.close()


def test_an_old_search_is_cleared_so_the_imported_chats_show(desk: Desk) -> None:
    async def scenario() -> None:
        desk.window.sessions.search.setText("dragons from last week")
        desk.window.import_action.trigger()
        dialog = desk.controller.dialogs.import_dialog
        assert dialog is not None
        assert dialog.start_import(str(CHATGPT))
        await desk.aio.until(lambda: dialog.summary is not None, what="the summary")
        ids = dialog.summary.session_ids
        await desk.aio.until(
            lambda: all(desk.window.sessions.session(s) is not None for s in ids),
            what="the imported chats in the list")
        assert desk.window.sessions.search.text() == ""

    desk.aio.run(scenario())
