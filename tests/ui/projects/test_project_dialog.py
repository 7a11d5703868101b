"""The project dialog: Save needs a name, what was typed comes back tidied, and an edit
starts from the project as it is."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from treechat.ui.projects.project_dialog import ProjectDialog, ProjectFields


def test_the_dialog_saves_what_was_typed_only_with_a_name(qtbot: QtBot) -> None:
    dialog = ProjectDialog(None)
    qtbot.addWidget(dialog)
    assert not dialog.save_button.isEnabled()
    dialog.name.setText("  Kitchen   works ")
    dialog.instructions.setPlainText("Be brief.")
    dialog.memory.setChecked(True)
    with qtbot.waitSignal(dialog.saved) as saved:
        dialog.save_button.click()
    assert saved.args == [ProjectFields("Kitchen works", "Be brief.", True)]
    edit = ProjectDialog(None, ProjectFields("Trip", "Plan.", False), title="Project “Trip”")
    qtbot.addWidget(edit)
    assert (edit.name.text(), edit.windowTitle(), edit.memory.isChecked()) == (
        "Trip", "Project “Trip”", False)
