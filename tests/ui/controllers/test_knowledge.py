"""Knowledge in the window, on the real store, the real offline embedder and the loopback
provider: a folder dropped on a chat's knowledge panel is indexed with its progress shown
(files/s and time left); the model searches it, the reply's citation is a link and clicking
it shows the file at the cited line; the Context tab lists the passage with its source;
removing it cleanly drops the base."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QMimeData, QObject, QPointF, Qt, QUrl, Slot
from PySide6.QtGui import QDesktopServices, QDropEvent
from tests.support.loopback_server import Reply

from treechat.core.citations import SOURCE_SCHEME, Passage, source_url
from treechat.services.retrieval.extract import file_passages
from treechat.ui.chat.model import RowKind
from treechat.ui.controllers.history import CONTEXT_TAB
from treechat.ui.controllers.knowledge import Target, read_source

from ..conftest import Aio, Desk
from .controls_desk import send, turn_done
from .knowledge_desk import shoot

FILLER = ("Notes on {n}: the meeting moved to Thursday; bring the slides and the budget "
          "sheet.\n\nA second paragraph about topic {n}, with nothing in it of sheds.\n")


class Opened(QObject):
    """Where the system was asked to open files (the window's own handler for `file`)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[QUrl] = []

    @Slot(QUrl)
    def open_url(self, url: QUrl) -> None:
        self.urls.append(url)


def notes_folder(root: Path) -> Path:
    notes = root / "notes"
    notes.mkdir()
    for n in range(40):
        (notes / f"note-{n:02}.md").write_text(FILLER.format(n=n))
    (notes / "garden.md").write_text("The tomatoes need water.\n\n"
                                     "The shed key hangs behind the pantry door.\n")
    return notes


def test_a_folder_dropped_on_a_chat_is_indexed_searched_cited_and_shown(
    desk: Desk, aio: Aio, tmp_path: Path
) -> None:
    notes = notes_folder(tmp_path)
    garden = notes / "garden.md"
    knowledge = desk.controller.projects.knowledge
    opened = Opened()
    slot: Any = "open_url"  # PySide takes the slot's name as text, though its stubs say bytes
    QDesktopServices.setUrlHandler("file", opened, slot)
    desk.provider.queue(Reply(text="Hello."))
    try:
        async def scenario() -> None:
            send(desk, "Hello")
            await turn_done(desk, aio, 1)
            sid = desk.controller.current_session_id
            assert sid is not None
            panel = knowledge.open_panel(Target("chat", sid, "Garden"))
            shown: list[str] = []
            panel.progressShown.connect(shown.append)
            mime = QMimeData()
            mime.setUrls([QUrl.fromLocalFile(str(notes))])
            drop = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime,
                              Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
            panel.dropEvent(drop)
            await aio.until(lambda: panel.rows and panel.rows[0].files == 41
                            and not knowledge.indexing, what="indexed")
            assert any("files/s" in t and "left" in t for t in shown), shown
            assert shown[-1] == "Indexed “Garden”: 41 files."
            (row,) = panel.rows
            assert (row.name, row.paths, row.state) == ("Garden", (str(notes),), "indexed")
            await shoot(desk, "panel", panel)

            desk.provider.reply_with_tool_calls([{
                "name": "search_knowledge",
                "arguments": {"query": "where does the spare key for the hut hang"}}])
            desk.provider.queue(Reply(text="Behind the pantry door [garden.md, line 3]."))
            send(desk, "Where is the shed key?")
            await turn_done(desk, aio, 3)
            tools = [t["function"]["name"] for t in desk.provider.requests[1].body["tools"]]
            assert "search_knowledge" in tools
            reply = next(r for r in desk.chat.model.rows if r.kind == RowKind.ASSISTANT
                         and "pantry" in r.text)
            assert f"[garden.md, line 3]({SOURCE_SCHEME}://" in reply.text
            assert "**Sources**" in reply.text
            await shoot(desk, "citations")
            link = reply.text.split("[garden.md, line 3](", 1)[1].split(")", 1)[0]
            desk.chat._on_action(reply.key, "link:" + link)  # the click on the citation
            await aio.until(lambda: str(garden) in knowledge.viewers
                            and knowledge.viewers[str(garden)].line, what="the file shown")
            viewer = knowledge.viewers[str(garden)]
            assert knowledge.opened == [(str(garden), 0, 3)]
            assert viewer.isVisible() and viewer.highlighted() == (3, 3)
            assert viewer.text.textCursor().blockNumber() == 2  # line 3, 0-based
            assert viewer.text.marked_text() == "The shed key hangs behind the pantry door."
            await shoot(desk, "source", viewer)
            assert not opened.urls  # nothing left the window
            viewer.elsewhere.click()
            await aio.until(lambda: opened.urls, what="the file opened elsewhere")
            assert [u.toLocalFile() for u in opened.urls] == [str(garden)]
            viewer.close()
            await aio.until(lambda: str(garden) not in knowledge.viewers, what="forgotten")

            desk.window.dock.show()
            desk.window.dock_tabs.setCurrentIndex(CONTEXT_TAB)
            history = desk.controller.history
            history.refresh_timeline()
            await aio.until(lambda: history.timeline.passages.carried, what="passages")
            first = history.timeline.passages.carried[0].passage
            # the request names the file from the folder added, never by its full path
            assert (first.kind, first.path, first.line) == ("knowledge", "notes/garden.md", 3)
            assert str(garden.parent) not in json.dumps(desk.provider.requests[-1].body)
            listed = history.timeline.passages.model.item(0).text()
            assert listed.startswith("Knowledge: garden.md, line 3")
            passages = history.timeline.passages
            passages.view.activated.emit(passages.model.index(0, 0))  # Enter on the passage
            await aio.until(lambda: str(garden) in knowledge.viewers
                            and knowledge.viewers[str(garden)].line == 3, what="shown again")
            await shoot(desk, "context-tab")

            panel.list.setCurrentIndex(panel.model.index(0, 0))
            panel.remove.click()
            await aio.until(lambda: not panel.rows, what="removed")
            bases = await (await knowledge.service()).bases()
            assert "Garden" not in bases
            assert garden.exists()  # the files are untouched

        aio.run(scenario(), timeout=240)
    finally:
        QDesktopServices.unsetUrlHandler("file")


def test_the_background_reading_of_a_base_never_runs_twice_at_once(
    desk: Desk, aio: Aio, tmp_path: Path
) -> None:
    notes = notes_folder(tmp_path)
    knowledge = desk.controller.projects.knowledge

    async def scenario() -> None:
        service = await knowledge.service()
        await service.add("Garden", [str(notes)])
        await service.reindex("Garden", None)
        real, running, most, runs = service.refine, [0], [0], [0]

        async def counted(*args: Any, **kwargs: Any) -> int:
            running[0] += 1
            most[0] = max(most[0], running[0])
            runs[0] += 1
            try:
                return await real(*args, **kwargs)
            finally:
                running[0] -= 1

        vars(service)["refine"] = counted  # counts the calls the controller makes
        # three indexings end while the first reading runs: one more run follows it
        first = aio.loop.create_task(knowledge._refine("Garden"))
        await aio.settle(0.05)
        await knowledge._refine("Garden")
        await knowledge._refine("Garden")
        await first
        assert most[0] == 1 and runs[0] == 2

    aio.run(scenario())


def test_a_cited_file_reads_as_the_index_read_it(tmp_path: Path) -> None:
    """The viewer's line numbers are the index's: an HTML file's passages are cited by the
    lines of its text without markup, and that is what the viewer shows."""
    page = tmp_path / "page.html"
    page.write_text("<html><head><style>p {}</style></head><body>\n<h1>Boats</h1>\n"
                    "<p>We sail on Sundays.</p>\n<p>Our boat is named <b>Marigold</b>.</p>"
                    "</body></html>\n")
    shown = read_source(page).splitlines()
    for _page, line, passage in file_passages(page):
        assert shown[line - 1] == passage.splitlines()[0]
    assert any("Marigold" in t for t in shown) and not any("<" in t for t in shown)
    (tmp_path / "blob.txt").write_bytes(b"\x00\x01binary")
    with pytest.raises(ValueError, match="not a text file"):
        read_source(tmp_path / "blob.txt")
    (tmp_path / "latin.txt").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    assert read_source(tmp_path / "latin.txt") == "caf\xe9 au lait\n"


def test_a_citation_opens_where_it_points_the_latest_click_winning(
    desk: Desk, aio: Aio, tmp_path: Path
) -> None:
    """Two citations of one file clicked in a row: the viewer ends at the second. A PDF's
    opens in the system's viewer at its page; a file that is gone says so."""
    knowledge = desk.controller.projects.knowledge
    notes = tmp_path / "notes.md"
    notes.write_text("".join(f"Line {n} of the notes.\n\n" for n in range(1, 200)))
    pdf = tmp_path / "manual.pdf"
    pdf.write_bytes(b"%PDF-1.4\n")
    opened = Opened()
    slot: Any = "open_url"
    QDesktopServices.setUrlHandler("file", opened, slot)
    try:
        async def scenario() -> None:
            for line in (1, 301):
                knowledge.open_source(QUrl(source_url(Passage("knowledge", "", str(notes),
                                                              line=line))))
            await aio.until(lambda: knowledge.viewers[str(notes)].line, what="shown")
            await aio.settle(0.2)  # both readings are done
            viewer = knowledge.viewers[str(notes)]
            assert viewer.highlighted() == (301, 301)
            assert viewer.text.marked_text() == "Line 151 of the notes."
            assert viewer.text.first_visible_line() > 250

            knowledge.open_source(QUrl(source_url(Passage("knowledge", "", str(pdf), page=4,
                                                          line=2))))
            await aio.until(lambda: opened.urls, what="the PDF handed on")
            assert opened.urls[0].toLocalFile() == str(pdf)
            assert opened.urls[0].fragment() == "page=4"
            assert str(pdf) not in knowledge.viewers

            knowledge.open_source(QUrl(source_url(Passage("knowledge", "",
                                                          str(tmp_path / "gone.md"), line=1))))
            assert desk.window.statusBar().currentMessage() == (
                f"{tmp_path / 'gone.md'} is not there any more")

        aio.run(scenario())
    finally:
        QDesktopServices.unsetUrlHandler("file")
