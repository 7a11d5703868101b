"""The merge dialog: the branch heads to merge, the base chosen (HEAD's by default), and an
instruction that falls back to the default when left empty."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from treechat.core.model import Node
from treechat.services.merge import DEFAULT_MERGE_INSTRUCTION
from treechat.ui.dialogs.merge import MergeDialog, head_choices
from treechat.ui.graph.items import label_for

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


def test_heads_that_begin_alike_are_told_apart() -> None:
    same = "Sure! Here is a plan for the trip across the mountains in winter, day by day"
    heads = [Node(f"h{i}", i, 1_700_000_000.0 + 3600 * i, "s", "assistant", output=same,
                  metadata={"model": model})
             for i, model in enumerate(("openai/gpt-4o", "anthropic/claude-3-5-haiku"))]
    choices = head_choices(heads, "h1", label_for, lambda m: m.split("/")[1])
    labels = [label for _, label in choices]
    assert [node_id for node_id, _ in choices] == ["h0", "h1"]
    assert len(set(labels)) == 2
    assert labels[0].startswith("1. gpt-4o ·") and labels[1].startswith("2. claude-3-5-haiku ·")
    assert labels[1].endswith("(checked out)") and "(checked out)" not in labels[0]
    one_model = head_choices([heads[0], Node("h2", 2, heads[0].created_at, "s", "assistant",
                                             output=same, metadata={"model": "openai/gpt-4o"})],
                             None, label_for, lambda m: m)
    assert "gpt-4o" not in one_model[0][1]  # the same model on both: not said twice
