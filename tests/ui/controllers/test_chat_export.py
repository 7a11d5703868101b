"""Export from the File menu: a chat or every chat, Markdown or JSON, starting in the
Documents folder, with the attached files beside a Markdown export."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.loopback_server import Reply

from ..conftest import Aio, Desk
from .controls_desk import controls, send, turn_done


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
        dialog = c.export.export_chat()
        assert dialog is not None and dialog.isVisible()  # open(): the loop runs on
        dialog.selectNameFilter("JSON, every branch (*.json)")
        dialog.selectFile(str(tmp_path / "one.json"))
        dialog.accept()
        await aio.until(lambda: len(written) == 1, what="chat export")
        every = c.export.export_all()
        every.selectNameFilter("Markdown (*.md)")
        every.selectFile(str(tmp_path / "all.md"))
        every.accept()
        await aio.until(lambda: len(written) == 2, what="all export")

    aio.run(scenario())
    doc = json.loads((tmp_path / "one.json").read_text("utf-8"))
    assert "Exported answer" in json.dumps(doc)
    assert "Export me" in (tmp_path / "all.md").read_text("utf-8")


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
        dialog = c.export.export_chat()
        assert dialog is not None
        documents = Path(QStandardPaths.writableLocation(
            QStandardPaths.StandardLocation.DocumentsLocation))
        offered = Path(dialog.directory().absolutePath())
        assert offered == (documents if documents.is_dir() else Path.home())
        assert offered != Path.cwd()
        dialog.reject()
        return await c.export.write_chat(session.id, str(tmp_path / "chat.md"), "md", "branch")

    written = aio.run(scenario())
    assert (tmp_path / "chat files" / "data.csv").read_bytes() == b"a,b\n1,2\n"
    assert "see this" in Path(written).read_text("utf-8")
    assert "1 attached file" in desk.window.statusBar().currentMessage()
