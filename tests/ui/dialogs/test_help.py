"""Help in the window on the real services: the shortcuts list agrees with the empty
window's hints, one key combination per name, headers over their columns; a problem report
and About work before anything was logged."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QWidget

from treechat.services.problem_report import report_place, where_to_send
from treechat.ui.shell.empty_state import SHORTCUTS_HELP

from ..conftest import Aio, Desk

SHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"


def shoot(widget: QWidget, name: str) -> None:
    if os.environ.get("TREECHAT_SCREENSHOTS") == "1":
        widget.grab().save(str(SHOTS / f"first-hour-{name}.png"))


def test_the_shortcuts_list_matches_the_empty_window_and_names_each_key(desk: Desk) -> None:
    dialog = desk.controller.dialogs.open_shortcuts(desk.window.shortcut_list())
    rows = dialog.visible_rows()
    # what the empty window says, the list says too, in the same words
    for hint in SHORTCUTS_HELP:
        assert hint in rows
    assert ("Enter", "Send · Shift+Enter for a new line") in rows
    assert ("Ctrl+Enter", "Send") in rows  # the menu's shortcut, named as the hints name keys
    keys = [k for k, _ in rows]
    assert all("/" not in k.replace("/context", "") for k in keys), keys
    assert all("Return" not in k and not k.endswith((" ", "or")) for k in keys), keys
    assert ("Ctrl+,", "Settings") in rows
    assert any(k.startswith("Ctrl+.") and w == "Stop" for k, w in rows)
    header = dialog.table.horizontalHeader()
    assert header.defaultAlignment() & Qt.AlignmentFlag.AlignLeft
    shoot(dialog, "help-shortcuts")
    dialog.close()


def test_a_problem_report_before_anything_was_logged_says_so(
    desk: Desk, aio: Aio, qapp: QApplication
) -> None:
    log = desk.data_dir / "logs" / "treechat.log"
    assert not log.exists()
    qapp.clipboard().clear()

    async def report() -> None:
        desk.window.report_action.trigger()
        await aio.until(lambda: "Platform: " in qapp.clipboard().text(), what="the report")
        await aio.until(lambda: desk.controller.dialogs.report_dialog is not None,
                        what="the report's dialog")

    aio.run(report())
    dialog = desk.controller.dialogs.report_dialog
    assert dialog is not None and dialog.isVisible()
    saved = desk.data_dir / "logs" / "problem-report.txt"
    assert dialog.path.text() == str(saved)  # the whole path, in a dialog, not a status bar
    assert saved.read_text(encoding="utf-8") == qapp.clipboard().text()
    assert dialog.preview.toPlainText() == qapp.clipboard().text()
    # a real place to send it, or plainly none: never "whoever supports your copy"
    place = report_place()
    assert dialog.where.text() == where_to_send(place)
    assert "whoever supports" not in dialog.where.text()
    assert (dialog.tracker_button is not None) == (place is not None)
    assert dialog.open_button.isEnabled()
    assert not dialog.open_button.autoDefault() and not dialog.copy_button.autoDefault()
    qapp.clipboard().clear()
    dialog.copy_button.click()
    assert qapp.clipboard().text() == saved.read_text(encoding="utf-8")
    assert desk.window.statusBar().currentMessage() == ""  # nothing cut short down there
    shoot(dialog, "help-report")
    dialog.close()
    copied = qapp.clipboard().text()
    assert "No log lines yet." in copied
    assert "could not be read" not in copied and "No such file" not in copied
    about = desk.controller.dialogs.open_about()
    assert set(about.open_buttons) == {"data", "logs"}
    about.close()
