"""The file chips of the next message: each says its name, size and token cost (or that it
is being prepared), × removes it, a chip changed in place keeps its widget, and the row
hides when no file is staged."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from treechat.ui.composer.file_chips import FileChipBar, FileChipState


def test_chips_say_what_each_file_costs_and_remove_on_request(qtbot: QtBot) -> None:
    bar = FileChipBar()
    qtbot.addWidget(bar)
    bar.resize(600, 80)
    assert bar.isHidden()
    bar.set_files([FileChipState(1, "notes.txt", 2048, "text", tokens=512),
                   FileChipState(2, "<b>scan</b>.pdf", 0, "pdf", busy=True)])
    notes, scan = bar.chip(1), bar.chip(2)
    assert notes is not None and scan is not None and not bar.isHidden()
    assert notes.cost.text() == "512 tokens" and notes.size_label.text()
    assert "sent with the next message" in notes.toolTip()
    assert scan.cost.text() == "preparing…"
    assert scan.accessibleName() == "File: <b>scan</b>.pdf (preparing)"
    assert scan.name.text() == "<b>scan</b>.pdf"  # shown as typed, never as markup
    removed: list[int] = []
    bar.removeRequested.connect(removed.append)
    notes.remove_button.click()
    assert removed == [1]


def test_a_chip_updated_in_place_keeps_its_widget(qtbot: QtBot) -> None:
    bar = FileChipBar()
    qtbot.addWidget(bar)
    bar.set_files([FileChipState(2, "scan.pdf", 9000, "pdf", busy=True)])
    chip = bar.chip(2)
    bar.set_files([FileChipState(2, "scan.pdf", 9000, "pdf", tokens=1500,
                                 note="This model cannot see images.")])
    assert bar.chip(2) is chip
    assert chip is not None and chip.cost.text() == "1.5k tokens"
    assert chip.toolTip().endswith("This model cannot see images.")
    bar.set_files([])
    assert bar.isHidden() and bar.chip(2) is None
