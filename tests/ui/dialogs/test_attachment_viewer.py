"""The attachment viewer: a picture fitted to the window (or shown at its size), a text
file as text, a problem in words, and Save… only once the bytes are there."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QColor, QImage
from pytestqt.qtbot import QtBot

from treechat.ui.dialogs.attachment_viewer import AttachmentViewer


def test_a_large_picture_is_fitted_until_asked_for_its_size(qtbot: QtBot) -> None:
    viewer = AttachmentViewer("photo.png", "2 MB · PNG", "image")
    qtbot.addWidget(viewer)
    viewer.show()
    assert not viewer.save_button.isEnabled() and not viewer.zoom_button.isEnabled()
    image = QImage(3000, 2000, QImage.Format.Format_RGB32)
    image.fill(QColor("teal"))
    viewer.show_image(image)
    viewer.allow_save()
    assert viewer.fitted() and viewer.save_button.isEnabled()
    shown = viewer.picture.pixmap()
    assert shown.width() < 3000  # fitted to the room it has
    viewer.zoom_button.click()
    assert not viewer.fitted() and viewer.zoom_button.text() == "Fit to window"
    assert viewer.picture.pixmap().width() == 3000


def test_text_problems_and_saving_are_said_in_words(qtbot: QtBot, tmp_path: Path) -> None:
    viewer = AttachmentViewer("../notes:today.txt", "1 KB", "text")
    qtbot.addWidget(viewer)
    viewer.show_text("first line\nsecond line")
    assert viewer.text.toPlainText() == "first line\nsecond line"
    assert "/" not in viewer.suggested_name() and viewer.suggested_name().endswith(".txt")
    asked: list[str] = []
    viewer.saveRequested.connect(asked.append)
    viewer.save_to(str(tmp_path / "n.txt"))
    assert asked == [str(tmp_path / "n.txt")]
    viewer.saved(tmp_path / "n.txt")
    assert viewer.status.text() == f"Saved to {tmp_path / 'n.txt'}"
    viewer.show_problem("The file is no longer in the store.")
    assert viewer.status.text() == "The file is no longer in the store."
