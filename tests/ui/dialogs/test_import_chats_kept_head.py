"""The Import dialog's summary on the real window and store: a newer export of a chat the
user has moved around in says so in the notes, lists that chat (its HEAD kept, a branch
added) and opens it; a large file streamed a conversation at a time shows bytes read of
bytes total instead of "N of 0"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from treechat.services.transfer import importing
from treechat.services.transfer.importing import ImportProgress

from ..conftest import Desk

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data" / "imports"
SPLIT = DATA / "chatgpt-split" / "conversations-000.json"
CHATGPT = DATA / "chatgpt-export-browsing.json"


def test_a_newer_export_lists_the_chat_whose_head_was_kept(desk: Desk, tmp_path: Path) -> None:
    raw = json.loads(SPLIT.read_text(encoding="utf-8"))
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(raw), encoding="utf-8")

    async def scenario() -> None:
        desk.controller.dialogs.open_import_dialog(str(path))
        dialog = desk.controller.dialogs.import_dialog
        assert dialog is not None
        await desk.aio.until(lambda: dialog.summary is not None, what="the first summary")
        assert not dialog.notes_label.isVisible() and not dialog.kept_box.isVisible()
        (session_id,) = dialog.summary.session_ids
        store = desk.services.store
        question = next(n for n in store.call(lambda r: r.session_nodes(session_id))
                        if n.role == "user")
        store.call(lambda r: r.set_head(session_id, question.id, 5.0))  # the user looks back

        mapping = raw[0]["mapping"]
        mapping["a"]["children"] = ["u2"]
        mapping["u2"] = {"id": "u2", "parent": "a", "children": [], "message": {
            "id": "u2", "author": {"role": "user"}, "create_time": 1745000050.0,
            "content": {"content_type": "text", "parts": ["more from the other app"]},
            "metadata": {}}}
        raw[0]["current_node"] = "u2"
        path.write_text(json.dumps(raw), encoding="utf-8")
        dialog.reset()
        assert dialog.start_import(path)
        await desk.aio.until(lambda: dialog.summary is not None, what="the second summary")

        assert dialog.summary.kept_head == (session_id,)
        assert dialog.notes_label.isVisible()
        assert dialog.notes_label.text() == (
            "“First file's chat”: the new messages are on a new branch; HEAD stays where "
            "you left it.")
        assert dialog.kept_box.isVisible() and dialog.kept_title.isVisible()
        assert dialog.kept_rows() == [("First file's chat", session_id)]
        assert store.call(lambda r: r.get_session(session_id)).head == question.id

        dialog.open_kept_button.click()
        await desk.aio.until(lambda: desk.controller.current_session_id == session_id,
                             what="the kept chat open")
        assert not dialog.isVisible()
        assert desk.window.title.text() == "First file's chat"

    desk.aio.run(scenario())


def test_a_streamed_file_shows_bytes_read_of_bytes_total(
    desk: Desk, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importing, "WHOLE_FILE_BYTES", 1024)  # stream anything larger
    path = tmp_path / "conversations.json"
    path.write_bytes(CHATGPT.read_bytes())
    size = path.stat().st_size
    shown: list[str] = []

    async def scenario() -> None:
        desk.controller.dialogs.open_import_dialog()
        dialog = desk.controller.dialogs.import_dialog
        assert dialog is not None
        original = dialog._progress

        def watch(p: ImportProgress) -> None:
            original(p)
            if p.stage == "writing" and p.done:
                shown.append(dialog.current_title.text())

        dialog._progress = watch  # type: ignore[method-assign]
        assert dialog.start_import(path)
        await desk.aio.until(lambda: dialog.summary is not None, what="the summary")
        assert dialog.summary.sessions == 2

    desk.aio.run(scenario())
    assert len(shown) == 2, shown
    assert all(" of 0" not in text for text in shown), shown
    total = f"{size / 1024:,.1f} KB"
    assert all(f" of {total} read" in text for text in shown), shown
    assert shown[0].endswith("1 conversation imported, last: " +
                             json.loads(CHATGPT.read_text())[0]["title"]), shown
    assert "2 conversations imported" in shown[1]
