"""The knowledge panel: what it lists of each base, how indexing progress reads (files/s and
time left), buttons that act on the selected base only, a project's base not removable from
one of its chats, and folders dropped on it asked to be added."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from pytestqt.qtbot import QtBot

from treechat.ui.knowledge.panel import BaseRow, KnowledgePanel, progress_text


def test_progress_reads_as_files_rate_and_time_left() -> None:
    assert progress_text("Notes", 12, 40, 8.0, 3.5) == (
        "Indexing “Notes”: 12 of 40 files · 8.0 files/s · about 4 s left")
    assert progress_text("Notes", 0, 40, 0.0, 0.0) == "Indexing “Notes”: 0 of 40 files"
    assert progress_text("Notes", 10, 5000, 2.0, 2495.0).endswith("about 42 min left")
    assert progress_text("Notes", 40, 40, 8.0, 0.0) == "Indexed “Notes”: 40 files."


def test_the_panel_lists_bases_and_acts_on_the_selected_one(qtbot: QtBot, tmp_path: Path) -> None:
    panel = KnowledgePanel(None, "Garden")
    qtbot.addWidget(panel)
    assert panel.empty.isVisibleTo(panel) and not panel.reindex.isEnabled()
    panel.set_bases([BaseRow("Garden", ("/n",), 41, 90, "indexed"),
                     BaseRow("House", ("/h",), 3, 5, "indexed", inherited="Home")])
    assert "Garden — 41 files, 90 passages · indexed" in panel.model.item(0).text()
    assert "from project “Home”" in panel.model.item(1).text()
    removed: list[str] = []
    panel.removeRequested.connect(removed.append)
    panel.list.setCurrentIndex(panel.model.index(1, 0))
    assert panel.reindex.isEnabled() and not panel.remove.isEnabled()
    panel.list.setCurrentIndex(panel.model.index(0, 0))
    panel.remove.click()
    assert removed == ["Garden"]
    panel.set_progress("Garden", 3, 10, 1.5, 4.7)
    assert panel.progress.value() == 3 and "1.5 files/s" in panel.status.text()
    added: list[list[str]] = []
    panel.addRequested.connect(added.append)
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(tmp_path)), QUrl("https://example.com/x")])
    panel.dropEvent(QDropEvent(QPointF(5, 5), Qt.DropAction.CopyAction, mime,
                               Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier))
    assert added == [[str(tmp_path)]]  # only local files and folders


def test_a_projects_panel_says_its_chats_search_it(qtbot: QtBot) -> None:
    chat, project = KnowledgePanel(None, "Garden"), KnowledgePanel(None, "Kitchen", "project")
    qtbot.addWidget(chat)
    qtbot.addWidget(project)
    assert "searches for this chat," in chat.hint.text()
    assert "searches for this project's chats," in project.hint.text()
    assert project.windowTitle() == "Knowledge — Kitchen"
