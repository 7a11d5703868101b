"""The merge dialog: the branch heads to merge, the base chosen (HEAD's by default), and an
instruction that falls back to the default when left empty."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from treechat.services.merge import DEFAULT_MERGE_INSTRUCTION
from treechat.ui.dialogs.merge import MergeDialog

HEADS = [("h1", "Blue, because the sky"), ("h2", "Green, because grass")]


def test_the_base_starts_on_the_given_head_and_the_merge_names_every_head(
    qtbot: QtBot,
) -> None:
    dialog = MergeDialog(HEADS, base="h2")
    qtbot.addWidget(dialog)
    assert dialog.chosen_base() == "h2"
    assert [dialog.base.itemText(i) for i in range(dialog.base.count())] == [
        label for _h, label in HEADS]
    merged: list[tuple[str, list[str], str]] = []
    dialog.mergeAccepted.connect(lambda base, heads, text: merged.append((base, heads, text)))
    dialog.instruction.setPlainText("Keep the best of both")
    dialog.base.setCurrentIndex(0)
    dialog.merge_button.click()
    assert merged == [("h1", ["h1", "h2"], "Keep the best of both")]


def test_an_empty_instruction_merges_with_the_default(qtbot: QtBot) -> None:
    dialog = MergeDialog(HEADS, base="not-a-head")
    qtbot.addWidget(dialog)
    assert dialog.chosen_base() == "h1"  # an unknown base: the first head
    merged: list[str] = []
    dialog.mergeAccepted.connect(lambda _base, _heads, text: merged.append(text))
    dialog.instruction.setPlainText("   ")
    dialog.accept()
    assert merged == [DEFAULT_MERGE_INSTRUCTION]
