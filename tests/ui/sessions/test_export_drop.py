"""Dropping an export on the chat list: one local .json or .zip file is taken (and its path
handed on); anything else dragged over is left alone."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from treechat.ui.sessions.export_drop import ExportDropFilter, export_path


def drop_of(*urls: QUrl, text: str = "") -> tuple[QDropEvent, QMimeData]:
    mime = QMimeData()
    if urls:
        mime.setUrls(list(urls))
    if text:
        mime.setText(text)
    event = QDropEvent(QPointF(5, 5), Qt.DropAction.CopyAction, mime,
                       Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    return event, mime  # the mime data must outlive the event


def path_of(*urls: QUrl, text: str = "") -> str | None:
    event, mime = drop_of(*urls, text=text)
    path = export_path(event)
    del event, mime  # the event goes before the data it points at
    return path


def test_only_one_local_export_file_is_taken(qapp: object, tmp_path: Path) -> None:
    export = tmp_path / "conversations.JSON"
    assert path_of(QUrl.fromLocalFile(str(export))) == str(export)
    assert path_of(QUrl.fromLocalFile(str(tmp_path / "e.zip"))) is not None
    assert path_of(QUrl.fromLocalFile(str(tmp_path / "notes.txt"))) is None
    assert path_of(QUrl.fromLocalFile(str(export)),
                   QUrl.fromLocalFile(str(tmp_path / "b.json"))) is None
    assert path_of(QUrl("https://example.org/c.json")) is None
    assert path_of(text="conversations.json") is None


def test_a_dropped_export_is_handed_on(qtbot: QtBot, tmp_path: Path) -> None:
    target = QWidget()
    qtbot.addWidget(target)
    drops = ExportDropFilter()
    drops.install(target)
    assert target.acceptDrops()
    got: list[str] = []
    drops.fileDropped.connect(got.append)
    event, _mime = drop_of(QUrl.fromLocalFile(str(tmp_path / "claude.json")))
    assert drops.eventFilter(target, event)
    other, _other_mime = drop_of(text="just text")
    assert not drops.eventFilter(target, other)
    assert got == [str(tmp_path / "claude.json")]
